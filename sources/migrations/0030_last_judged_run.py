from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def point_at_the_last_judged_run(apps, schema_editor):
    # The latest run by start (and arrival among runs of one start) that was not paused, as ingest
    # keeps it from now on: one UPDATE, a subquery on the run_history index per source.
    database = schema_editor.connection.alias
    Source = apps.get_model("sources", "Source")
    Run = apps.get_model("sources", "Run")
    judged = (
        Run.objects.using(database)
        .filter(source_id=OuterRef("pk"))
        .exclude(verdict="paused")
        .order_by("-started_at", "-id")
        .values("pk")[:1]
    )
    Source.objects.using(database).update(last_judged_run=Subquery(judged))


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0029_token_may_configure"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="last_judged_run",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=models.deletion.SET_NULL,
                related_name="+",
                to="sources.run",
            ),
        ),
        migrations.RunPython(point_at_the_last_judged_run, migrations.RunPython.noop),
    ]

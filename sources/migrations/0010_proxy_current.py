import django.db.models.deletion
from django.db import migrations, models


def fill(apps, schema_editor):
    # The same statement as sources/ingest/proxy_current.py rebuild() (migrations do not import app code).
    least = "LEAST" if schema_editor.connection.vendor == "postgresql" else "MIN"
    schema_editor.execute(f"""
        INSERT INTO sources_proxycurrent (proxy, transition_id, moment)
        SELECT proxy, id, moment FROM (
            SELECT proxy, id, {least}(at, received_at) AS moment,
                   ROW_NUMBER() OVER (PARTITION BY proxy ORDER BY {least}(at, received_at) DESC, id DESC) AS newest
            FROM sources_proxytransition
        ) ranked WHERE newest = 1
    """)


class Migration(migrations.Migration):

    dependencies = [
        ("sources", "0009_proxy_transition_arrival"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProxyCurrent",
            fields=[
                ("proxy", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("moment", models.DateTimeField()),
                ("transition", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE,
                                                    related_name="current", to="sources.proxytransition")),
            ],
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
    ]

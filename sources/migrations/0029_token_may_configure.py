"""Changing a source's settings and planning maintenance windows become a token's own permission,
`may_configure`, off for tokens made from now on. Every token that exists when this runs had both
powers, and the crawlers and scripts holding them may use them: each keeps them, so no automation
breaks on upgrade. An operator takes the power from the tokens that never needed it in the admin."""

from django.db import migrations, models


def grant_to_existing_tokens(apps, schema_editor):
    ApiToken = apps.get_model("sources", "ApiToken")
    # The database being migrated, not always the default one (copy_data migrates its target).
    ApiToken.objects.using(schema_editor.connection.alias).update(may_configure=True)


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0028_source_cadence"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="may_configure",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(grant_to_existing_tokens, migrations.RunPython.noop, elidable=True),
    ]

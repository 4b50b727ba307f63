import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("sources", "0013_source_normal_state"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="owner",
            field=models.CharField(blank=True, help_text="the person answerable for this crawler", max_length=200),
        ),
        migrations.AddField(
            model_name="source",
            name="team",
            field=models.CharField(blank=True, db_index=True, help_text="the team that owns this crawler", max_length=100),
        ),
        migrations.AddField(
            model_name="source",
            name="runbook_url",
            field=models.URLField(
                blank=True, help_text="what to do when it fails (http or https)", max_length=500,
                validators=[django.core.validators.URLValidator(schemes=["http", "https"])],
            ),
        ),
    ]

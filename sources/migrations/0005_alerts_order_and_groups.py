from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0004_field_coverage_and_trend"),
    ]

    operations = [
        migrations.AddField(
            model_name="channel",
            name="next_send_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="notification",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"), ("sending", "Sending"), ("sent", "Sent"), ("retrying", "Retrying"),
                    ("failed", "Failed"), ("superseded", "Superseded"),
                ],
                default="pending",
                max_length=16,
            ),
        ),
    ]

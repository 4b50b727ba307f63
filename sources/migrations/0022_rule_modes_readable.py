"""Rule modes the admin stored as raw JSON that ingest cannot read ({"drop": "loud"}, or no object at
all) made every report of their source answer 500. The admin now takes checked lines; this drops what
an earlier admin let through: such a rule is back at its default mode."""

from django.db import migrations

# As of this migration (completeness.verdicts.types.Mode): written out, so a later rename of a mode
# does not change what this migration did.
MODES = ("enforce", "observe")


def drop_unreadable_rule_modes(apps, schema_editor):
    Source = apps.get_model("sources", "Source")
    for source in Source.objects.only("pk", "rule_modes").iterator(chunk_size=2000):
        stored = source.rule_modes
        readable = {rule: mode for rule, mode in stored.items() if mode in MODES} if isinstance(stored, dict) else {}
        if readable != stored:
            Source.objects.filter(pk=source.pk).update(rule_modes=readable)


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0021_run_completeness_floor"),
    ]

    operations = [
        migrations.RunPython(drop_unreadable_rule_modes, migrations.RunPython.noop, elidable=True),
    ]

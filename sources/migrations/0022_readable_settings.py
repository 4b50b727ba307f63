"""Settings an earlier admin stored as raw JSON that ingest cannot read made every report of their
source answer 500: a rule mode that does not exist ({"drop": "loud"}), a field minimum that is not a
share ({"price": "high"}), or no object at all. The admin now takes checked lines for both (rule
modes since this migration, field minimums since 2026-11-30); this drops what it let through before,
so such a rule is back at its default mode and such a field at its learned floor."""

from django.db import migrations

# As of this migration (completeness.verdicts.types.Mode): written out, so a later rename of a mode
# does not change what this migration did.
MODES = ("enforce", "observe")


def _readable_modes(stored):
    return {rule: mode for rule, mode in stored.items() if mode in MODES} if isinstance(stored, dict) else {}


def _readable_minimums(stored):
    if not isinstance(stored, dict):
        return {}
    return {
        field: share
        for field, share in stored.items()
        if isinstance(share, (int, float)) and not isinstance(share, bool) and 0 <= share <= 1
    }


def drop_unreadable_settings(apps, schema_editor):
    Source = apps.get_model("sources", "Source")
    # The database being migrated, not always the default one (copy_data migrates its target).
    db = schema_editor.connection.alias
    for source in Source.objects.using(db).only("pk", "rule_modes", "field_minimums").iterator(chunk_size=2000):
        readable = {
            "rule_modes": _readable_modes(source.rule_modes),
            "field_minimums": _readable_minimums(source.field_minimums),
        }
        if readable != {"rule_modes": source.rule_modes, "field_minimums": source.field_minimums}:
            Source.objects.using(db).filter(pk=source.pk).update(**readable)


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0021_run_completeness_floor"),
    ]

    operations = [
        migrations.RunPython(drop_unreadable_settings, migrations.RunPython.noop, elidable=True),
    ]

"""Changing a source's rule settings and its overdue clock (staff on its page, the admin, the API)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sources.models import Source

EDITABLE = (
    "min_completeness",
    "drop_threshold",
    "field_drop",
    "field_minimums",
    "trend_days",
    "trend_min_runs",
    "learn_days",
    "learn_min_runs",
    "min_margin",
    "expected_interval",
    "grace",
    # Not rules, but set in the same places (the page's form, the admin, the API's settings PATCH).
    "owner",
    "team",
    "runbook_url",
)


@transaction.atomic
def update_rule_settings(source: Source, **values: Any) -> dict[str, tuple[Any, Any]]:
    """Every setting given, or none: the model's validators run before anything is written.

    Takes effect from the next report, like a mode switch; runs already judged keep their verdicts
    and the floors they were judged against. Returns {setting: (old, new)} of what changed.
    Raises django.core.exceptions.ValidationError (by setting) and writes nothing when a value is bad.
    """
    unknown = set(values) - set(EDITABLE)
    if unknown:
        raise TypeError(f"not a rule setting: {', '.join(sorted(unknown))}")
    # Locked like ingest locks it, so a report is judged under one set of settings, and only these
    # columns are written: the source's state (health, baseline) belongs to ingest.
    source = Source.objects.select_for_update(of=("self",)).get(pk=source.pk)
    changed = {name: (getattr(source, name), value) for name, value in values.items() if getattr(source, name) != value}
    for name, (_, value) in changed.items():
        setattr(source, name, value)
    source.clean_fields(exclude=[f.name for f in Source._meta.fields if f.name not in values])
    if changed:
        source.save(update_fields=list(changed))
    return changed

"""Switching a rule between observe and enforce for one source (a staff action)."""

from __future__ import annotations

from django.db import transaction

from completeness.verdicts import DEFAULT_MODES, Mode
from completeness.verdicts.types import ALWAYS_ENFORCED
from sources.models import Source


class NotSwitchable(ValueError):
    pass


@transaction.atomic
def set_rule_mode(source: Source, rule: str, mode: str) -> Source:
    """Takes effect from the next report; runs already judged keep their verdicts."""
    if rule not in DEFAULT_MODES:
        raise NotSwitchable(f"no rule '{rule}'")
    if rule in ALWAYS_ENFORCED:
        raise NotSwitchable(f"'{rule}' is data loss and always enforced")
    try:
        mode = Mode(mode)
    except ValueError:
        raise NotSwitchable(f"no mode '{mode}'") from None
    # Locked like ingest locks it, so a report is judged under one set of modes.
    source = Source.objects.select_for_update(of=("self",)).get(pk=source.pk)
    modes = dict(source.rule_modes or {})
    modes[rule] = mode.value
    source.rule_modes = modes
    source.save(update_fields=["rule_modes"])
    return source

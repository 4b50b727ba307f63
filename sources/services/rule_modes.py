"""Switching a rule between observe and enforce for one source (a staff action)."""

from __future__ import annotations

from django.db import transaction

from completeness.verdicts import DEFAULT_MODES, Mode
from completeness.verdicts.types import ALWAYS_ENFORCED
from sources.models import Source


class NotSwitchable(ValueError):
    pass


SWITCHABLE = tuple(sorted(rule for rule in DEFAULT_MODES if rule not in ALWAYS_ENFORCED))


def switchable_mode(rule: str, mode: str) -> Mode:
    """The mode `rule` may be set to; NotSwitchable (a ValueError) says why not, naming what may be."""
    if rule not in DEFAULT_MODES:
        raise NotSwitchable(f"no rule '{rule}' (rules: {', '.join(SWITCHABLE)})")
    if rule in ALWAYS_ENFORCED:
        raise NotSwitchable(f"'{rule}' is data loss and always enforced")
    try:
        return Mode(mode)
    except ValueError:
        raise NotSwitchable(f"no mode '{mode}' ({' or '.join(Mode)})") from None


@transaction.atomic
def set_rule_mode(source: Source, rule: str, mode: str) -> Source:
    """Takes effect from the next report; runs already judged keep their verdicts."""
    mode = switchable_mode(rule, mode)
    # Locked like ingest locks it, so a report is judged under one set of modes.
    source = Source.objects.select_for_update(of=("self",)).get(pk=source.pk)
    modes = dict(source.rule_modes or {})
    modes[rule] = mode.value
    source.rule_modes = modes
    source.save(update_fields=["rule_modes"])
    return source

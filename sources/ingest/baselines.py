"""An operator accepting an incomplete run as the source's new baseline (verdicts.md, Baseline)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from completeness.verdicts import Verdict
from sources.ingest.history import ceiling_after_acceptance
from sources.models import BaselineAcceptance, Run, Source


class NotAcceptable(ValueError):
    """The run cannot become a baseline (only an incomplete run that collected something)."""


@transaction.atomic
def accept_as_baseline(run: Run, user: User, note: str = "") -> BaselineAcceptance:
    """Record who accepted `run` and when; move the source's baseline when the run is its newest candidate.

    The source row is locked like ingest locks it, so a report judged at the same time sees either the
    old baseline or the new one, never half of each. Accepting the same run twice returns the first record.
    """
    source = Source.objects.select_for_update(of=("self",)).get(pk=run.source_id)
    run = Run.objects.get(pk=run.pk)
    if run.verdict != Verdict.INCOMPLETE:
        raise NotAcceptable(f"run {run.run_id} is {run.verdict}: only an incomplete run needs accepting")
    if run.collected == 0:
        # One click on a stub page's run would have made nothing the normal: every later run complete.
        raise NotAcceptable(
            f"run {run.run_id} collected nothing: it cannot be the new normal (pause the source if the site is gone)"
        )
    if run.accepted_as_baseline:
        existing = run.acceptances.order_by("accepted_at").first()
        if existing is not None:
            return existing
    now = timezone.now()
    acceptance = BaselineAcceptance.objects.create(
        source=source,
        run=run,
        accepted_by=user,
        accepted_by_name=user.get_username(),
        accepted_at=now,
        previous_baseline=source.baseline_collected,
        note=note,
    )
    run.accepted_as_baseline = True
    run.save(update_fields=["accepted_as_baseline"])
    source.trend_ceiling = ceiling_after_acceptance(source, run)
    # The learning set starts afresh at an accepted run: the next report refits the normal.
    source.normal_state = None
    changed = ["trend_ceiling", "normal_state"]
    # An older run accepted late is recorded (and becomes the baseline of reports older than the
    # current one, see history.baseline_for) but does not replace a newer baseline.
    if source.at_or_after_baseline(run.started_at):
        source.baseline_run = run
        source.baseline_collected = run.collected
        source.baseline_started_at = run.started_at
        source.baseline_field_counts = run.field_counts
        changed += ["baseline_run", "baseline_collected", "baseline_started_at", "baseline_field_counts"]
    source.save(update_fields=changed)
    return acceptance

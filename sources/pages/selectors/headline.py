"""The source page's headline: what is wrong now, since when, what it cost in records and what to do.

Before it, an engineer woken at night opened a source page and found "failing SILENT, failing since
..."; the finding's sentence was a tooltip in the runs table. The headline says it in the first screen.
Two small queries: the flip that opened the episode (flip_history) and one aggregate over the
episode's runs (run_history); the source row and its last run are already loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Exists, OuterRef, Sum

from completeness.alerts.policy import is_history
from completeness.alerts.why import why_of
from completeness.verdicts import Verdict
from sources import clock
from sources.alerts.history import history_after
from sources.episodes import failing_run, failure_started, ok_since
from sources.models import Health, Run, Source
from sources.queries import HAS_TARGET, expected_records, records_short


@dataclass(frozen=True)
class Headline:
    state: str
    problem: str  # one sentence with numbers, "" when there is nothing wrong to say
    since: datetime | None  # when the present state began (the first run of the episode for a failure)
    lasting: timedelta | None
    records_short: int | None  # records short against expected (or declared) over the episode
    records_expected: int | None  # what those runs were expected to bring, summed
    short_runs: int  # incomplete runs of the episode that had a number to be short of
    episode_runs: int  # incomplete runs of the episode
    overwritten: bool  # the latest run replaced the published snapshot with a partial one
    overwritten_rows: int | None
    overwritten_baseline: int | None
    run_id: int | None  # the run to open
    can_accept: bool  # the latest run is incomplete and collected something: it may be the new baseline
    due_at: datetime | None = None  # overdue: when the missing report was due (interval and grace after the last)
    noticed_as: str = "reported"  # how the change of health the alerts give came: a report, or a resume
    # The change of health came with history (a report long after its run), which no alert sent as news.
    from_history: bool = False
    # The run it speaks of (its silence is said beside it): the latest, or a failing source's latest judged one.
    run: Run | None = None
    # Paused: its latest judged run, where that one is incomplete (a resume makes the source failing for
    # it again, until a complete run), and that run's worst finding.
    failing_before: Run | None = None
    failing_before_why: str = ""
    # OK: the partial run that replaced the published snapshot just before this good spell, within
    # RECOVERED_LOSS_SHOWN. "Nothing wrong" alone hid that consumers read a partial snapshot hours ago.
    recovered_loss: Run | None = None


RECOVERED_LOSS_SHOWN = timedelta(days=7)


def shortfall(source: Source, since: datetime) -> dict[str, Any]:
    """Incomplete runs of the source started at or after `since`, and how many records they were short
    of what was expected of each (records_short()). A run with no expectation, declared total or
    complete snapshot before it is counted but adds nothing (there is no number to be short of)."""
    return Run.objects.filter(source=source, started_at__gte=since, verdict=Verdict.INCOMPLETE).aggregate(
        runs=Count("id"),
        short_runs=Count("id", filter=HAS_TARGET),
        short=Sum(records_short()),
        expected=Sum(expected_records()),
    )


def source_headline(source: Source, state: str, now: datetime) -> Headline:
    run = source.last_run
    empty: dict[str, Any] = dict(
        records_short=None,
        records_expected=None,
        short_runs=0,
        episode_runs=0,
        overwritten=False,
        overwritten_rows=None,
        overwritten_baseline=None,
        can_accept=False,
    )
    if state == Health.FAILING.value and run is not None:
        run = failing_run(source) or run
        enforced = [f for f in run.findings or [] if f.get("mode") == "enforce"]
        overwrite = next((f for f in enforced if f.get("rule") == "snapshot_overwritten"), None)
        # The overwrite gets its own sentence; the problem is what made the run incomplete.
        others = [f for f in enforced if f.get("rule") != "snapshot_overwritten"] or enforced
        problem = why_of(others)["why"]
        start, resumed = failure_started(source)
        since = start or source.health_since
        cost = shortfall(source, min(since, run.started_at))
        return Headline(
            state=state,
            problem=problem,
            since=since,
            lasting=max(now - since, timedelta(0)),
            records_short=cost["short"] if cost["short_runs"] else None,
            records_expected=cost["expected"] if cost["short_runs"] else None,
            short_runs=cost["short_runs"],
            episode_runs=cost["runs"],
            overwritten=overwrite is not None,
            overwritten_rows=overwrite.get("actual") if overwrite else None,
            overwritten_baseline=overwrite.get("expected") if overwrite else None,
            run_id=run.id,
            can_accept=run.acceptable_as_baseline,
            noticed_as="resumed" if resumed else "reported",
            run=run,
        )
    if state == Health.OVERDUE.value:
        since = source.last_report_at or source.created_at
        due = clock.deadline_missed_exactly(source)
        return Headline(
            state=state,
            problem="",
            since=since,
            lasting=max(now - since, timedelta(0)),
            run_id=run.id if run else None,
            due_at=due,
            run=run,
            **empty,
        )
    since = source.health_since
    from_history = False
    if state == Health.PAUSED.value and source.last_judged_run_id is not None:
        judged = Run.objects.filter(pk=source.last_judged_run_id).only("started_at", "verdict", "findings").first()
        if judged is not None and judged.verdict == Verdict.INCOMPLETE:
            empty.update(failing_before=judged, failing_before_why=why_of(judged.findings)["why"])
    if state == Health.OK.value:
        since, finished = ok_since(source)
        from_history = finished is not None and is_history(finished, source.health_since, history_after())
        empty["recovered_loss"] = recovered_loss(source, since, now)
    return Headline(
        state=state,
        problem="",
        since=since,
        lasting=max(now - since, timedelta(0)),
        run_id=run.id if run else None,
        from_history=from_history,
        run=run,
        **empty,
    )


def recovered_loss(source: Source, good_since: datetime, now: datetime) -> Run | None:
    """The latest run before the source's good spell that replaced its published snapshot while
    incomplete (snapshot_overwritten) and was not accepted as the new baseline, if it started within
    RECOVERED_LOSS_SHOWN and no complete run came between: one that did replaced the partial snapshot
    before this spell, which the page would date wrongly (a loss, a recovery, a failure that kept the
    snapshot, and this spell)."""
    recovered_earlier = Run.objects.filter(
        source=source, verdict=Verdict.COMPLETE, started_at__gt=OuterRef("started_at"), started_at__lt=good_since
    )
    return (
        Run.objects.filter(
            source=source,
            verdict=Verdict.INCOMPLETE,
            # One accepted as the new baseline held what the site had (it shrank): no loss to recover from.
            accepted_as_baseline=False,
            snapshot_action="replaced",
            started_at__lt=good_since,
            started_at__gte=now - RECOVERED_LOSS_SHOWN,
        )
        .exclude(Exists(recovered_earlier))
        .order_by("-started_at")
        .only("run_id", "started_at", "collected", "snapshot_rows")
        .first()
    )

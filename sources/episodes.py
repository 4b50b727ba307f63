"""The present failure's runs, for the services, the alerts and the pages alike: the latest run that
was judged, and when the first bad run of a failure started (the time the pages give a failure, where
its alerts give the time its report arrived)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db.models import OuterRef, QuerySet, Subquery

from completeness.verdicts import Verdict
from sources.models import Flip, Health, Run, Source


def last_judged_run(source: Source) -> Run | None:
    """The source's latest run that was judged (runs made while paused skipped), as its ingest kept it
    (Source.last_judged_run): latest by start, the order its health follows, so a judged report that
    arrives late, after a paused run, is not taken for the source's present. Where that run is gone
    (deleted by hand), the latest judged run still stored."""
    if source.last_judged_run_id is not None:
        return source.last_judged_run
    return Run.objects.filter(source=source).exclude(verdict=Verdict.PAUSED).order_by("-started_at", "-pk").first()


def failing_run(source: Source) -> Run | None:
    """The run that says why a failing source fails: its latest run, unless that one was made while
    it was paused. A resume settles the source on its latest judged run (services.health), and the
    paused run after it has no findings: an alert citing it said "failing" with nothing to fix and
    lost its data-loss severity, and the page's headline read "The latest run is incomplete." above a
    run that was not."""
    run = source.last_run
    if run is None or run.verdict != Verdict.PAUSED:
        return run
    return last_judged_run(source) or run


def failure_started(source: Source) -> tuple[datetime | None, bool]:
    """When the first run of the source's present failure started: the run that flipped it to failing,
    or for a resume into failing the latest judged run; and whether the flip was a resume. None when
    there is no such run (then the pages use health_since)."""
    flip = (
        _flip_into_present_failure(source.pk, source.health_since).select_related("run").only("run__started_at").first()
    )
    if flip is None:
        return None, False
    if flip.run is not None:
        return flip.run.started_at, False
    # A flip into failing that names no run is a resume (docs/alerts.md, "A resume leaves the source as
    # its runs say"): the failure is that of the latest judged run, the one the resume read the health
    # from (services.health.last_judged_verdict), and it began when that run started, not when the pause was lifted.
    judged = last_judged_run(source)
    return (judged.started_at if judged is not None and judged.verdict == Verdict.INCOMPLETE else None), True


def ok_since(source: Source) -> tuple[datetime, datetime | None]:
    """When the source's present good spell began, as every page dates it: its first good run's start
    (ok_started), else health_since, and never later than health_since (a run dated ahead of its
    arrival, a clock running fast, does not make the spell start later). And when that run finished."""
    started, finished = ok_started(source)
    return min(started or source.health_since, source.health_since), finished


def ok_started(source: Source) -> tuple[datetime | None, datetime | None]:
    """When the first run of the source's present good spell started: the run that flipped it to ok,
    or its first run where it never changed health. None when a person's resume made it ok (then the
    pages use health_since, the resume's time). And when the run that flipped it finished (None where
    no run did): the page tells a change made by history from one the alerts sent."""
    # A backfill of past runs dates each flip when its report arrived: a source whose last incident
    # ended weeks ago read "OK for 46 s" while its failing headline counts from the runs. One query
    # whatever the source's past, so the page reads as many with one run as with a year of them.
    latest = _flips_up_to_present_health(source.pk, source.health_since)
    found = (
        Source.objects.filter(pk=source.pk)
        .annotate(
            flip_health=Subquery(latest.values("new_health")[:1]),
            # Null where the flip names no run (a resume): every run has a start.
            flip_run_started=Subquery(latest.values("run__started_at")[:1]),
            flip_run_finished=Subquery(latest.values("run__finished_at")[:1]),
            first_run_started=Subquery(
                Run.objects.filter(source=OuterRef("pk")).order_by("started_at").values("started_at")[:1]
            ),
        )
        .values("flip_health", "flip_run_started", "flip_run_finished", "first_run_started")
        .first()
    )
    if found is None or (found["flip_health"] is not None and found["flip_health"] != Health.OK):
        return None, None
    if found["flip_health"] is None:
        return found["first_run_started"], None
    return found["flip_run_started"], found["flip_run_finished"]


def failures_started(sources: Sequence[Source]) -> dict[int, datetime]:
    """failure_started's time for each failing source among these, in one query where the failure
    came with a run (a resume into failing, rare, asks for its own)."""
    failing = [source for source in sources if source.health == Health.FAILING]
    if not failing:
        return {}
    first_runs = Source.objects.filter(pk__in=[source.pk for source in failing]).annotate(
        started=Subquery(
            _flip_into_present_failure(OuterRef("pk"), OuterRef("health_since")).values("run__started_at")[:1]
        )
    )
    started = {pk: when for pk, when in first_runs.values_list("pk", "started") if when is not None}
    for source in failing:
        if source.pk not in started:
            when, _ = failure_started(source)
            if when is not None:
                started[source.pk] = when
    return started


def _flip_into_present_failure(source: int | OuterRef, health_since: datetime | OuterRef) -> QuerySet[Flip]:
    """The flips into failing up to the source's present health, the latest first."""
    return _flips_up_to_present_health(source, health_since).filter(new_health=Health.FAILING)


def _flips_up_to_present_health(source: int | OuterRef, health_since: datetime | OuterRef) -> QuerySet[Flip]:
    """The source's flips up to the one that set its present health (at health_since), the latest first."""
    return Flip.objects.filter(source=source, at__lte=health_since + timedelta(seconds=1)).order_by("-at", "-id")

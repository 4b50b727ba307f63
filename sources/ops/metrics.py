"""The Prometheus metrics: counters this process keeps, and gauges read from the database at scrape time.

Two kinds, because they answer to several processes differently:

- What happens in a request (a report stored, how long ingest took) is counted where it happens. Under
  gunicorn each worker counts its own, so these use prometheus-client's multiprocess mode whenever
  PROMETHEUS_MULTIPROC_DIR is set (gunicorn.conf.py sets it): each worker writes its values to a file
  there and a scrape, whichever worker answers it, sums them all.
- What is stored (sources by health, the outbox, flips, which also come from the clock job in another
  process) is read from the database by `StoredState` at scrape time, in five small queries however
  many sources there are, so every worker reports the same numbers.
"""

from __future__ import annotations

import logging
import os

from django.db import DatabaseError
from django.db.models import Count, Min, Q
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from sources import clock
from sources.alerts import watch
from sources.models import Flip, Health, Notification, Run, Source
from sources.services.overdue import WATCHED

log = logging.getLogger(__name__)

REPORTS = Counter(
    "completeness_reports",
    "Reports stored, by verdict and whether an incomplete one was silent (the crawler said ok)",
    ["verdict", "silent"],
)
INGEST_SECONDS = Histogram(
    "completeness_ingest_seconds",
    "Time to parse, judge and store a posted report (after the token check), refused ones included",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)

UNDELIVERED = [Notification.Status.PENDING, Notification.Status.RETRYING, Notification.Status.SENDING]


def report_stored(run: Run) -> None:
    REPORTS.labels(verdict=run.verdict, silent=str(run.silent).lower()).inc()


class StoredState:
    """A collector over the database: sources, flips and the outbox, as they are at scrape time."""

    def collect(self):
        now = timezone.now()
        up = GaugeMetricFamily("completeness_stored_state_up", "1 when the database answered this scrape's queries")
        try:
            families = [*self._sources(now), self._flips(), *self._notifications(now), *self._alert_path(now)]
        except DatabaseError as exc:
            # A scrape still answers with the process's own counters while the database is away. One
            # line, no traceback: a scrape every 15 s of an outage filled the log with the same one.
            log.warning("metrics: the database did not answer (%s: %s)", type(exc).__name__, str(exc).strip()[:200])
            up.add_metric([], 0)
            yield up
            return
        except Exception:
            # Anything else is a bug in these queries: its traceback is the point.
            log.exception("metrics: the stored state could not be read")
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _sources(self, now):
        late = Q(paused=False, expected_interval__isnull=False, health__in=WATCHED, deadline__lt=now)
        # As the overview names them.
        quiet = clock.quiet_without_clock(now)
        rows = (
            Source.objects.order_by()
            .annotate(deadline=clock.deadline_expression())
            .values("health")
            .annotate(n=Count("id"), late=Count("id", filter=late), quiet=Count("id", filter=quiet))
        )
        by_health = {health: 0 for health in Health.values}
        unmarked = silent = 0
        for row in rows:
            by_health[row["health"]] = row["n"]
            unmarked += row["late"]
            silent += row["quiet"]
        sources = GaugeMetricFamily("completeness_sources", "Sources by health", labels=["health"])
        for health, n in by_health.items():
            sources.add_metric([health], n)
        overdue = GaugeMetricFamily(
            "completeness_sources_overdue",
            "Sources past their reporting deadline: marked overdue, or due to be marked by the next clock job",
        )
        overdue.add_metric([], by_health[Health.OVERDUE] + unmarked)
        waiting = GaugeMetricFamily(
            "completeness_sources_overdue_unmarked",
            "Sources past their deadline that the clock job has not marked yet (stays above 0: the job is not running)",
        )
        waiting.add_metric([], unmarked)
        stopped = GaugeMetricFamily(
            "completeness_sources_quiet_without_clock",
            "Sources with no expected interval that have not reported for three of their usual gaps"
            " (nothing alerts on them; set an expected interval, or alert on this)",
        )
        stopped.add_metric([], silent)
        return [sources, overdue, waiting, stopped]

    def _flips(self):
        # Flips are never pruned, so their count only grows: a counter Prometheus can take a rate of.
        counts = dict(Flip.objects.order_by().values_list("new_health").annotate(n=Count("id")))
        flips = CounterMetricFamily(
            "completeness_flips", "Changes of a source's health, by the new health", labels=["to"]
        )
        for health in Health.values:
            flips.add_metric([health], counts.get(health, 0))
        return flips

    def _notifications(self, now):
        statuses = [*UNDELIVERED, Notification.Status.FAILED]
        row = Notification.objects.filter(status__in=statuses).aggregate(
            oldest=Min("created_at", filter=Q(status__in=UNDELIVERED)),
            **{status: Count("id", filter=Q(status=status)) for status in statuses},
        )
        counts = GaugeMetricFamily(
            "completeness_notifications",
            "Notifications not sent: waiting, retrying, being sent, or given up (failed)",
            labels=["status"],
        )
        for status in statuses:
            counts.add_metric([status], row[status])
        oldest = GaugeMetricFamily(
            "completeness_notification_oldest_undelivered_age_seconds",
            "Age of the oldest notification still waiting to be delivered (0: none waiting)",
        )
        oldest.add_metric([], (now - row["oldest"]).total_seconds() if row["oldest"] else 0)
        return [counts, oldest]

    def _alert_path(self, now):
        since = GaugeMetricFamily(
            "completeness_job_seconds_since_last_run",
            "Seconds since each periodic job last started (absent: never ran); growing past its interval: the"
            " task cluster or beat is not running it",
            labels=["job"],
        )
        for job in watch.jobs(now):
            if job.seconds_since is not None:
                since.add_metric([job.name], job.seconds_since)
        broken = GaugeMetricFamily(
            "completeness_channels_broken",
            "Alert channels marked broken (refused for good, failing for ALERTS_BROKEN_AFTER_SECONDS, or alerts given up) that have not delivered since",
        )
        broken.add_metric([], watch.broken_channels().count())
        return [since, broken]


def exposition() -> bytes:
    """The text a scrape gets: this process's counters (or all workers' in multiprocess mode) and the stored state."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    # generate_latest asks only for collect(): the two need no registry of their own.
    return generate_latest(_Both(registry, StoredState()))


class _Both:
    def __init__(self, *collectors):
        self.collectors = collectors

    def collect(self):
        for collector in self.collectors:
            yield from collector.collect()

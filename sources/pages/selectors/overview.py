"""Read-side queries of the overview and the run page (the source page's are in
sources/pages/selectors/source.py, the proxies page's in sources/pages/selectors/proxies.py). Views stay
thin; every query a page makes is in one of them.

The overview's query count must not grow with sources or runs: everything it shows is either on the
source row, on its last run (read by primary key for the page's rows) or an aggregate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    Count,
    DateTimeField,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Concat
from django.utils import timezone

from completeness.alerts import severity as alerting_severity
from completeness.alerts.why import why_of
from completeness.verdicts import Verdict
from completeness.verdicts.expectation import MIN_SPAN
from completeness.verdicts.rules import net_declared
from sources import clock
from sources.alerts.acks import Acknowledged, acknowledged_as_shown
from sources.models import Acknowledgement, Channel, Health, Run, Source
from sources.pages.formatting import change_against_baseline
from sources.queries import Capped, capped_query

# Sorted by severity, so the first page holds every problem of a normal fleet; rendering a row costs
# ~0.5 ms of template time, and 100 rows were half of the page's time at 2,000 sources.
OVERVIEW_PAGE_SIZE = 50


class Severity:
    """Overview order, most urgent first: data already lost, then lost without anyone knowing."""

    OVERWRITTEN = 0
    SILENT = 1
    FAILING = 2
    OVERDUE = 3
    PAUSED = 4
    OK = 5

    LABELS = {
        OVERWRITTEN: "partial run overwrote the snapshot",
        SILENT: "degraded silently",
        FAILING: "failing",
        OVERDUE: "overdue",
        PAUSED: "paused",
        OK: "ok",
    }


class SourceState(TypedDict):
    severity: int
    state: str


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    # Sources as annotated_sources returns them: the plugin then knows the two names a filter may use.
    AnnotatedSources = QuerySet[WithAnnotations[Source, SourceState]]


def annotated_sources(now: datetime | None = None) -> AnnotatedSources:
    """Sources with `severity` and `state` (the health the page shows, overdue included)."""
    now = now or timezone.now()
    failing = Q(health=Health.FAILING)
    overdue = Q(health=Health.OVERDUE) | (Q(expected_interval__isnull=False) & clock.deadline_passed(now))
    paused = Q(paused=True) | Q(health=Health.PAUSED)
    # The run a failing source fails for is read only for failing sources, inside their branch: a join
    # would read every source's last run (20,000 random reads of the runs table at 20,000 sources) to
    # sort a page. Its last judged run, not its last run: resumed into failing after a crawl while
    # paused, its last run is the paused one, which lost nothing.
    failing_severity = Run.objects.filter(pk=OuterRef("last_judged_run_id")).values(
        severity=Case(
            When(verdict=Verdict.INCOMPLETE, snapshot_action="replaced", then=Value(Severity.OVERWRITTEN)),
            When(silent=True, then=Value(Severity.SILENT)),
            default=Value(Severity.FAILING),
        )
    )
    return Source.objects.annotate(
        severity=Case(
            When(paused, then=Value(Severity.PAUSED)),
            # A failing source whose last run is gone (deleted by hand) is plainly failing.
            When(failing, then=Coalesce(Subquery(failing_severity), Value(Severity.FAILING))),
            When(overdue, then=Value(Severity.OVERDUE)),
            default=Value(Severity.OK),
            output_field=IntegerField(),
        ),
        state=Case(
            When(paused, then=Value(Health.PAUSED.value)),
            When(failing, then=Value(Health.FAILING.value)),
            When(overdue, then=Value(Health.OVERDUE.value)),
            default=Value(Health.OK.value),
        ),
    )


@dataclass(frozen=True)
class OverviewFilters:
    health: str = ""
    region: str = ""
    tag: str = ""
    owner: str = ""
    team: str = ""
    silent_only: bool = False
    q: str = ""


@dataclass
class Headline:
    silent_24h: int
    silent_7d: int
    failing: int
    overdue: int
    paused: int
    ok: int
    total: int


# The filters about the source itself: who owns it, where it is, its tag.
SCOPE_FILTERS = ("region", "tag", "owner", "team")


def source_scope(filters: OverviewFilters, prefix: str = "") -> Q:
    """The overview's SCOPE_FILTERS as a filter on sources (health, silent and search describe a
    source's present: they narrow the rows, not the counts)."""
    q = Q()
    for name in SCOPE_FILTERS:
        value = getattr(filters, name)
        if value:
            q &= Q(**{f"{prefix}{'tags__name' if name == 'tag' else name}": value})
    return q


def headline(now: datetime | None = None, filters: OverviewFilters | None = None) -> Headline:
    """Two queries whatever the size: one aggregate over sources, one over recent silent runs; over the
    sources in the filters' scope (a team reads its own counts)."""
    now = now or timezone.now()
    filters = filters or OverviewFilters()
    # GROUP BY state evaluates the health expression once per source (five FILTERed counts would
    # evaluate it five times: 100 ms on SQLite for 2,000 sources).
    by_state = dict(
        annotated_sources(now)
        .filter(source_scope(filters))
        .order_by()
        .values_list("state")
        .annotate(n=Count("pk"))
        .values_list("state", "n")
    )
    counts = {state: by_state.get(state, 0) for state in (Health.FAILING, Health.OVERDUE, Health.PAUSED, Health.OK)}
    # Counted by when the runs ran: a September run reported today is no silence of the last 24 hours.
    # A run of the last week arrived in the last week too, so the index run_silent_recent (silent,
    # -received_at) still keeps this to the last week's silent runs.
    week_ago = now - timedelta(days=7)
    silent = Run.objects.filter(
        source_scope(filters, "source__"),
        silent=True,
        received_at__gte=week_ago,
        started_at__gte=week_ago,
    ).aggregate(
        week=Count("source", distinct=True),
        day=Count("source", distinct=True, filter=Q(started_at__gte=now - timedelta(hours=24))),
    )
    return Headline(
        silent_24h=silent["day"],
        silent_7d=silent["week"],
        failing=counts[Health.FAILING],
        overdue=counts[Health.OVERDUE],
        paused=counts[Health.PAUSED],
        ok=counts[Health.OK],
        total=sum(by_state.values()),
    )


OVERVIEW_FIELDS = (
    "id",
    "slug",
    "name",
    "region",
    "owner",
    "team",
    "health_since",
    "last_report_at",
    "last_run_started_at",
    "severity",
    "state",
    "last_run_id",
    "last_judged_run_id",
    "paused_reason",
)
# Read for the page's rows only, by primary key: joined into the sorted query, every source's last
# run would be read to show fifty.
LAST_RUN_FIELDS = (
    "verdict",
    "silent",
    "collected",
    "declared_total",
    "removed",
    "completeness",
    "baseline_collected",
    "expected",
    "findings",
)


# A run's report arriving this long after the run started is late: longer than any run takes.
LATE_REPORT = timedelta(days=1)


@dataclass
class OverviewRow:
    """One overview line, flattened: the template only reads attributes (rendering is the page's cost)."""

    id: int
    slug: str
    name: str
    region: str
    owner: str
    team: str
    state: str
    severity: int
    last_report_at: datetime | None
    last_run_started_at: datetime | None
    run_id: int | None
    verdict: str | None
    silent: bool
    collected: int | None
    declared_total: int | None
    completeness: float | None
    baseline_collected: int | None
    why: str
    why_rules: list[str]
    tags: list[str]
    # Who said "I have it" about the present problem, and when (None: nobody, or no problem).
    acknowledgement: Acknowledged | None = None
    # Why it is paused, in the words of whoever paused it (a crawler's CRAWL_PAUSED, an operator's
    # migration): a paused row's why was empty, and the reason was a click away.
    pause_reason: str = ""

    # The dimension the worst enforced finding judged, when it is not the run's completeness or its
    # change against the baseline: see failed_measure().
    coverage_field: str = ""
    coverage: float | None = None
    reference_change: float | None = None
    reference: str = ""

    @property
    def reported_late(self) -> bool:
        """Whether its last report arrived well after its run: then the page says when the run ran too,
        or a September run posted today would read 'just now'."""
        if self.last_report_at is None or self.last_run_started_at is None:
            return False
        return self.last_report_at - self.last_run_started_at > LATE_REPORT

    @property
    def display_name(self) -> str:
        return self.name or self.slug

    @property
    def change(self) -> float | None:
        return change_against_baseline(self.collected, self.baseline_collected, self.verdict)


# Count rules: their finding's expected and actual are records, and what the change is measured against.
REFERENCES = {
    "drop": "vs baseline",
    "below_expected": "vs expected",
    "trend": "vs best of window",
    "declared_total": "vs declared",
    # Its expected is the whole declared total: the removed records are the loss.
    "mass_removal": "vs declared",
}
FIELD_SEEN = (" filled in ", " missing from ")
# How a drop against the source's normal words itself (completeness/verdicts/rules.py, drop).
DROP_FROM_EXPECTED = " below expected ("


def failed_measure(findings: list[dict[str, Any]] | None) -> dict[str, Any]:
    """What the overview's completeness and change columns show for the worst enforced finding, so that
    a failing row does not read "100.0%" and a green change beside its why: a field finding's coverage
    and the field's name; a count finding's change against its own reference (the expectation, the
    trend's best, the declared total). Nothing for other rules: the run's numbers stand."""
    enforced = [f for f in findings or [] if f.get("mode") == "enforce" and f.get("rule") != "snapshot_overwritten"]
    if not enforced:
        return {}
    worst = enforced[0]
    expected, actual = worst.get("expected"), worst.get("actual")
    if not isinstance(expected, int | float) or not isinstance(actual, int | float):
        return {}
    if worst.get("rule") == "field_coverage":
        # The message opens with the field's name (completeness/verdicts/rules.py, field_coverage).
        message = str(worst.get("message") or "")
        cut = min((message.find(seen) for seen in FIELD_SEEN if seen in message), default=-1)
        return {"coverage_field": message[:cut] if cut > 0 else "a field", "coverage": float(actual)}
    reference = REFERENCES.get(str(worst.get("rule")))
    if worst.get("rule") == "drop" and DROP_FROM_EXPECTED in str(worst.get("message") or ""):
        # Once the source has its normal, drop measures from the expectation, not the snapshot.
        reference = REFERENCES["below_expected"]
    if reference and expected > 0:
        return {"reference_change": (actual - expected) / expected, "reference": reference}
    return {}


def normal_measure(run: dict[str, Any]) -> dict[str, Any]:
    """A run that failed no count rule, against what judged its count: its declared total less the
    records removed where it announced one (the source page's runs table does the same), else its
    own normal where it had one: an ordinary Saturday of a weekday feed read -44.8% in red against
    Friday's snapshot, and +1.2% against its expectation."""
    if run.get("declared_total") is not None:
        declared = net_declared(run["declared_total"], run.get("removed") or 0)
        change = change_against_baseline(run.get("collected"), declared, run.get("verdict"))
        return {} if change is None else {"reference_change": change, "reference": REFERENCES["declared_total"]}
    change = change_against_baseline(run.get("collected"), run.get("expected"), run.get("verdict"))
    return {} if change is None else {"reference_change": change, "reference": REFERENCES["below_expected"]}


def overview_rows(filters: OverviewFilters, now: datetime | None = None) -> QuerySet[Source, dict[str, Any]]:
    # values(): no model instances for a page of up to OVERVIEW_PAGE_SIZE sources and their last runs.
    sources = (
        annotated_sources(now)
        .annotate(
            # Problems: the longest-standing first. Paused and ok: the latest change of health first, so a
            # source just resumed or recovered stays at the top of its group instead of dropping to the
            # end of page 2.
            # From the state, not the severity: the same order, without the failing branch's subquery
            # evaluated a second time for every failing source.
            settled_at=Case(
                When(state__in=(Health.PAUSED, Health.OK), then=F("health_since")), output_field=DateTimeField()
            ),
        )
        .order_by("severity", F("settled_at").desc(nulls_last=True), "health_since", "slug")
    )
    if filters.health:
        sources = sources.filter(state=filters.health)
    if filters.region:
        sources = sources.filter(region=filters.region)
    if filters.tag:
        sources = sources.filter(tags__name=filters.tag)
    if filters.owner:
        sources = sources.filter(owner=filters.owner)
    if filters.team:
        sources = sources.filter(team=filters.team)
    if filters.silent_only:
        # The run the row shows (_shown_run_id): a source resumed into failing is silent for the run it
        # fails for, not for the paused run after it.
        judged = Q(state=Health.FAILING, last_judged_run__isnull=False)
        sources = sources.filter((judged & Q(last_judged_run__silent=True)) | (~judged & Q(last_run__silent=True)))
    if filters.q:
        sources = sources.filter(Q(slug__icontains=filters.q) | Q(name__icontains=filters.q))
    rows: QuerySet[Source, dict[str, Any]] = sources.values(*OVERVIEW_FIELDS)
    return rows


def overview_page(filters: OverviewFilters, page: str | int | None, now: datetime | None = None) -> Page[OverviewRow]:
    # get_page turns a bad or out-of-range page number into the first or last page, never an error.
    # Its rows are read as dicts and handed out as OverviewRows.
    # The sources are sorted by their ids alone and the page's rows read by id: sorting every source's
    # whole row to skip to a deep page cost a third of the page.
    ordered = overview_rows(filters, now)
    result: Page[Any] = Paginator(ordered.values("id"), OVERVIEW_PAGE_SIZE).get_page(page)
    values = list(ordered.filter(id__in=result.object_list))
    tags: dict[int, list[str]] = {}
    if values:
        through = Source.tags.through.objects.filter(source_id__in=[v["id"] for v in values])
        for source_id, name in through.order_by("tag__name").values_list("source_id", "tag__name"):
            tags.setdefault(source_id, []).append(name)
    acknowledgements = _present_acknowledgements(values)
    runs = _last_runs(values)
    no_run = dict.fromkeys(LAST_RUN_FIELDS)
    result.object_list = []
    for v in values:
        run = runs.get(_shown_run_id(v), no_run)
        result.object_list.append(
            OverviewRow(
                id=v["id"],
                slug=v["slug"],
                name=v["name"],
                region=v["region"],
                owner=v["owner"],
                team=v["team"],
                state=v["state"],
                severity=v["severity"],
                last_report_at=v["last_report_at"],
                last_run_started_at=v["last_run_started_at"],
                run_id=_shown_run_id(v),
                verdict=run["verdict"],
                silent=bool(run["silent"]),
                collected=run["collected"],
                declared_total=run["declared_total"],
                completeness=run["completeness"],
                baseline_collected=run["baseline_collected"],
                **why_of(run["findings"]),
                # A field finding shows the field's coverage; its change is still against the normal. A
                # count finding's change (against its own reference) replaces the normal's: both named
                # reference_change, and the keyword given twice answered 500 for the whole overview.
                **{**normal_measure(run), **failed_measure(run["findings"])},
                tags=tags.get(v["id"], []),
                acknowledgement=acknowledgements.get(v["id"]),
                pause_reason=v["paused_reason"] if v["state"] == Health.PAUSED else "",
            )
        )
    return result


def _shown_run_id(row: dict[str, Any]) -> Any:
    """The run a row speaks of (its id, or None): a failing source's last judged run, what it fails
    for; else its last."""
    if row["state"] == Health.FAILING and row["last_judged_run_id"] is not None:
        return row["last_judged_run_id"]
    return row["last_run_id"]


def _last_runs(values: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    # One query for any non-empty page, so the page's query count does not depend on what it lists.
    if not values:
        return {}
    ids = [_shown_run_id(v) for v in values]
    return {run["id"]: run for run in Run.objects.filter(pk__in=ids).values("id", *LAST_RUN_FIELDS)}


def _present_acknowledgements(values: list[dict[str, Any]]) -> dict[int, Acknowledged]:
    """How each listed problem source's present problem is acknowledged (acks.acknowledged_as_shown),
    in one query (made for any non-empty page, so the page's query count does not depend on what it
    lists)."""
    if not values:
        return {}
    since = {v["id"]: v["health_since"] for v in values if v["state"] in (Health.FAILING, Health.OVERDUE)}
    # Only the present problems' acknowledgements (the index ack_by_episode): every one the listed
    # sources were ever given was read, years of them for a source that fails weekly. The first term
    # matches nothing (the column is never null), so the query is made whatever the page lists.
    wanted = Q(health_since__isnull=True)
    for source_id, began in since.items():
        wanted |= Q(source_id=source_id, health_since=began)
    present: dict[int, list[Acknowledgement]] = {}
    for ack in Acknowledgement.objects.filter(wanted).order_by("at", "id"):
        present.setdefault(ack.source_id, []).append(ack)
    return {source_id: shown for source_id, found in present.items() if (shown := acknowledged_as_shown(found))}


UNWARNED_NAMED = 10


def unwarned_problems(limit: int = UNWARNED_NAMED) -> Capped:
    """Failing or overdue sources, not paused, that no alerting channel covers and hears (heartbeats
    are called after complete runs only, so they tell nobody of a failure; a pager that hears data
    loss only is not told of a failure that lost none, nor of an overdue): their trouble reaches
    nobody. One query, and a count only when more than `limit` are named."""
    # Imported here: the alerts package imports the models this module's callers load first.
    from sources.alerts.outbox import ALERT_KINDS

    alerting = Channel.objects.filter(kind__in=ALERT_KINDS)
    # As the overview ranks it (source_state): the latest run is incomplete and replaced the snapshot.
    data_loss = Q(
        Exists(Run.objects.filter(pk=OuterRef("last_run_id"), verdict=Verdict.INCOMPLETE, snapshot_action="replaced"))
    )
    problems = [
        (Q(health=Health.FAILING) & data_loss, alerting),
        (
            Q(health=Health.FAILING) & ~data_loss,
            alerting.filter(min_severity__in=alerting_severity.heard_by(alerting_severity.Severity.FAILING)),
        ),
        (
            Q(health=Health.OVERDUE),
            alerting.filter(min_severity__in=alerting_severity.heard_by(alerting_severity.Severity.OVERDUE)),
        ),
    ]
    unheard = Q()
    for problem, hearing in problems:
        unheard |= problem & ~_covered_by(hearing)
    sources = Source.objects.filter(unheard, paused=False).order_by("health_since", "slug").only("slug")
    return capped_query(sources, limit)


QUIET_NAMED = 10


def quiet_without_clock(now: datetime | None = None, limit: int = QUIET_NAMED) -> Capped:
    """Sources, not paused, with no overdue clock (`expected_interval`) that have not reported for
    QUIET_AFTER_GAPS of their usual gaps (completeness.cadence): crawlers that stopped, which nothing
    alerts on. The longest quiet first. One query on an indexed column, and a count only when more
    than `limit` are named."""
    now = now or timezone.now()
    sources = (
        Source.objects.filter(clock.quiet_without_clock(now))
        .order_by("quiet_after", "slug")
        .only("slug", "usual_gap", "last_report_at")
    )
    return capped_query(sources, limit)


def _covered_by(channels: QuerySet[Channel]) -> Q:
    """A source covered by one of these channels: all sources, its slug, one of its tags, or its owner
    or team (stored as "ada, bob", severity.normalise_names)."""
    by_owner, by_team = (
        channels.annotate(names=Concat(Value(", "), F(field), Value(", "))).filter(
            names__contains=Concat(Value(", "), OuterRef(field.rstrip("s")), Value(", "))
        )
        for field in ("owners", "teams")
    )
    return (
        Q(Exists(channels.filter(all_sources=True)))
        | Q(Exists(channels.filter(sources=OuterRef("pk"))))
        | Q(Exists(channels.filter(tags__sources=OuterRef("pk"))))
        | (~Q(owner="") & Q(Exists(by_owner)))
        | (~Q(team="") & Q(Exists(by_team)))
    )


def expired_pauses(now: datetime | None = None) -> list[Source]:
    """Paused sources whose end time has passed: the pages lift them rather than show a stale pause."""
    now = now or timezone.now()
    return list(Source.objects.filter(paused=True, paused_until__lte=now))


# --- source page (the rest of its queries: sources/pages/selectors/source.py) -----------------------


def source_state(source: Source, now: datetime | None = None) -> dict[str, Any]:
    """The overview's `state` and `severity` for one loaded source, without a query.

    The same rules as annotated_sources(); tests/test_overview.py checks that both agree on every
    kind of source.
    """
    now = now or timezone.now()
    run = source.last_run
    if source.paused or source.health == Health.PAUSED:
        return {"state": Health.PAUSED.value, "severity": Severity.PAUSED}
    if source.health == Health.FAILING:
        if run is not None and run.verdict == Verdict.INCOMPLETE and run.snapshot_action == "replaced":
            severity = Severity.OVERWRITTEN
        elif run is not None and run.silent:
            severity = Severity.SILENT
        else:
            severity = Severity.FAILING
        return {"state": Health.FAILING.value, "severity": severity}
    deadline = clock.deadline(source)
    overdue = source.health == Health.OVERDUE or (deadline is not None and deadline < now)
    if overdue:
        return {"state": Health.OVERDUE.value, "severity": Severity.OVERDUE}
    return {"state": Health.OK.value, "severity": Severity.OK}


# --- run page ----------------------------------------------------------------------------------


def run_by_id(run_id: int) -> Run | None:
    return Run.objects.select_related("source").filter(pk=run_id).first()


# Rows of each list on the run page. A report may carry 10,000 lost URLs, failed batches and breaker
# events and 50,000 proxy transitions (completeness/report.py); rendering a table row costs ~0.5 ms,
# so the page lists the first ones and says how many more the report as received (at its foot) holds.
RUN_ROWS = 200


def capped(items: Iterable[Any] | Mapping[str, Any] | None, limit: int = RUN_ROWS) -> Capped:
    """The first `limit` of a list (or of a dict's items) already in memory, and how many there are."""
    items = list(items.items()) if isinstance(items, dict) else list(items or [])
    return Capped(items[:limit], len(items))


def run_detail(run: Run) -> dict[str, Any]:
    return {
        "young_at_run": run.expected is None and _young_at(run),
        "breaker_events": capped_query(run.breaker_events.order_by("at", "seq", "id"), RUN_ROWS),
        "proxy_transitions": capped_query(run.proxy_transitions.order_by("at", "id"), RUN_ROWS),
        "acceptances": list(run.acceptances.order_by("-accepted_at")),
        "lost_urls": capped(run.lost_urls),
        "failed_batches": capped(run.failed_batches),
        "counters": capped(run.counters),
        "delivery_errors": capped(run.delivery_errors),
    }


def _young_at(run: Run) -> bool:
    """The source had under two weeks of runs when this one started: its missing expectation is the
    wait every new source has. Otherwise the run was judged before the service learned each source's
    normal (an upgrade), or while its learning set was too thin, and "none yet" would be untrue."""
    first = Run.objects.filter(source_id=run.source_id).order_by("started_at").values_list("started_at", flat=True)[:1]
    # By the calendar, as learning counts it: a daily source's fifteenth run (day 14) has none yet.
    return not first or run.started_at.date() - first[0].date() <= MIN_SPAN

"""What the API answers with: the response side of the contract, documented in the OpenAPI document."""

from __future__ import annotations

from dataclasses import asdict
from datetime import date, datetime, timedelta
from typing import Annotated, Any, TypeVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, QuerySet
from django.utils import timezone
from ninja import Schema
from pydantic import AfterValidator, AwareDatetime, BeforeValidator, ConfigDict, Field, StrictBool

from completeness.alerts.redact import redact_finding, redact_text
from completeness.report import FieldName, Slug
from completeness.verdicts import DEFAULT_MODES
from sources import clock
from sources.ingest.errors import check_storable, is_number_text
from sources.ingest.history import learning
from sources.models import HTTP_URL, Acknowledgement, Health, Run, Source
from sources.services.pausing import MAX_PAUSE_AHEAD, MAX_REASON


class FieldErrorOut(Schema):
    path: str = Field(description="where in the body, e.g. pages.lost or failed_batches[0].rows")
    message: str


class ErrorOut(Schema):
    detail: str
    errors: list[FieldErrorOut] = Field(default_factory=list, description="every bad field (422); else empty")


class FindingOut(Schema):
    rule: str
    mode: str = Field(description="enforce or observe; an observed finding never makes a run incomplete")
    message: str
    expected: float | int | None
    actual: float | int | None


class ExpectationOut(Schema):
    expected: int = Field(description="what a healthy run of this source collects at this run's time")
    low: int = Field(description="the lower bound of the source's normal at this run's time")
    basis: str = Field(description="what the expectation was learned from")
    runs: int = Field(description="runs in the learning set")

    @staticmethod
    def of(run: Run) -> ExpectationOut | None:
        if run.expected is None or run.expected_low is None:
            return None
        return ExpectationOut(
            expected=run.expected, low=run.expected_low, basis=run.expectation_basis, runs=run.expectation_runs or 0
        )


class VerdictOut(Schema):
    run: str = Field(description="the service's id of the stored run")
    source: str
    run_id: str
    verdict: str = Field(description="complete | incomplete | paused")
    silent: bool = Field(description="the crawler claimed success, the verdict says otherwise")
    exit_code: int = Field(description="what the crawler should exit with: 0 complete or paused, 3 incomplete")
    findings: list[FindingOut]
    completeness: float | None = Field(description="collected / (declared_total - removed), where declared")
    baseline: int | None = Field(description="collected of the last complete snapshot this run was compared with")
    outcome_rates: dict[str, int] = Field(description="each outcome in parts per 10,000 of all outcomes")
    expectation: ExpectationOut | None = Field(
        description="the source's own normal at this run's time; null without one"
    )
    # Required in the document, as every answer carries it: a client generated from it had the list
    # optional, and a crawler checking its typos (declared_totl) had to test for its absence.
    ignored_fields: list[str] = Field(description="top-level fields this server does not know")

    @staticmethod
    def of(run: Run, ignored_fields: list[str] | None = None) -> VerdictOut:
        return VerdictOut(
            run=str(run.pk),
            source=run.source.slug,
            run_id=run.run_id,
            verdict=run.verdict,
            silent=run.silent,
            exit_code=run.exit_code_advised,
            findings=run.findings,
            completeness=run.completeness,
            baseline=run.baseline_collected,
            outcome_rates=run.outcome_rates,
            expectation=ExpectationOut.of(run),
            ignored_fields=ignored_fields or [],
        )


class RunOut(Schema):
    id: int
    run_id: str
    started_at: datetime
    finished_at: datetime
    received_at: datetime
    verdict: str
    silent: bool
    exit_code: int = Field(description="advised exit code: 0 complete or paused, 3 incomplete")
    crawler_exit_code: int | None
    crawler_verdict: str | None
    paused: bool
    declared_total: int | None
    collected: int
    written: int | None
    records_lost: int | None = Field(description="records the crawler could not get after retries")
    end_reason: str | None = Field(description="why the crawl ended, in the crawler's own words")
    removed: int
    completeness: float | None
    completeness_floor: float | None = Field(
        description="the least completeness the run was complete at: min_completeness, or the source's own "
        "band where its share of an approximate declared total hovers at it; null without a ratio, when "
        "paused, and for runs stored before it was kept"
    )
    baseline: int | None
    expectation: ExpectationOut | None
    accepted_as_baseline: bool
    snapshot_action: str | None
    findings: list[FindingOut]
    outcomes: dict[str, int]
    outcome_rates: dict[str, int]
    counters: dict[str, int]
    fields: dict[str, int] | None = Field(description="field -> records that had it filled, as reported")
    field_floors: dict[str, float] | None = Field(description="field -> the least coverage it was judged against")
    field_usual: dict[str, float] | None = Field(
        description="field -> the usual coverage its floor was set from: the centre of the field's own normal, "
        "or the baseline run's coverage while the source has none (no entry under an operator's minimum; null "
        "for runs stored before it was kept)"
    )

    @staticmethod
    def of(run: Run, redacted: bool = False) -> RunOut:
        """`redacted` for a reader who is not staff: findings and the end reason quote what the crawler
        sent (lost_pages names lost URLs) and are shown without credentials, as on the run page."""
        # Stored as JSON; pydantic makes each a FindingOut.
        findings: list[Any] = [redact_finding(f) for f in run.findings] if redacted else run.findings
        return RunOut(
            id=run.pk,
            run_id=run.run_id,
            started_at=run.started_at,
            finished_at=run.finished_at,
            received_at=run.received_at,
            verdict=run.verdict,
            silent=run.silent,
            exit_code=run.exit_code_advised,
            crawler_exit_code=run.exit_code,
            crawler_verdict=run.crawler_verdict or None,
            paused=run.paused,
            declared_total=run.declared_total,
            collected=run.collected,
            written=run.written,
            records_lost=run.records_lost,
            end_reason=(redact_text(run.end_reason) if redacted else run.end_reason) or None,
            removed=run.removed,
            completeness=run.completeness,
            completeness_floor=run.completeness_floor,
            baseline=run.baseline_collected,
            expectation=ExpectationOut.of(run),
            accepted_as_baseline=run.accepted_as_baseline,
            snapshot_action=run.snapshot_action or None,
            findings=findings,
            outcomes=run.outcomes,
            outcome_rates=run.outcome_rates,
            counters=run.counters,
            fields=run.field_counts,
            field_floors=run.field_floors,
            field_usual=run.field_usual,
        )


class PauseOut(Schema):
    paused: bool
    by: str | None
    reason: str | None
    since: datetime | None
    until: datetime | None
    origin: str | None


class LearningOut(Schema):
    since: date = Field(description="the first run of the runs the source learns its normal from (UTC)")
    spans_on: date = Field(
        description="a run on this day makes those runs span 14 days: the runs after it are the earliest "
        "the normal may judge (given learn_min_runs of them)"
    )
    spanned: bool = Field(description="they span 14 days already, and fewer than learn_min_runs of them count")


class SettingsOut(Schema):
    min_completeness: float
    drop_threshold: float
    expected_interval_seconds: int | None
    grace_seconds: int | None
    field_drop: float = Field(description="how far a field's coverage may fall below the baseline's")
    field_minimums: dict[str, float] = Field(
        description="field -> least coverage accepted, replacing the baseline floor"
    )
    trend_days: int = Field(description="the trend rule compares with the best good run of this many days")
    trend_min_runs: int = Field(description="good runs the trend window must hold before the trend rule speaks")
    learn_days: int = Field(description="the expectation learns the source's normal from the runs of this many days")
    learn_min_runs: int = Field(description="runs (over at least 14 days) before the source has an expectation")
    min_margin: float = Field(description="the least margin between expected and low, as a share of expected")
    rule_modes: dict[str, str] = Field(description="every rule with its effective mode")


class SourceOut(Schema):
    slug: str
    name: str
    region: str
    tags: list[str]
    owner: str | None = Field(description="the person answerable for this crawler")
    team: str | None = Field(description="the team that owns it")
    runbook_url: str | None = Field(description="what to do when it fails")
    health: str = Field(description="ok | failing | overdue | paused")
    health_since: datetime
    last_report_at: datetime | None
    last_run: RunOut | None
    baseline: int | None = Field(description="collected of the last complete snapshot")
    baseline_run_id: str | None
    pause: PauseOut
    learning: LearningOut | None = Field(
        description="while the source has no normal yet (the fixed rules judge it against the last good "
        "snapshot): since when it learns and from when it may have one; null once it has one, or before its "
        "first run"
    )
    reports_every_seconds: int | None = Field(
        description="how often it reports: the median gap between the starts of its latest 21 runs; null "
        "with fewer than 6 runs. A script can set expected_interval_seconds from it"
    )
    quiet: bool = Field(
        description="no expected interval, not paused, and no report for three of its usual gaps: a crawler "
        "that stopped, which nothing alerts on (the overview names it)"
    )
    settings: SettingsOut

    @staticmethod
    def of(source: Source, redacted: bool = False) -> SourceOut:
        rule_settings = source.rule_settings()
        return SourceOut(
            slug=source.slug,
            name=source.display_name,
            region=source.region,
            tags=[tag.name for tag in source.tags.all()],
            owner=source.owner or None,
            team=source.team or None,
            runbook_url=source.runbook_url or None,
            health=source.health,
            health_since=source.health_since,
            last_report_at=source.last_report_at,
            last_run=RunOut.of(source.last_run, redacted) if source.last_run else None,
            baseline=source.baseline_collected,
            baseline_run_id=source.baseline_run.run_id if source.baseline_run else None,
            pause=PauseOut(
                paused=source.paused,
                by=source.paused_by or None,
                # A crawler's pause_reason may quote a credential, as its end_reason may.
                reason=(redact_text(source.paused_reason) if redacted else source.paused_reason) or None,
                since=source.paused_since,
                until=source.paused_until,
                origin=source.pause_origin or None,
            ),
            learning=LearningOut(**asdict(young)) if (young := learning(source)) else None,
            reports_every_seconds=_seconds(source.usual_gap),
            quiet=clock.is_quiet(source, timezone.now()),
            settings=SettingsOut(
                min_completeness=source.min_completeness,
                drop_threshold=source.drop_threshold,
                expected_interval_seconds=_seconds(source.expected_interval),
                grace_seconds=_seconds(source.grace),
                field_drop=source.field_drop,
                field_minimums=source.field_minimums or {},
                trend_days=source.trend_days,
                trend_min_runs=source.trend_min_runs,
                learn_days=source.learn_days,
                learn_min_runs=source.learn_min_runs,
                min_margin=source.min_margin,
                rule_modes={rule: rule_settings.mode_of(rule).value for rule in DEFAULT_MODES},
            ),
        )


def _seconds(delta: timedelta | None) -> int | None:
    return int(delta.total_seconds()) if delta is not None else None


def _storable(value: str) -> str:
    # PostgreSQL refuses NUL in text; unpaired surrogates are no UTF-8.
    problems = check_storable(value)
    if problems:
        raise ValueError(problems[0].message)
    return value


# Text a request may carry into the database: refused with 422 naming the field, never a 500 at insert.
StorableText = Annotated[str, AfterValidator(_storable)]


def _http_url(value: str) -> str:
    """The model's own check of a link (http or https), here so that a bad link is named in the same
    answer as the other bad values: checked at save only, it came back after they were mended."""
    if value:
        try:
            HTTP_URL(value)
        except DjangoValidationError as exc:
            raise ValueError(exc.messages[0]) from None
    return value


HttpUrlText = Annotated[str, AfterValidator(_storable), AfterValidator(_http_url)]


def _instant_text(value: object) -> object:
    # Digits in text too: lax mode read "1893456000" as seconds since 1970.
    if value is not None and (not isinstance(value, str) or is_number_text(value)):
        raise ValueError("a date and time as ISO 8601 text with its offset, e.g. 2030-01-01T06:00:00Z")
    return value


# As in reports, an instant is text: pydantic's lax mode read {"until": 1800000000} as seconds since
# 1970, and a number meant as hours ("until": 2) as a moment in January 1970.
Instant = Annotated[AwareDatetime, BeforeValidator(_instant_text)]


class PauseIn(Schema):
    # A misspelt key is refused, not ignored: {"untill": ...} was a pause with no end.
    model_config = ConfigDict(extra="forbid")

    reason: StorableText = Field(min_length=1, max_length=MAX_REASON)
    until: Instant | None = Field(None, description=f"in the future, at most {MAX_PAUSE_AHEAD.days} days ahead")


# Any real history fits in this many pages; a larger number is no page (10**20 overflows an OFFSET).
MAX_PAGE = 1_000_000_000


class AcknowledgeIn(Schema):
    model_config = ConfigDict(strict=True, extra="forbid")

    note: StorableText = Field("", max_length=2000, description="what is being done, for whoever looks next")


class AcknowledgementOut(Schema):
    source: str
    health: str = Field(description="the problem acknowledged: failing | overdue")
    health_since: datetime = Field(
        description=(
            "when the source's health changed to that problem (the time its alert gave; a failure's first bad run"
            " started earlier, as /alerts/ shows); the acknowledgement lapses when its health changes again"
        )
    )
    by: str
    note: str
    at: datetime

    @classmethod
    def of(cls, ack: Acknowledgement) -> AcknowledgementOut:
        return cls(
            source=ack.source.slug,
            health=ack.health,
            health_since=ack.health_since,
            by=ack.by,
            note=ack.note,
            at=ack.at,
        )


M = TypeVar("M", bound=Model)


class PageQuery(Schema):
    page: int = Field(1, ge=1, le=MAX_PAGE, description="1-based page number; a page past the end is empty")
    per_page: int = Field(50, ge=1, le=200)

    def slice(self, queryset: QuerySet[M]) -> tuple[list[M], int]:
        start = (self.page - 1) * self.per_page
        return list(queryset[start : start + self.per_page]), queryset.count()


class SourceFilter(Schema):
    health: list[Health] = Field(
        [], description="only sources in this health (ok, failing, overdue, paused); repeat it for several"
    )


class RunPage(Schema):
    items: list[RunOut]
    count: int
    page: int
    per_page: int


class SourcePage(Schema):
    items: list[SourceOut]
    count: int
    page: int
    per_page: int


Share = Annotated[float, Field(ge=0.0, le=1.0)]


class SettingsIn(Schema):
    """A change of a source's settings: only the settings given change (an explicit null is refused,
    except for the interval, where it removes the overdue clock); every value is checked before any
    is written."""

    # Strict, as reports are: false, "0.5" and 5.0 are no numbers for a count or a share (an
    # integer is a share: 1 is 1.0).
    model_config = ConfigDict(strict=True, extra="forbid")

    # None is the default of a setting left out, which pydantic does not validate; a null sent is
    # refused. The checker reads `= None` against the type (no null) and cannot see that split.
    min_completeness: Share = None  # type: ignore[assignment]
    drop_threshold: Share = None  # type: ignore[assignment]
    field_drop: Share = None  # type: ignore[assignment]
    field_minimums: dict[FieldName, Share] = Field(
        None,  # type: ignore[arg-type]
        max_length=200,
        description="replaces the whole set; {} removes every minimum",
    )
    trend_days: Annotated[int, Field(ge=1, le=366)] = None  # type: ignore[assignment]
    trend_min_runs: Annotated[int, Field(ge=1, le=1000)] = None  # type: ignore[assignment]
    learn_days: Annotated[int, Field(ge=15, le=366)] = None  # type: ignore[assignment]
    learn_min_runs: Annotated[int, Field(ge=5, le=1000)] = None  # type: ignore[assignment]
    min_margin: Annotated[float, Field(ge=0.0, le=0.5)] = None  # type: ignore[assignment]
    expected_interval_seconds: Annotated[int, Field(ge=60, le=366 * 86400)] | None = Field(
        None, description="a report is due this often; null removes the overdue clock"
    )
    grace_seconds: Annotated[int, Field(ge=0, le=30 * 86400)] = None  # type: ignore[assignment]
    owner: StorableText = Field(None, max_length=200, description='the person answerable; "" clears it')  # type: ignore[assignment]
    team: StorableText = Field(None, max_length=100, description='the owning team; "" clears it')  # type: ignore[assignment]
    runbook_url: HttpUrlText = Field(None, max_length=500, description='an http(s) URL; "" clears it')  # type: ignore[assignment]

    def changes(self) -> dict[str, Any]:
        given = self.model_dump(exclude_unset=True)
        if "expected_interval_seconds" in given:
            seconds = given.pop("expected_interval_seconds")
            given["expected_interval"] = timedelta(seconds=seconds) if seconds is not None else None
        if "grace_seconds" in given:
            given["grace"] = timedelta(seconds=given.pop("grace_seconds"))
        return given


class WindowIn(Schema):
    # As PauseIn: {"tag": [...]} for "tags" planned a window over what else was named, silently.
    model_config = ConfigDict(extra="forbid")

    # 1-100 visible characters (FieldName's bounds), the column's size: with Name (1-200) a
    # Field(max_length=100) here did not hold, and create_window cut a longer name after answering 201.
    name: Annotated[FieldName, AfterValidator(_storable)]
    reason: StorableText = Field("", max_length=500)
    starts_at: Instant = Field(description="the first occurrence's start; may lie ahead")
    ends_at: Instant
    # true or false, as in reports: lax mode read "yes", "on", "1" and 1 as true.
    weekly: StrictBool = Field(False, description="repeat the same hours every 7 days (UTC)")
    # Named by their patterns, so a NUL or a 10,000-character name is a 422 naming it, not a lookup that
    # PostgreSQL refuses with a server error.
    sources: list[Slug] = Field([], max_length=1000, description="source slugs")
    tags: list[Annotated[FieldName, AfterValidator(_storable)]] = Field([], max_length=100)
    region: StorableText = Field("", max_length=100)


class WindowOut(Schema):
    id: int
    name: str
    reason: str
    weekly: bool
    open: bool = Field(description="an occurrence is open now (the covered sources are paused by it)")
    starts_at: datetime = Field(description="the open occurrence's start, else the next one's")
    ends_at: datetime

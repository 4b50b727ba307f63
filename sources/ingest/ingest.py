"""The one write path for a run report: parse, authorise, judge, store, move the source's state.

Nothing of a rejected report is stored: every check that can refuse a report runs before the
transaction, or raises inside it so that it rolls back whole.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from pydantic import ValidationError

from completeness import cadence
from completeness.alerts.policy import is_history
from completeness.report import LATER_OPTIONAL_FIELDS, RunReport, json_kind
from completeness.verdicts import History, Judgement, RuleSettings, Verdict, field_coverage, judge, outcome_rates
from sources.alerts import outbox
from sources.alerts.history import history_after
from sources.ingest import history, jsonbody, proxy_current, rows
from sources.ingest.errors import (
    FieldError,
    ReportConflict,
    ReportForbidden,
    ReportInvalid,
    check_storable,
    pydantic_errors,
    timestamps_as_numbers,
)
from sources.models import ApiToken, Channel, FailureWindowEvent, PauseOrigin, ProxyTransition, Run, Source
from sources.services import health, pausing

SOURCE_STATE_FIELDS = (
    "health",
    "health_since",
    "last_run",
    "last_judged_run",
    "last_run_started_at",
    "last_verdict",
    "last_report_at",
    "quiet_after",
    "baseline_run",
    "baseline_collected",
    "baseline_started_at",
    "baseline_field_counts",
    "trend_ceiling",
    *pausing.PAUSE_FIELDS,
)


SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])|\xed[\xa0-\xbf]")


@dataclass(frozen=True)
class ParsedReport:
    report: RunReport
    raw: dict[str, Any]
    digest: str


@dataclass
class IngestResult:
    run: Run
    created: bool
    ignored_fields: list[str] = field(default_factory=list)


def parse_report(body: bytes, *, now: datetime | None = None) -> ParsedReport:
    """Parse and validate one report; `now` is the server's clock the report's instants are checked
    against (by default the real one)."""
    # JSON between systems is UTF-8 (RFC 8259). Python's json would read UTF-16 or -32 and the report's
    # validator would not, answering "expected value at line 1 column 1": say what is wrong instead.
    encoding = json.detect_encoding(body)
    if encoding not in ("utf-8", "utf-8-sig"):
        raise ReportInvalid([FieldError("(body)", f"the body must be UTF-8 JSON; this one is {encoding.upper()}")])
    # A byte-order mark (PowerShell 5, some .NET writers) may be skipped (RFC 8259); the validator
    # below reads it as no JSON at all, and the other endpoints' parser already skips it.
    body = body.removeprefix(codecs.BOM_UTF8)
    if jsonbody.too_deep(body):
        raise ReportInvalid([FieldError("(body)", f"nested deeper than {jsonbody.MAX_DEPTH} levels")])
    try:
        raw, overflowed = jsonbody.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReportInvalid([FieldError("(body)", jsonbody.why_not_json(exc))]) from None
    if not isinstance(raw, dict):
        raise ReportInvalid([FieldError("(body)", f"a run report is a JSON object, not {json_kind(raw)}")])
    try:
        return _validated(raw, body, overflowed, now)
    except ReportInvalid as exc:
        exc.about = {key: _shown(raw.get(key)) for key in ("source", "run_id")}
        raise


def _shown(value: Any) -> str | None:
    """A refused report's source or run_id as its log line gives it: what was sent, cut, if text."""
    return value[:100] if isinstance(value, str) else None


def _validated(raw: dict[str, Any], body: bytes, overflowed: bool, now: datetime | None) -> ParsedReport:
    # What the database cannot hold (NUL, lone surrogates, infinity) is refused here, not by a 500
    # later. The strings can only arrive as \u escapes, so a cheap look at the bytes spares the walk.
    storable_errors = check_storable(raw) if overflowed or SUSPECT_ESCAPE.search(body) else []
    # Found on the raw values, as pydantic would take them (as seconds since 1970) and say nothing.
    refused = storable_errors + timestamps_as_numbers(raw)
    try:
        # The rest of such a report is validated too (without what cannot be stored: a lone surrogate
        # is no JSON to pydantic), so that the 422 names every bad field, not only the unstorable ones.
        checked = json.dumps(_storable_copy(raw)) if storable_errors else body
        report = RunReport.model_validate_json(checked, context={"now": now or timezone.now()})
    except ValidationError as exc:
        named = {error.path for error in refused}
        others = [error for error in pydantic_errors(exc, RunReport) if error.path not in named]
        raise ReportInvalid(refused + others) from None
    if refused:
        raise ReportInvalid(refused)
    return ParsedReport(report, raw, report_digest(report))


def _storable_copy(value: Any) -> Any:
    """`value` without what check_storable refuses (already named): NUL and lone surrogates left out of
    its text, numbers that overflowed as 0.0 (no count, and a float only where a float may be)."""
    if isinstance(value, str):
        return "".join(char for char in value if char != "\x00" and not "\ud800" <= char <= "\udfff")
    if isinstance(value, float) and not math.isfinite(value):
        return 0.0
    if isinstance(value, dict):
        return {_storable_copy(key): _storable_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_storable_copy(item) for item in value]
    return value


def report_digest(report: RunReport, *, numbers_as_sent: bool = False) -> str:
    """The report as a value: two bodies that parse to equal reports (another key order, whitespace,
    `+00:00` for `Z`, fractional zeros, `1.0` for `1`, defaults spelled out) have one digest, so a
    retry that re-serialises its report is a repeat, not a conflict. The model holds its instants in
    UTC. `numbers_as_sent`: the digest of runs stored before `meta` and unknown fields were compared
    by number."""
    value = report.model_dump(mode="json", by_alias=True)
    # Fields the contract gained later are left out while unset, so that a run stored before they
    # existed keeps its digest and its retry stays a repeat.
    for name in LATER_OPTIONAL_FIELDS:
        if value.get(name) is None:
            value.pop(name, None)
    if not numbers_as_sent:
        # The model's own numbers are typed, but meta and unknown fields keep them as spelled: a retry
        # through a JavaScript or Go forwarder sends {"load": 1.0} as {"load": 1}, the same number.
        for name in ("meta", *report.unknown_fields):
            value[name] = _one_number(value[name])
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _one_number(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _one_number(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_one_number(item) for item in value]
    return value


def ingest_report(token: ApiToken, parsed: ParsedReport, *, received_at: datetime | None = None) -> IngestResult:
    """Judge and store one report. `received_at` backdates its arrival (demo data); by default it is
    the time the source's lock was taken."""
    slug = parsed.report.source
    if not token.all_sources and not token.sources.filter(slug=slug).exists():
        # Which token and what it covers: "this token may not post for source 'acme-book'" left a
        # crawler with several tokens, or a slug one letter off its token's, to guess which was wrong.
        raise ReportForbidden(
            f"token '{token.name}' may not post for source '{slug}': it covers {token.scope}. An operator"
            " adds a source to a token on its admin page (API tokens), or makes one with"
            " `bin/manage create_token NAME --source SLUG`"
        )
    try:
        with transaction.atomic():
            locked = _locked_source(slug, parsed.report.run_id)
            if locked.existing_run_id is not None:
                return _repeat(Run.objects.get(pk=locked.existing_run_id), parsed)
            # Taken under the lock, so received_at orders a source's runs as they were judged.
            run = _judge_and_store(locked, token, parsed, received_at or timezone.now())
    except IntegrityError:
        # The unique constraint caught a concurrent post of the same run: answer as a repeat.
        existing = Run.objects.filter(source__slug=slug, run_id=parsed.report.run_id).first()
        if existing is None:
            raise
        return _repeat(existing, parsed)
    return IngestResult(run, created=True, ignored_fields=parsed.report.unknown_fields)


class LockedSource(NamedTuple):
    source: Source
    existing_run_id: int | None  # a stored run of the same run_id
    heartbeat_channels: int  # how many heartbeat channels exist, of any source


def _locked_source(slug: str, run_id: str) -> LockedSource:
    """The source's row, locked: reports of one source are judged one at a time against one baseline.

    It comes with the id of a stored run of the same run_id, if any, and whether any heartbeat
    channel exists, to spare two round trips. A run committed while this waited for the lock is not
    seen here; the unique constraint catches it.
    """
    locked = _select_locked(slug, run_id)
    if locked is None:
        # Only all-sources tokens get here for an unknown slug (checked above).
        Source.objects.get_or_create(slug=slug)
        locked = _select_locked(slug, run_id)
        assert locked is not None, "the row was just created, under this transaction"
    return locked


def _select_locked(slug: str, run_id: str) -> LockedSource | None:
    quote = connection.ops.quote_name
    sources, runs, channels = (quote(m._meta.db_table) for m in (Source, Run, Channel))
    lock = f" FOR UPDATE OF {sources}" if connection.features.has_select_for_update_of else ""
    found = rows.fetch_one(
        Source,
        f"WHERE {sources}.slug = %s{lock}",
        [run_id, Channel.Kind.HEARTBEAT, slug],
        extra=(
            f"(SELECT r.id FROM {runs} r WHERE r.source_id = {sources}.id AND r.run_id = %s LIMIT 1)",
            f"(SELECT COUNT(*) FROM {channels} c WHERE c.kind = %s)",
        ),
    )
    if found is None:
        return None
    source, (existing_run_id, heartbeat_channels) = found
    return LockedSource(source, existing_run_id, heartbeat_channels)


def legacy_text_digest(raw: dict[str, Any]) -> str:
    """The digest runs stored before reports were compared as values carry: their JSON text with
    sorted keys. Kept so that a retry of such a run, sent again as it was, stays a repeat."""
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _repeat(run: Run, parsed: ParsedReport) -> IngestResult:
    # The older digests are computed only on this rare path: a repeat whose value digest differs.
    if run.report_digest != parsed.digest and run.report_digest not in (
        report_digest(parsed.report, numbers_as_sent=True),
        legacy_text_digest(parsed.raw),
    ):
        raise ReportConflict(
            f"run '{run.run_id}' of source '{parsed.report.source}' was already reported with a different body"
            f"{_differences(run, parsed.report)}; a run_id identifies one report"
        )
    return IngestResult(run, created=False, ignored_fields=parsed.report.unknown_fields)


# How many differing fields a conflict names, and how long a value it quotes.
CONFLICT_FIELDS = 5
CONFLICT_VALUE_CHARS = 40


def _differences(run: Run, report: RunReport) -> str:
    """Where a report differs from the one stored under its run_id, field by field and compared as
    values: a retry that rebuilt its report with a new finished_at learns that, not only that
    something differs. Empty where the stored report is gone (retention) or no longer parses."""
    try:
        stored = RunReport.model_validate_json(json.dumps(run.raw), context={"now": timezone.now()})
    except (ValidationError, TypeError, ValueError):
        return ""
    before, now = stored.model_dump(mode="json", by_alias=True), report.model_dump(mode="json", by_alias=True)
    names = sorted(name for name in before.keys() | now.keys() if before.get(name) != now.get(name))
    if not names:
        return ""
    shown = [_difference(name, before.get(name, ABSENT), now.get(name, ABSENT)) for name in names[:CONFLICT_FIELDS]]
    more = f" and {len(names) - CONFLICT_FIELDS} more" if len(names) > CONFLICT_FIELDS else ""
    return f" (it differs in {', '.join(shown)}{more})"


ABSENT = object()


def _difference(name: str, before: Any, now: Any) -> str:
    # Scalars are quoted (a count, an instant, a verdict); an object or a list only named.
    if isinstance(before, (dict, list)) or isinstance(now, (dict, list)):
        return name
    was, this = ("absent" if value is ABSENT else json.dumps(value, ensure_ascii=False) for value in (before, now))
    if max(len(was), len(this)) > CONFLICT_VALUE_CHARS:
        return name
    return f"{name}: {was} stored, {this} now"


def _judge_and_store(locked: LockedSource, token: ApiToken, parsed: ParsedReport, now: datetime) -> Run:
    source = locked.source
    report = parsed.report
    actor = f"token:{token.name}"
    pausing.lift_expired_locked_row(source, now)
    settings = source.rule_settings()
    # A crawler's own pause ends with its next unpaused report; an operator's holds until lifted.
    operator_pause = source.paused and source.pause_origin != PauseOrigin.CRAWLER
    past = history.history_for(source, report, settings, paused=report.paused or operator_pause)
    judgement = judge(report, settings, past, source_paused=operator_pause)

    run = rows.insert(Run(**_run_fields(source, parsed, judgement, past, settings, now)))
    _store_events(source, run, report)
    # History (a run reported long after it finished) reaches no channel: a heartbeat would say the
    # crawler ran now, an overwrite alert would be a month old.
    late = is_history(report.finished_at, now, history_after())
    in_order = source.last_run_started_at is None or report.started_at >= source.last_run_started_at
    if not late:
        outbox.notify_run(source, run, any_heartbeat_channel=locked.heartbeat_channels > 0, in_order=in_order)

    # Only the source's latest run speaks for its present: a paused report from a spool emptied late
    # paused a source whose newer runs were live (and silenced its alerts), and a late unpaused one
    # lifted the pause its crawler had just reported.
    if in_order and report.paused and not source.paused:
        pausing.pause_locked_row(
            source, origin=PauseOrigin.CRAWLER, actor=actor, reason=report.pause_reason or "", run=run, now=now
        )
    elif in_order and not report.paused and source.paused and source.pause_origin == PauseOrigin.CRAWLER:
        pausing.resume_locked_row(
            source, origin=PauseOrigin.CRAWLER, actor=actor, reason="unpaused report", run=run, now=now
        )

    if judgement.verdict is Verdict.COMPLETE:
        source.trend_ceiling = history.ceiling_after_good_run(source, run, in_order=in_order)
    if in_order:
        source.last_run = run
        source.last_run_started_at = report.started_at
        source.last_verdict = judgement.verdict.value
        if judgement.verdict is not Verdict.PAUSED:
            source.last_judged_run = run
    # A report that arrives late does not speak for the source's present; its latest run does.
    health.change_health_and_notify(
        source,
        health.health_after_run(source, source.last_verdict),
        run=run,
        now=now,
        heartbeat_channels=locked.heartbeat_channels > 0,
        history=late,
    )
    if judgement.verdict is Verdict.COMPLETE and source.at_or_after_baseline(report.started_at):
        source.baseline_run = run
        source.baseline_collected = report.collected
        source.baseline_started_at = report.started_at
        source.baseline_field_counts = run.field_counts
    source.last_report_at = now
    source.quiet_after = cadence.quiet_after(now, source.usual_gap)
    # The normal is written back only when it was refitted: most reports reuse it as it is.
    rows.update(source, SOURCE_STATE_FIELDS + (("normal_state", "usual_gap") if past.refitted else ()))
    return run


def _run_fields(
    source: Source, parsed: ParsedReport, judgement: Judgement, past: History, settings: RuleSettings, now: datetime
) -> dict[str, Any]:
    r = parsed.report
    floors = usuals = None
    if r.fields is not None and judgement.verdict is not Verdict.PAUSED:
        coverage = field_coverage(r.fields, r.collected, settings, past.baseline, past.shares)
        floors = {row.name: round(row.floor, 6) for row in coverage if row.floor is not None}
        usuals = {row.name: round(row.usual, 6) for row in coverage if row.usual is not None}
    pages, delivery, snapshot, window, pacing = r.pages, r.delivery, r.snapshot, r.failure_window, r.pacing
    expectation = judgement.expectation
    ratios = [e.ratio for e in window.events if e.ratio is not None] if window else []
    ratios += [ratio for _, ratio in window.series] if window else []
    return dict(
        source=source,
        run_id=r.run_id,
        report_digest=parsed.digest,
        received_at=now,
        started_at=r.started_at,
        finished_at=r.finished_at,
        exit_code=r.exit_code,
        crawler_verdict=r.crawler_verdict or "",
        paused=r.paused,
        pause_reason=r.pause_reason or "",
        declared_total=r.declared_total,
        collected=r.collected,
        written=r.written,
        records_lost=r.records_lost,
        end_reason=r.end_reason or "",
        removed=r.removed,
        requests_total=r.requests.effective_total if r.requests else None,
        requests_by_class=dict(r.requests.by_class) if r.requests else {},
        pages_expected=pages.expected if pages else None,
        pages_fetched=pages.fetched if pages else None,
        pages_lost=pages.lost if pages else None,
        lost_urls=list(pages.lost_urls) if pages else [],
        failed_batches=[b.model_dump() for b in r.failed_batches],
        delivery_attempted=delivery.attempted if delivery else None,
        delivery_delivered=delivery.delivered if delivery else None,
        delivery_errors=dict(delivery.errors) if delivery else {},
        snapshot_action=snapshot.action if snapshot else "",
        snapshot_rows=snapshot.rows if snapshot else None,
        breaker_threshold=window.threshold if window else None,
        breaker_min_samples=window.min_samples if window else None,
        breaker_peak_ratio=max(ratios) if ratios else None,
        breaker_last_event=window.last_event.kind if window and window.last_event else "",
        pacing_backoff=pacing.backoff if pacing else None,
        pacing_recovery=pacing.recovery if pacing else None,
        outcomes=dict(r.outcomes),
        outcome_rates=outcome_rates(r.outcomes),
        counters=dict(r.counters),
        meta=dict(r.meta),
        field_counts=dict(r.fields) if r.fields is not None else None,
        field_floors=floors,
        field_usual=usuals,
        raw=parsed.raw,
        verdict=judgement.verdict.value,
        silent=judgement.silent,
        findings=[f.as_dict() for f in judgement.findings],
        completeness=judgement.completeness,
        completeness_floor=judgement.completeness_floor,
        baseline_collected=past.baseline_collected,
        expected=expectation.expected if expectation else None,
        expected_low=expectation.low if expectation else None,
        expectation_basis=expectation.basis[:300] if expectation else "",
        expectation_runs=expectation.runs if expectation else None,
    )


def _store_events(source: Source, run: Run, report: RunReport) -> None:
    """Breaker events and proxy transitions, written as plain rows.

    A report can carry hundreds of them; building a model instance for each was the largest CPU cost
    of the whole ingest path, so they go to the database as tuples in one executemany each.
    """
    stamp = connection.ops.adapt_datetimefield_value
    if report.failure_window and report.failure_window.events:
        rows.insert_many(
            FailureWindowEvent,
            ("source_id", "run_id", "at", "seq", "kind", "ratio", "samples", "sent", "bad"),
            [
                (source.pk, run.pk, stamp(e.at), e.seq, e.kind, e.ratio, e.samples, e.sent, e.bad)
                for e in report.failure_window.events
            ],
        )
    if report.proxy_transitions:
        received = stamp(run.received_at)
        rows.insert_many(
            ProxyTransition,
            ("source_id", "run_id", "proxy", "at", "from_state", "to_state", "reason", "stage", "until", "received_at"),
            [
                (
                    source.pk,
                    run.pk,
                    t.proxy,
                    stamp(t.at),
                    t.from_state,
                    t.to_state,
                    t.reason,
                    t.stage,
                    stamp(t.until) if t.until else None,
                    received,
                )
                for t in report.proxy_transitions
            ],
        )
        proxy_current.record(run.pk)

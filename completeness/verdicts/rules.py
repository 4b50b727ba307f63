"""One function per rule of the spec. Each looks at the report and answers with a Draft or None.

A rule does not know its mode: the engine attaches it, so observe and enforce judge alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from completeness.alerts.redact import redact_error
from completeness.report import DEFAULT_BAD_CLASSES, RunReport
from completeness.text import one_line
from completeness.verdicts.expectation import MIN_SPAN
from completeness.verdicts.fields import FieldCoverage
from completeness.verdicts.fields import field_coverage as coverage_of_fields
from completeness.verdicts.shares import OPTIONAL_BELOW, share_floor
from completeness.verdicts.types import History, RuleSettings


@dataclass(frozen=True)
class Draft:
    message: str
    expected: float | int | None
    actual: float | int | None


Rule = Callable[[RunReport, RuleSettings, History], "Draft | None"]


def expected_records(report: RunReport) -> int | None:
    """The denominator: what the source announced, less what disappeared at the source during the run."""
    return net_declared(report.declared_total, report.removed)


def net_declared(declared_total: int | None, removed: int) -> int | None:
    """A declared total less the records removed during the run, never below 0 (more removed than
    announced leaves nothing to miss); None without a declared total. The pages read a stored run's by
    this (sources.queries.expected_records is the same in SQL)."""
    if declared_total is None:
        return None
    return max(declared_total - removed, 0)


def completeness_ratio(report: RunReport) -> float | None:
    expected = expected_records(report)
    if expected is None or expected <= 0:
        return None
    return report.collected / expected


def declared_share_floor(settings: RuleSettings, history: History) -> float:
    """The least share of its declared total a run is complete at: min_completeness, or the source's
    own band where its share hovers at it (shares.share_floor)."""
    shares = history.shares
    return share_floor(
        shares.share if shares else None,
        min_completeness=settings.min_completeness,
        min_margin=settings.min_margin,
        z=shares.each_z if shares else 0.0,
    )


def declared_total(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    expected = expected_records(report)
    ratio = completeness_ratio(report)
    learned = history.shares.share if history.shares else None
    least = declared_share_floor(settings, history)
    # With nothing left to collect (everything announced was removed) there is nothing to miss.
    if expected is None or ratio is None or ratio >= least:
        return None
    # "declared", not "expected": the source page also counts records short against the run's normal,
    # and one page must not call two numbers "expected".
    of = (
        f"{expected:,} ({report.declared_total:,} declared, {report.removed:,} removed)"
        if report.removed
        else f"{expected:,} declared"
    )
    if least < settings.min_completeness and learned is not None:
        below = (
            f"below this source's normal share of its announced total ({learned.centre:.1%} over "
            f"{learned.runs} runs, normal from {least:.1%})"
        )
    else:
        below = f"below the minimum completeness of {settings.min_completeness:.1%}"
    return Draft(
        f"collected {report.collected:,} of {of}: {ratio:.1%}, {below}",
        expected,
        report.collected,
    )


# More than this share of its declared total gone at the source within one run is not attrition
# (docs/verdicts.md, `mass_removal`). Fixed, not a setting: sources.queries counts such a run's
# records short against its whole declared total in SQL, with the same number.
MASS_REMOVAL_SHARE = 0.25


def mass_removal(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    """`removed` taken at its word hides any loss: the crawler kit counts a record's 404/410 as removed,
    so a site whose record pages all answer 404 after a bad deploy declares 9,000, "removes" 7,800 and
    the 1,200 collected are 100% of what was left."""
    declared = report.declared_total
    if declared is None or declared <= 0 or report.removed <= MASS_REMOVAL_SHARE * declared:
        return None
    if report.collected >= settings.min_completeness * declared:
        # Everything announced came in: the removed count is wrong, but nothing is missing.
        return None
    return Draft(
        f"{report.removed:,} of {declared:,} declared records reported removed during the run "
        f"({report.removed / declared:.1%}), collected {report.collected:,}; more than "
        f"{MASS_REMOVAL_SHARE:.0%} of a source gone within one run is more likely its record pages failing "
        "(404/410 from a broken site) than attrition",
        declared,
        report.collected,
    )


def drop(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    # A declared total is the more precise judge; the baseline only speaks where there is none.
    if report.declared_total is not None:
        return None
    expectation = history.expectation
    if expectation is not None:
        # Within the source's normal range is never a drop, however wide that range.
        expected = expectation.expected
        if report.collected >= expectation.low or report.collected >= (1 - settings.drop_threshold) * expected:
            return None
        return Draft(
            f"collected {report.collected:,}, {1 - report.collected / expected:.1%} below expected "
            f"({expected:,}; {expectation.basis}; normal from {expectation.low:,}); "
            f"a drop of more than {settings.drop_threshold:.0%} marks a run incomplete",
            expected,
            report.collected,
        )
    baseline = history.baseline_collected
    if baseline is None or report.collected >= (1 - settings.drop_threshold) * baseline:
        return None
    fall = 1 - report.collected / baseline
    return Draft(
        f"collected {report.collected:,}, {fall:.1%} below the last complete snapshot ({baseline:,}); "
        f"a drop of more than {settings.drop_threshold:.0%} marks a run incomplete{_until_normal(settings)}",
        baseline,
        report.collected,
    )


def below_expected(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    """A loss smaller than drop_threshold on a source steady enough to show it."""
    expectation = history.expectation
    if report.declared_total is not None or expectation is None or report.collected >= expectation.low:
        return None
    if drop(report, settings, history) is not None:
        return None
    expected = expectation.expected
    return Draft(
        f"collected {report.collected:,}, {1 - report.collected / expected:.1%} below expected "
        f"({expected:,}; {expectation.basis}); this source's normal reaches down to {expectation.low:,}",
        expected,
        report.collected,
    )


def lost_pages(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    pages = report.pages
    if pages is None or pages.lost == 0:
        return None
    shown_urls = pages.lost_urls[:3]
    shown = ", ".join(shown_urls)
    # lost_urls may name only some of the lost pages (the crawler kit names at most 1,000): the rest
    # are counted in `lost`.
    unnamed = max(pages.lost, len(pages.lost_urls)) - len(shown_urls)
    more = f" and {unnamed:,} more" if shown_urls and unnamed > 0 else ""
    where = f": {shown}{more}" if shown else ""
    # A crawl that stopped early (a timeout, a shutdown) counts the listing pages it had yet to fetch
    # as lost too, as the crawler kit does: "after retries" alone sent an operator after failures.
    ended = report.end_reason is not None and report.end_reason != "finished"
    how = f"after retries, or not yet fetched when the run ended ({report.end_reason})" if ended else "after retries"
    return Draft(
        f"{pages.lost:,} listing page(s) could not be fetched {how}{where}; a lost page is not the end of the listing",
        0,
        pages.lost,
    )


def records_lost(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    # No threshold: a blink is healed by the retry, and what still fails after it is loss.
    if not report.records_lost:
        return None
    return Draft(
        f"{report.records_lost:,} record(s) could not be fetched after retries; "
        f"{report.collected:,} of {report.collected + report.records_lost:,} were collected",
        0,
        report.records_lost,
    )


def crawler_reported(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    """The crawler's own word: a run it calls incomplete, or that exited non-zero, is never complete."""
    exited_badly = report.exit_code is not None and report.exit_code != 0
    if report.crawler_verdict != "incomplete" and not exited_badly:
        return None
    said = []
    if report.crawler_verdict == "incomplete":
        said.append("the crawler called this run incomplete")
    if exited_badly:
        said.append(f"it exited with code {report.exit_code}")
    why = f" (end reason: {report.end_reason})" if report.end_reason else ""
    # expected and actual are exit codes: 0 is what a run that succeeded exits with.
    return Draft(f"{' and '.join(said)}{why}", 0, report.exit_code)


FIRST_ERROR_CHARS = 160


def failed_batches(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    short_write = report.written is not None and report.written < report.collected
    if not report.failed_batches and not short_write:
        return None
    parts = []
    if report.failed_batches:
        # A batch sent without `rows` is stored with 0, and "(0 rows)" read as a write that lost nothing.
        names = ", ".join(
            f"{b.name} ({b.rows:,} rows)" if "rows" in b.model_fields_set else f"{b.name} (rows not counted)"
            for b in report.failed_batches[:5]
        )
        parts.append(f"{len(report.failed_batches)} store write(s) failed: {names}")
        # Why, in the crawler's words: "failed: item_pipeline:dropped (810 rows)" alone sent on call to
        # the crawler's logs for what its report already said.
        error = next((b.error for b in report.failed_batches if b.error and b.error.strip()), None)
        if error:
            # Redacted as the run page shows a batch's error, before the cut: a finding's message is only
            # redact_text'ed where shown, which keeps a bare path ("with url: /services/T0/B0/SECRET").
            parts.append(f"first error: {one_line(redact_error(error), FIRST_ERROR_CHARS)}")
    if short_write:
        parts.append(f"wrote {report.written:,} of {report.collected:,} collected records")
        return Draft("; ".join(parts), report.collected, report.written)
    return Draft("; ".join(parts), 0, len(report.failed_batches))


def breaker_stopped(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    window = report.failure_window
    last = window.last_event if window else None
    if window is None or last is None or last.kind != "stopped":
        return None
    # Percents, as the run page's chart and event table print the same ratios.
    ratio = f" at a bad-request ratio of {last.ratio:.1%}" if last.ratio is not None else ""
    threshold = window.threshold
    limit = f" (threshold {threshold:.1%})" if threshold is not None else ""
    # The stop carries the ratio of the trip that paused the run, often the threshold itself: the
    # probes that failed after it say the site stayed down, which that ratio alone does not.
    ordered = sorted(window.events, key=lambda e: (e.at, e.seq))
    since_trip = ordered[max((i for i, e in enumerate(ordered) if e.kind == "tripped"), default=-1) + 1 :]
    probes = [e for e in since_trip if e.kind == "probe" and e.sent is not None and e.bad is not None]
    tried = ""
    if probes:
        counts = ", ".join(f"{e.bad:,} of {e.sent:,}" for e in probes[-5:])
        tried = f", after {len(probes)} probe(s) since the trip ({counts} requests bad)"
    # What the bad requests were: stub pages from a site that is down answer 200, timeouts are a
    # proxy pool or a slow site, 429s a crawl too fast; each has its own fix.
    kinds = _bad_request_kinds(report)
    return Draft(
        f"the failure-window breaker stopped the run at request {last.seq:,}{ratio}{limit}{tried}{kinds}",
        threshold,
        last.ratio,
    )


def layout(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    pages = report.pages
    if pages is None or pages.fetched == 0 or report.collected > 0 or pages.lost > 0:
        return None
    return Draft(
        f"{pages.fetched:,} listing page(s) came back but yielded no records: "
        "a stub page or a changed layout, not an empty catalogue",
        1,
        0,
    )


def field_coverage(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    below = [
        row
        for row in coverage_of_fields(report.fields, report.collected, settings, history.baseline, history.shares)
        if row.below
    ]
    if not below:
        return None
    worst, others = below[0], below[1:]
    if worst.omitted:
        seen = f"missing from the report (counted as {_percent(0.0, _floor_of(worst))} of {report.collected:,} records)"
    else:
        seen = f"filled in {_percent(worst.coverage, _floor_of(worst))} of {report.collected:,} records"
    message = f"{worst.name} {seen}, floor {_floor(worst, settings)}"
    if others:
        shown = "; ".join(f"{row.name} {_share(row)}, floor {_floor(row, settings)}" for row in others[:4])
        more = f"; and {len(others) - 4} more" if len(others) > 4 else ""
        message += f"; also {shown}{more}"
    # Six places, not four: a floor of 0.890508 stored as 0.8905 printed "89.0%" beside the message's
    # "89.1%" on the same run page.
    return Draft(message, round(_floor_of(worst), 6), round(worst.coverage, 6))


def _floor_of(row: FieldCoverage) -> float:
    assert row.floor is not None, "only a row with a floor can be below it"
    return row.floor


def _share(row: FieldCoverage) -> str:
    return "missing" if row.omitted else _percent(row.coverage, _floor_of(row))


def _floor(row: FieldCoverage, settings: RuleSettings) -> str:
    floor = _percent(_floor_of(row), row.coverage)
    if row.minimum:
        return f"{floor} (operator minimum)"
    if row.learned is not None:
        usually = f"usually {row.learned.centre:.1%} over {row.learned.runs} runs"
        if row.learned.centre < OPTIONAL_BELOW:
            # Its floor is far under its usual coverage by design: say why, or 2.9% beside 30.5% reads as a slip.
            return (
                f"{floor} (an optional field, {usually}: only its emptying counts, below a third of its"
                f" lowest ordinary {row.learned.low_quantile:.1%})"
            )
        return f"{floor} ({usually})"
    return f"{floor} (baseline {row.baseline_coverage:.1%} minus {settings.field_drop * 100:g} points)"


def _percent(value: float, other: float) -> str:
    """One decimal, or two where one would print a value and the one it is compared with alike."""
    if f"{value:.1%}" == f"{other:.1%}" and value != other:
        return f"{value:.2%}"
    return f"{value:.1%}"


# The part of the source's band a level's fall must exceed where the source has no rhythm. The band is
# a forecast's, and the seven days' median a forecast starts from errs too (a tenth of the band); the
# trend compares runs' medians with each other. Simulated on a healthy source's own noise, the three
# runs' median (the run itself as well) falls below the best five runs' median of 30 days by 3.0 of
# the runs' standard deviations one time in 600: 85% of a band of 3.24 forecast deviations. Where the
# source has a rhythm each level carries its slot factor's error too, and on the fleet backtest feeds
# of a hundred items alarmed at 85%: they keep the whole band (docs/decisions.md).
TREND_BAND_SHARE = 0.85


def trend(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    """The slow decline: each run within drop_threshold of the one before, the source still shrinking."""
    if report.declared_total is not None or drop(report, settings, history) is not None:
        return None
    if history.normal is not None:
        return _level_trend(settings, history, report.started_at)
    reference = history.trend
    if reference is None or reference.runs < settings.trend_min_runs:
        return None
    if report.collected >= (1 - settings.drop_threshold) * reference.best:
        return None
    fall = 1 - report.collected / reference.best
    return Draft(
        f"collected {report.collected:,}, {fall:.1%} below the best {_trend_window(reference.anchored_at, settings)} "
        f"({reference.best:,} on {reference.best_started_at:%Y-%m-%d}); "
        f"a decline of more than {settings.drop_threshold:.0%} over {reference.runs} good runs marks a run incomplete"
        f"{_until_normal(settings)}",
        reference.best,
        report.collected,
    )


def _level_trend(settings: RuleSettings, history: History, started_at: datetime) -> Draft | None:
    """With the source's normal: levels with the rhythm taken out, a robust reference, no single run,
    and never a fall that lies within the source's own run-to-run noise."""
    levels, normal = history.level_trend, history.normal
    if levels is None or normal is None or levels.runs < settings.trend_min_runs:
        return None
    share = 1.0 if normal.rhythmic else TREND_BAND_SHARE
    threshold = max(settings.drop_threshold, 1 - math.exp(-share * normal.band))
    floor = (1 - threshold) * levels.reference
    # The run itself must lie below that floor too (a run back at its level is no decline), and by as
    # much more as its slot varies more than a typical run: a Sunday of a feed of a few dozen items, a
    # third of a weekday's count, spreads wider than the runs the band above is for. Measured at the
    # reference level, so that a source whose expectation has begun to follow a loss is judged no softer.
    slot_count = levels.reference * normal.factor(started_at)
    wider = normal.z * (normal.spread_at(slot_count) - normal.spread_at(normal.typical_count))
    own_floor = floor * math.exp(-max(wider, 0.0))
    if levels.current >= floor or levels.own >= own_floor:
        return None
    fall = 1 - levels.current / levels.reference
    rhythm = ", the rhythm taken out" if normal.rhythmic else ""
    return Draft(
        f"level {levels.current:,.0f} (this run and the two before it{rhythm}), "
        f"{fall:.1%} below the best {_trend_window(levels.anchored_at, settings)} "
        f"({levels.reference:,.0f}: five good runs around {levels.reference_at:%Y-%m-%d}); "
        f"a decline of more than {threshold:.0%} over {levels.runs} good runs marks a run incomplete",
        round(levels.reference),
        round(levels.current),
    )


def _until_normal(settings: RuleSettings) -> str:
    # The fixed rules judge only a source without its normal: an on-call reading "a drop of 25%" of a
    # new feed's Saturday learns why a weekend alarms now and will not once the source has learned it.
    return f" while the source has no normal yet ({settings.learn_min_runs} runs over {MIN_SPAN.days} days)"


def _trend_window(anchored_at: datetime | None, settings: RuleSettings) -> str:
    if anchored_at is not None:
        return f"since {anchored_at:%Y-%m-%d}, when its size was last confirmed"
    return f"of the last {settings.trend_days} days"


def delivery(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    d = report.delivery
    if d is None or d.delivered >= d.attempted:
        return None
    kinds = ", ".join(f"{kind}: {count:,}" for kind, count in sorted(d.errors.items()))
    errors = f" ({kinds})" if kinds else ""
    return Draft(
        f"delivered {d.delivered:,} of {d.attempted:,} records downstream{errors}",
        d.attempted,
        d.delivered,
    )


def pacing_equilibrium_ratio(backoff: float, recovery: float) -> float:
    """p* = ln(1/recovery) / (ln(backoff) + ln(1/recovery)): the failure rate an adaptive delay settles at.

    Written with -ln(recovery): 1/recovery overflows to infinity for a recovery of 5e-324, and
    inf/inf is NaN, which no database stores. Both logarithms are finite and positive for every
    float the contract accepts (backoff > 1, 0 < recovery < 1), so p* is a share in [0, 1]."""
    towards_recovery = -math.log(recovery)
    return towards_recovery / (math.log(backoff) + towards_recovery)


def _bad_classes(report: RunReport) -> frozenset[str]:
    window = report.failure_window
    configured = window.bad_classes if window is not None and window.bad_classes is not None else DEFAULT_BAD_CLASSES
    # not_found is attrition whatever a crawler's breaker was told.
    return frozenset(configured) - {"not_found"}


def bad_request_ratio(report: RunReport) -> float | None:
    requests = report.requests
    if requests is None or requests.effective_total == 0:
        return None
    bad_classes = _bad_classes(report)
    bad = sum(count for cls, count in requests.by_class.items() if cls in bad_classes)
    return bad / requests.effective_total


def _bad_request_kinds(report: RunReport) -> str:
    """ "; bad requests in the run: short_body 180, timeout 20": the three largest bad classes."""
    by_class = report.requests.by_class if report.requests is not None else {}
    bad_classes = _bad_classes(report)
    bad = sorted((-count, cls) for cls, count in by_class.items() if cls in bad_classes and count)
    if not bad:
        return ""
    return "; bad requests in the run: " + ", ".join(f"{cls} {-count:,}" for count, cls in bad[:3])


def pacing_equilibrium(report: RunReport, settings: RuleSettings, history: History) -> Draft | None:
    pacing = report.pacing
    ratio = bad_request_ratio(report)
    if pacing is None or ratio is None:
        return None
    p_star = pacing_equilibrium_ratio(pacing.backoff, pacing.recovery)
    if abs(ratio - p_star) > 0.25 * p_star:
        return None
    return Draft(
        f"bad-request ratio {ratio:.1%} lies within a quarter of the pacing equilibrium {p_star:.1%} "
        f"(backoff {pacing.backoff:g}, recovery {pacing.recovery:g}): the crawler's own pacing, "
        "not the site, sets this failure rate",
        round(p_star, 4),
        round(ratio, 4),
    )


def snapshot_overwritten(report: RunReport, baseline: int | None) -> Draft | None:
    """Asked by the engine only once another enforced rule has fired."""
    snapshot = report.snapshot
    if snapshot is None or snapshot.action != "replaced":
        return None
    rows = snapshot.rows if snapshot.rows is not None else report.collected
    # "with 1,200 rows over the last complete snapshot of 9,000" read as 1,200 more than 9,000.
    before = f" where the last complete one held {baseline:,}" if baseline is not None else ""
    return Draft(
        f"a partial run replaced the published snapshot with {rows:,} rows{before}: data loss downstream",
        baseline,
        rows,
    )


CHECKS: dict[str, Rule] = {
    "declared_total": declared_total,
    "mass_removal": mass_removal,
    "drop": drop,
    "below_expected": below_expected,
    "layout": layout,
    "field_coverage": field_coverage,
    "trend": trend,
    "lost_pages": lost_pages,
    "records_lost": records_lost,
    "breaker_stopped": breaker_stopped,
    "failed_batches": failed_batches,
    "crawler_reported": crawler_reported,
    "delivery": delivery,
    "pacing_equilibrium": pacing_equilibrium,
}

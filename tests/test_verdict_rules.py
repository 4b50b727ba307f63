"""Each rule of verdicts.md, pure: it fires on the bad case and stays silent on the healthy case beside it."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from completeness.report import RunReport
from completeness.verdicts import NO_HISTORY, Baseline, History, Mode, RuleSettings, Verdict, judge
from completeness.verdicts.rules import pacing_equilibrium_ratio
from sources.templatetags.dashboard import finding_value
from tests.conftest import report

DEFAULTS = RuleSettings()


def make(**fields) -> RunReport:
    return RunReport.model_validate_json(json.dumps(report(**fields)))


def past(baseline: int | None) -> History:
    return History(baseline=Baseline(baseline)) if baseline is not None else NO_HISTORY


def fired(report: RunReport, baseline: int | None = None, settings: RuleSettings = DEFAULTS) -> dict:
    return {f.rule: f for f in judge(report, settings, past(baseline)).findings}


# (rule, bad report + baseline, healthy report + baseline beside it)
PAIRS = [
    (
        "declared_total",
        (make(declared_total=1000, collected=989), None),
        (make(declared_total=1000, collected=990), None),
    ),
    (
        "declared_total",
        (make(declared_total=1000, removed=35, collected=950), None),
        (make(declared_total=1000, removed=35, collected=965), None),
    ),
    # A quarter of the declared total "removed" in one run: record pages answering 404 from a broken site.
    (
        "mass_removal",
        (make(declared_total=9000, removed=2251, collected=6749), None),
        (make(declared_total=9000, removed=2250, collected=6750), None),
    ),
    # As many removed, but everything announced came in: the count of removed is off, nothing is missing.
    (
        "mass_removal",
        (make(declared_total=1000, removed=400, collected=600), None),
        (make(declared_total=1000, removed=400, collected=990), None),
    ),
    ("drop", (make(collected=749), 1000), (make(collected=750), 1000)),
    ("lost_pages", (make(pages={"fetched": 14, "lost": 1}), None), (make(pages={"fetched": 14, "lost": 0}), None)),
    ("records_lost", (make(collected=293, records_lost=3), None), (make(collected=296, records_lost=0), None)),
    ("crawler_reported", (make(crawler_verdict="incomplete"), None), (make(crawler_verdict="complete"), None)),
    ("crawler_reported", (make(exit_code=1), None), (make(exit_code=0), None)),
    ("crawler_reported", (make(exit_code=3, crawler_verdict="complete"), None), (make(exit_code=None), None)),
    (
        "failed_batches",
        (make(failed_batches=[{"name": "listings", "rows": 500, "error": "deadlock"}]), None),
        (make(failed_batches=[]), None),
    ),
    ("failed_batches", (make(written=999), None), (make(written=1000), None)),
    (
        "breaker_stopped",
        (
            make(
                failure_window={
                    "events": [
                        {"at": "2026-09-15T03:10:00Z", "seq": 10, "kind": "tripped", "ratio": 0.4},
                        {"at": "2026-09-15T03:30:00Z", "seq": 10, "kind": "stopped", "ratio": 0.5},
                    ]
                }
            ),
            None,
        ),
        (
            make(
                failure_window={
                    "events": [
                        {"at": "2026-09-15T03:10:00Z", "seq": 10, "kind": "tripped", "ratio": 0.4},
                        {"at": "2026-09-15T03:15:00Z", "seq": 10, "kind": "probe", "sent": 20, "bad": 1},
                        {"at": "2026-09-15T03:15:05Z", "seq": 10, "kind": "resumed"},
                    ]
                }
            ),
            None,
        ),
    ),
    (
        "layout",
        (make(collected=0, pages={"fetched": 80, "lost": 0}), None),
        (make(collected=1, pages={"fetched": 80, "lost": 0}), None),
    ),
    (
        "delivery",
        (make(delivery={"attempted": 100, "delivered": 99, "errors": {"timeout": 1}}), None),
        (make(delivery={"attempted": 100, "delivered": 100}), None),
    ),
    (
        "pacing_equilibrium",
        (
            make(
                pacing={"backoff": 2.0, "recovery": 0.9},
                requests={"total": 1000, "by_class": {"ok": 870, "http_429": 130}},
            ),
            None,
        ),
        (
            make(
                pacing={"backoff": 2.0, "recovery": 0.9},
                requests={"total": 1000, "by_class": {"ok": 980, "http_429": 20}},
            ),
            None,
        ),
    ),
]


@pytest.mark.parametrize("rule,bad,healthy", PAIRS, ids=[p[0] for p in PAIRS])
def test_rule_fires_on_bad_and_stays_silent_beside_it(rule, bad, healthy):
    finding = fired(*bad).get(rule)
    assert finding is not None, f"{rule} did not fire on the bad case"
    assert finding.message
    assert finding.expected is not None or finding.actual is not None
    assert rule not in fired(*healthy)


def test_declared_total_finding_says_expected_and_actual():
    f = fired(make(declared_total=9000, collected=1200))["declared_total"]
    assert (f.expected, f.actual) == (9000, 1200)
    # "declared", not "expected": the source page counts records short against the run's normal too.
    assert f.message.startswith("collected 1,200 of 9,000 declared: 13.3%")
    removed = fired(make(declared_total=9000, removed=44, collected=1200))["declared_total"]
    assert removed.message.startswith("collected 1,200 of 8,956 (9,000 declared, 44 removed): 13.4%")


def test_declared_total_with_everything_removed_expects_nothing():
    assert "declared_total" not in fired(make(declared_total=10, removed=10, collected=0))


def test_a_mass_removal_hiding_a_loss_is_incomplete_and_says_what_was_removed():
    # The kit counts a record's 404/410 as removed: a site whose record pages all answer 404 after a
    # deploy "removed" 7,800 of 9,000, and the 1,200 collected were 100% of the rest.
    broken = make(declared_total=9000, removed=7800, collected=1200, snapshot={"action": "replaced", "rows": 1200})
    judgement = judge(broken, DEFAULTS, NO_HISTORY)
    assert judgement.verdict is Verdict.INCOMPLETE and judgement.silent
    assert [f.rule for f in judgement.findings] == ["snapshot_overwritten", "mass_removal"]
    finding = judgement.findings[1]
    assert (finding.expected, finding.actual) == (9000, 1200)
    assert finding.message.startswith(
        "7,800 of 9,000 declared records reported removed during the run (86.7%), collected 1,200; "
    )
    # Everything removed and nothing collected is the same failure, not "nothing left to miss".
    assert "mass_removal" in fired(make(declared_total=10, removed=10, collected=0))
    # Ordinary attrition stays attrition (example s04), and the operator may observe the rule.
    assert fired(make(declared_total=1000, removed=35, collected=965)) == {}
    observed = RuleSettings(modes={"mass_removal": Mode.OBSERVE})
    judgement = judge(broken, observed, NO_HISTORY)
    assert judgement.verdict is Verdict.COMPLETE and [f.rule for f in judgement.findings] == ["mass_removal"]


def test_min_completeness_is_per_source():
    report = make(declared_total=1000, collected=950)
    assert "declared_total" in fired(report)
    assert "declared_total" not in fired(report, settings=RuleSettings(min_completeness=0.9))


def test_drop_is_not_applied_where_the_source_declares_a_total():
    assert "drop" not in fired(make(declared_total=1200, collected=1200), baseline=9000)


def test_drop_needs_a_baseline():
    assert "drop" not in fired(make(collected=1))


def test_drop_message_matches_the_spec_example():
    f = fired(make(collected=1200), baseline=9000)["drop"]
    assert (f.expected, f.actual) == (9000, 1200)
    assert f.message.startswith("collected 1,200, 86.7% below the last complete snapshot (9,000)")
    # Only a source without its normal is judged so: the on-call reader learns why a new feed's weekend alarms.
    assert f.message.endswith("marks a run incomplete while the source has no normal yet (10 runs over 14 days)")


def test_drop_threshold_is_per_source():
    assert "drop" not in fired(make(collected=600), 1000, RuleSettings(drop_threshold=0.5))
    assert "drop" in fired(make(collected=499), 1000, RuleSettings(drop_threshold=0.5))


@pytest.mark.parametrize(
    "end_reason, says",
    [
        (None, "1 listing page(s) could not be fetched after retries: https://shop.test/list?page=3;"),
        ("finished", "1 listing page(s) could not be fetched after retries: https://shop.test/list?page=3;"),
        (
            "closespider_timeout",
            "1 listing page(s) could not be fetched after retries, or not yet fetched when the run ended"
            " (closespider_timeout): https://shop.test/list?page=3;",
        ),
    ],
)
def test_a_lost_page_of_a_run_that_ended_early_may_never_have_been_fetched(end_reason, says):
    pages = {"fetched": 2, "lost": 1, "lost_urls": ["https://shop.test/list?page=3"]}
    finding = fired(make(pages=pages, end_reason=end_reason))["lost_pages"]
    assert finding.message.startswith(says), finding.message


def test_a_lost_page_finding_counts_the_pages_the_report_does_not_name():
    # A crawl cut short with 12,000 listing pages waiting names 1,000 of them (the crawler kit's bound).
    urls = [f"https://shop.test/list?page={n}" for n in range(2, 1_002)]
    finding = fired(make(pages={"fetched": 1, "lost": 12_000, "lost_urls": urls}))["lost_pages"]
    assert "page=4 and 11,997 more;" in finding.message, finding.message
    five = [f"https://shop.test/list?page={n}" for n in range(2, 7)]
    assert "page=4 and 2 more;" in fired(make(pages={"fetched": 1, "lost": 5, "lost_urls": five}))["lost_pages"].message


def test_layout_does_not_blame_a_lost_page():
    assert "layout" not in fired(make(collected=0, pages={"fetched": 80, "lost": 1}))


def test_breaker_judges_the_last_event_in_time_not_in_list_order():
    events = [
        {"at": "2026-09-15T03:30:00Z", "seq": 30, "kind": "resumed"},
        {"at": "2026-09-15T03:10:00Z", "seq": 10, "kind": "stopped", "ratio": 0.5},
    ]
    assert "breaker_stopped" not in fired(make(failure_window={"events": events}))


def test_breaker_stop_told_after_a_probe_of_the_same_instant_is_the_last_event():
    # Timestamps of whole seconds: the last failed probe and the stop share `at` and `seq`.
    at = "2026-09-15T03:10:00Z"
    events = [
        {"at": at, "seq": 50, "kind": "tripped", "ratio": 0.6, "samples": 50},
        *({"at": at, "seq": 50, "kind": "probe", "sent": 20, "bad": 20} for _ in range(3)),
        {"at": at, "seq": 50, "kind": "stopped", "ratio": 0.6, "samples": 50},
    ]
    stopped = fired(make(failure_window={"threshold": 0.35, "events": events}))["breaker_stopped"]
    # The trip's ratio alone reads as a borderline stop; the probes say the site stayed down.
    assert stopped.message == (
        "the failure-window breaker stopped the run at request 50 at a bad-request ratio of 60.0% (threshold 35.0%), "
        "after 3 probe(s) since the trip (20 of 20, 20 of 20, 20 of 20 requests bad)"
    )


def test_a_breaker_stop_names_the_bad_requests_that_filled_it_largest_first():
    # A site down behind 200 stubs, a dead proxy pool, a crawl too fast: each has its own fix.
    window = {"events": [{"at": "2026-09-15T03:30:00Z", "seq": 200, "kind": "stopped", "ratio": 0.9}]}
    by_class = {"ok": 40, "short_body": 180, "timeout": 20, "http_429": 20, "http_5xx": 3, "not_found": 500}
    stopped = fired(make(failure_window=window, requests={"by_class": by_class}))["breaker_stopped"]
    assert stopped.message.endswith("; bad requests in the run: short_body 180, http_429 20, timeout 20")
    # Classes the crawler's breaker was told are bad are the ones named; not_found is attrition always.
    told = {**window, "bad_classes": ["timeout", "not_found"]}
    stopped = fired(make(failure_window=told, requests={"by_class": by_class}))["breaker_stopped"]
    assert stopped.message.endswith("; bad requests in the run: timeout 20")
    # No request counts sent: nothing to name.
    assert "bad requests" not in fired(make(failure_window=window))["breaker_stopped"].message


def test_breaker_and_pacing_findings_give_ratios_in_percent_as_the_run_page_does():
    window = {
        "threshold": 0.35,
        "events": [{"at": "2026-09-15T03:30:00Z", "seq": 2600, "kind": "stopped", "ratio": 0.58}],
    }
    stopped = fired(make(failure_window=window))["breaker_stopped"]
    assert (
        stopped.message
        == "the failure-window breaker stopped the run at request 2,600 at a bad-request ratio of 58.0% (threshold 35.0%)"
    )
    assert (finding_value(stopped.expected, "breaker_stopped"), finding_value(stopped.actual, "breaker_stopped")) == (
        "35.0%",
        "58.0%",
    )
    pacing = make(
        pacing={"backoff": 2.0, "recovery": 0.9}, requests={"total": 1000, "by_class": {"ok": 870, "http_429": 130}}
    )
    assert fired(pacing)["pacing_equilibrium"].message.startswith(
        "bad-request ratio 13.0% lies within a quarter of the pacing equilibrium 13.2%"
    )


def test_pacing_equilibrium_of_the_spec():
    assert pacing_equilibrium_ratio(2.0, 0.9) == pytest.approx(0.132, abs=0.001)


def test_pacing_never_counts_not_found_as_bad():
    report = make(
        pacing={"backoff": 2.0, "recovery": 0.9},
        requests={"total": 1000, "by_class": {"ok": 870, "not_found": 130}},
        failure_window={"bad_classes": ["not_found", "http_5xx"]},
    )
    assert "pacing_equilibrium" not in fired(report)


def test_pacing_uses_the_crawlers_bad_classes():
    by_class = {"ok": 870, "http_4xx_other": 130}
    plain = make(pacing={"backoff": 2.0, "recovery": 0.9}, requests={"total": 1000, "by_class": by_class})
    assert "pacing_equilibrium" not in fired(plain)
    told = make(
        pacing={"backoff": 2.0, "recovery": 0.9},
        requests={"total": 1000, "by_class": by_class},
        failure_window={"bad_classes": ["http_4xx_other"]},
    )
    assert "pacing_equilibrium" in fired(told)


def test_snapshot_overwritten_fires_only_with_another_enforced_rule():
    partial = make(collected=1200, snapshot={"action": "replaced", "rows": 1200})
    f = fired(partial, baseline=9000)
    assert {"drop", "snapshot_overwritten"} <= set(f)
    assert f["snapshot_overwritten"].mode is Mode.ENFORCE
    assert f["snapshot_overwritten"].message == (
        "a partial run replaced the published snapshot with 1,200 rows where the last complete one held 9,000: "
        "data loss downstream"
    )
    healthy = make(collected=9000, snapshot={"action": "replaced", "rows": 9000})
    assert fired(healthy, baseline=9000) == {}
    kept = make(collected=1200, snapshot={"action": "kept_previous", "rows": 9000})
    assert "snapshot_overwritten" not in fired(kept, baseline=9000)


def test_snapshot_overwritten_ignores_observed_rules():
    report = make(
        collected=1000,
        snapshot={"action": "replaced"},
        delivery={"attempted": 10, "delivered": 5},
    )
    assert set(fired(report)) == {"delivery"}


def test_snapshot_overwritten_cannot_be_observed_away():
    settings = RuleSettings(modes={"snapshot_overwritten": Mode.OBSERVE})
    report = make(collected=1200, snapshot={"action": "replaced"})
    assert fired(report, 9000, settings)["snapshot_overwritten"].mode is Mode.ENFORCE


def test_observed_rule_is_stored_but_does_not_make_the_run_incomplete():
    report = make(pages={"fetched": 10, "lost": 2})
    observed = judge(report, RuleSettings(modes={"lost_pages": Mode.OBSERVE}))
    assert observed.verdict is Verdict.COMPLETE and observed.observed_rules == ["lost_pages"]
    enforced = judge(report, DEFAULTS)
    assert enforced.verdict is Verdict.INCOMPLETE and enforced.enforced_rules == ["lost_pages"]


def test_delivery_and_pacing_are_observed_by_default():
    report = make(delivery={"attempted": 10, "delivered": 5})
    assert judge(report, DEFAULTS).verdict is Verdict.COMPLETE


@pytest.mark.parametrize(
    "exit_code,crawler_verdict,silent",
    [(0, None, True), (None, None, True), (0, "complete", True), (1, None, False), (0, "incomplete", False)],
)
def test_silent_only_when_the_crawler_claimed_success(exit_code, crawler_verdict, silent):
    report = make(collected=10, exit_code=exit_code, crawler_verdict=crawler_verdict)
    judgement = judge(report, DEFAULTS, past(1000))
    assert judgement.verdict is Verdict.INCOMPLETE
    assert judgement.silent is silent
    assert judgement.exit_code == 3


def test_complete_run_is_never_silent():
    judgement = judge(make(), DEFAULTS, past(1000))
    assert (judgement.verdict, judgement.silent, judgement.exit_code) == (Verdict.COMPLETE, False, 0)


def test_paused_report_or_paused_source_judges_nothing():
    bad = make(collected=0, pages={"fetched": 5, "lost": 5}, paused=True)
    judgement = judge(bad, DEFAULTS, past(1000))
    assert (judgement.verdict, judgement.findings, judgement.exit_code) == (Verdict.PAUSED, (), 0)
    judgement = judge(make(collected=0), DEFAULTS, past(1000), source_paused=True)
    assert (judgement.verdict, judgement.silent) == (Verdict.PAUSED, False)


def test_findings_are_ordered_by_severity():
    report = make(collected=0, snapshot={"action": "replaced"}, pages={"fetched": 3, "lost": 0})
    rules = [f.rule for f in judge(report, DEFAULTS, past(500)).findings]
    assert rules == ["snapshot_overwritten", "drop", "layout"]


def test_a_run_its_crawler_calls_incomplete_is_never_complete_and_not_silent():
    # A first run that collected nothing and said so: no baseline, no total, only the crawler's word.
    judgement = judge(make(collected=0, exit_code=3, crawler_verdict="incomplete", end_reason="shutdown"), DEFAULTS)
    assert judgement.verdict is Verdict.INCOMPLETE and judgement.enforced_rules == ["crawler_reported"]
    assert judgement.silent is False
    assert "end reason: shutdown" in judgement.findings[0].message


def test_records_lost_after_retries_is_loss_whatever_the_count_and_silent_when_the_crawler_exited_0():
    judgement = judge(make(collected=293, records_lost=3, exit_code=0), DEFAULTS, past(296))
    assert judgement.enforced_rules == ["records_lost"] and judgement.silent is True
    assert (judgement.findings[0].expected, judgement.findings[0].actual) == (0, 3)


@pytest.mark.parametrize(
    "backoff, recovery",
    [
        (2.0, 5e-324),
        (2.0, 1e-308),
        (1.0000000000000002, 5e-324),
        (1.7976931348623157e308, 5e-324),
        (1.0000000000000002, 0.9999999999999999),
        (1.7976931348623157e308, 0.9999999999999999),
    ],
)
def test_the_pacing_equilibrium_is_a_finite_share_for_every_pacing_the_contract_accepts(backoff, recovery):
    # 1/5e-324 is infinity, and inf/inf was NaN: a finding PostgreSQL refuses to store.
    p_star = pacing_equilibrium_ratio(backoff, recovery)
    assert math.isfinite(p_star) and 0.0 <= p_star <= 1.0


@hypothesis_settings(max_examples=300, deadline=None)
@given(
    backoff=st.floats(min_value=1.0, exclude_min=True, allow_infinity=False),
    recovery=st.floats(min_value=0.0, max_value=1.0, exclude_min=True, exclude_max=True),
    bad=st.integers(0, 2**31 - 1),
    ok=st.integers(0, 2**31 - 1),
)
def test_every_float_the_pacing_rule_computes_is_finite(backoff, recovery, bad, ok):
    bad, ok = min(bad, 2**31 - 1 - ok), ok
    run = make(pacing={"backoff": backoff, "recovery": recovery}, requests={"by_class": {"ok": ok, "http_5xx": bad}})
    for finding in judge(run, DEFAULTS, NO_HISTORY).findings:
        for value in (finding.expected, finding.actual):
            assert value is None or math.isfinite(value), finding


def test_a_failed_batch_sent_without_its_rows_is_not_said_to_have_lost_none():
    counted = fired(make(failed_batches=[{"name": "listings", "rows": 500}]))
    assert counted["failed_batches"].message == "1 store write(s) failed: listings (500 rows)"
    uncounted = fired(make(failed_batches=[{"name": "listings"}]))
    assert uncounted["failed_batches"].message == "1 store write(s) failed: listings (rows not counted)"


def test_a_failed_batch_says_the_first_error_the_crawler_gave_on_one_line():
    batches = [
        {"name": "listings", "rows": 500},
        {"name": "offers", "rows": 20, "error": "deadlock detected\nDETAIL: Process 4242 waits for ShareLock"},
        {"name": "prices", "rows": 3, "error": "another"},
    ]
    message = fired(make(failed_batches=batches))["failed_batches"].message
    assert message == (
        "3 store write(s) failed: listings (500 rows), offers (20 rows), prices (3 rows);"
        " first error: deadlock detected DETAIL: Process 4242 waits for ShareLock"
    )
    long = fired(make(failed_batches=[{"name": "x", "rows": 1, "error": "e" * 2000}]))["failed_batches"].message
    assert long.endswith("first error: " + "e" * 160)


def test_a_failed_batch_quotes_its_first_error_redacted_as_the_run_page_shows_it():
    # An HTTP store's error names the path it failed on, a webhook's secret included; the finding's
    # message reaches alerts and the overview, whose redaction keeps bare paths.
    error = (
        "HTTPSConnectionPool(host='hooks.example.com', port=443): Max retries exceeded with url:"
        " /services/T000/B000/XXXXSECRETXXXX (Caused by ConnectTimeoutError)"
    )
    message = fired(make(failed_batches=[{"name": "sink", "rows": 9, "error": error}]))["failed_batches"].message
    assert "XXXXSECRET" not in message
    assert "first error: HTTPSConnectionPool(host='hooks.example.com', port=443): Max retries exceeded" in message
    # An error with no secret in it is quoted as it came.
    plain = fired(make(failed_batches=[{"name": "sink", "rows": 9, "error": "disk full"}]))["failed_batches"].message
    assert plain.endswith("first error: disk full")

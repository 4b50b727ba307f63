from __future__ import annotations

import json

import pytest
from reports import minimal_report

from completeness_client import FailureWindowBreaker, ManualClock, ProxyPool, ReportInvalid, RunReport, validate_report


def paths(report) -> set[str]:
    return {e.path for e in validate_report(report)}


def test_minimal_report_is_valid():
    assert validate_report(minimal_report()) == []


def test_required_fields():
    assert paths({}) == {"source", "run_id", "started_at", "finished_at", "collected"}
    assert paths([]) == {""}


@pytest.mark.parametrize(
    "field, value",
    [
        ("source", "Dubizzle AE"),
        ("source", ""),
        ("run_id", ""),
        ("run_id", "x" * 201),
        ("started_at", "2026-09-14T03:00:00"),
        ("started_at", "yesterday"),
        ("finished_at", "2026-09-14T02:00:00Z"),
        ("collected", -1),
        ("collected", 1.5),
        ("collected", True),
        ("declared_total", -3),
        ("removed", -1),
        ("crawler_verdict", "fine"),
        ("paused", "yes"),
        ("exit_code", "0"),
    ],
)
def test_bad_top_level_values_are_named(field, value):
    assert field in paths(minimal_report(**{field: value}))


def test_nested_values_are_named():
    report = minimal_report(
        requests={"total": 3, "by_class": {"ok": 2, "teapot": 1, "timeout": -1}},
        pages={"expected": None, "fetched": 2, "lost": -1, "lost_urls": [3]},
        snapshot={"action": "overwrote", "rows": 1},
        failed_batches=[{"name": "b", "rows": -1, "error": "e"}],
        failure_window={
            "size": 200,
            "threshold": 0.35,
            "min_samples": 50,
            "bad_classes": ["ok", "nope"],
            "events": [{"at": "2026-09-14T03:10:00", "seq": 1, "kind": "exploded"}],
        },
        proxy_transitions=[
            {
                "proxy": "http://u:p@h:1",
                "at": "2026-09-14T03:10:00Z",
                "from": "eligible",
                "to": "dead",
                "reason": "connect_refused",
                "stage": "connect",
            }
        ],
        pacing={"backoff": 1.0, "recovery": 1.2},
        outcomes={"generated": -1},
        meta={f"k{i}": i for i in range(51)},
    )
    assert paths(report) >= {
        "requests.by_class.teapot",
        "requests.by_class.timeout",
        "pages.lost",
        "pages.lost_urls",
        "snapshot.action",
        "failed_batches[0].rows",
        "failure_window.bad_classes[1]",
        "failure_window.events[0].at",
        "failure_window.events[0].kind",
        "proxy_transitions[0].proxy",
        "proxy_transitions[0].to",
        "pacing.backoff",
        "pacing.recovery",
        "outcomes.generated",
        "meta",
    }


def test_lost_urls_may_name_some_lost_pages_never_more():
    some = minimal_report(pages={"fetched": 9, "lost": 3, "lost_urls": ["https://s.example/p7"]})
    assert "pages.lost_urls" not in paths(some)
    more = minimal_report(
        pages={"fetched": 9, "lost": 1, "lost_urls": ["https://s.example/p7", "https://s.example/p8"]}
    )
    assert "pages.lost_urls" in paths(more)


def test_builder_makes_a_valid_report_and_judges_itself():
    clock = ManualClock()
    breaker = FailureWindowBreaker(clock=clock)
    report = RunReport("dubizzle-ae", "run-1", breaker=breaker, proxy_pool=ProxyPool(["p1"], clock=clock), clock=clock)
    report.declared_total = 100
    report.collected = 98
    report.removed = 2
    for _ in range(120):
        report.observe_request("ok")
    report.observe_request("not_found")
    report.page_fetched()
    clock.advance(60)
    built = report.build()
    assert validate_report(built) == []
    assert built["crawler_verdict"] == "complete" and built["exit_code"] == 0
    assert built["requests"] == {
        "total": 121,
        "by_class": {**{c: 0 for c in built["requests"]["by_class"]}, "ok": 120, "not_found": 1},
    }
    assert built["finished_at"] == "2026-09-14T03:01:00Z"
    assert built["failure_window"]["events"] == [] and built["proxy_transitions"] == []
    json.dumps(built)  # serialisable as is


def test_builder_says_incomplete_on_a_lost_page_beside_a_healthy_run():
    clock = ManualClock()
    report = RunReport("s", "r", clock=clock)
    report.declared_total, report.collected = 20, 20
    report.page_fetched()
    assert report.crawler_verdict() == "complete"
    report.page_lost("https://site.example/list?page=2")
    built = report.build()
    assert built["crawler_verdict"] == "incomplete" and built["exit_code"] == 3
    assert built["pages"] == {
        "expected": None,
        "fetched": 1,
        "lost": 1,
        "lost_urls": ["https://site.example/list?page=2"],
    }


def test_builder_guards_the_snapshot():
    clock = ManualClock()
    published = []
    complete = RunReport("s", "r1", clock=clock)
    complete.declared_total = complete.collected = 10
    assert complete.guard_snapshot(lambda: published.append("r1") or 10) == {"action": "replaced", "rows": 10}
    partial = RunReport("s", "r2", clock=clock)
    partial.declared_total, partial.collected = 10, 3
    assert partial.guard_snapshot(lambda: published.append("r2") or 3)["action"] == "kept_previous"
    partial.written = 3
    assert partial.build()["snapshot"] == {"action": "kept_previous", "rows": None}
    assert published == ["r1"]


def test_builder_refuses_an_invalid_report_and_names_fields():
    report = RunReport("Not A Slug", "r", clock=ManualClock())
    report.collected = -1
    with pytest.raises(ReportInvalid) as caught:
        report.build()
    assert {e.path for e in caught.value.errors} == {"source", "collected"}


def test_builder_refuses_naive_timestamps():
    from datetime import datetime

    with pytest.raises(ValueError):
        RunReport("s", "r", started_at=datetime(2026, 9, 14, 3))
    report = RunReport("s", "r", clock=ManualClock())
    with pytest.raises(ValueError):
        report.build(finished_at=datetime(2026, 9, 14, 4))


def test_finished_at_never_precedes_started_at_after_a_wall_clock_step_back():
    from datetime import timedelta

    clock = ManualClock()
    report = RunReport("s", "r", clock=clock)
    built = report.build(finished_at=report.started_at - timedelta(seconds=5))
    assert built["finished_at"] == built["started_at"]


def test_default_run_id_is_unique_and_valid():
    clock = ManualClock()
    a, b = RunReport("s", clock=clock), RunReport("s", clock=clock)
    assert a.run_id != b.run_id and a.run_id.startswith("s-20260914T030000Z-")


def test_proxy_failure_kinds_are_reported_apart():
    clock = ManualClock()
    pool = ProxyPool(["p1", "p2"], clock=clock)
    report = RunReport("s", "r", proxy_pool=pool, clock=clock)
    pool.failed(pool.acquire(), "connect_refused")
    pool.failed(pool.acquire(), "slow_body")
    built = report.build()
    assert built["counters"] == {"proxy_failures_connect_refused": 1, "proxy_failures_slow_body": 1}
    assert [t["reason"] for t in built["proxy_transitions"]] == ["connect_refused", "slow_body"]


def test_a_churning_pools_transitions_are_bounded_and_each_proxys_latest_is_kept():
    # 300 proxies cooling and probed again through a long crawl wrote thousands of transitions: the
    # body passed the service's 1 MiB, it answered 413, and the run was never judged.
    from completeness_client.report import MAX_PROXY_TRANSITIONS

    clock = ManualClock()
    proxies = [f"pool-de/{n:03d}" for n in range(300)]
    pool = ProxyPool(proxies, clock=clock)
    report = RunReport("s", "r", proxy_pool=pool, clock=clock)
    while len(pool.transitions) <= MAX_PROXY_TRANSITIONS + 500:
        for _ in proxies:
            lease = pool.acquire()
            if lease is None:
                break
            pool.failed(lease, "slow_body")
        clock.advance(3600)  # every cooldown over: each proxy may be probed again
    pool.failed(pool.acquire(), "connect_refused")  # the newest change of one proxy
    everything = pool.to_report()
    built = report.build()
    sent = built["proxy_transitions"]
    assert len(sent) == MAX_PROXY_TRANSITIONS
    assert built["counters"]["proxy_transitions_left_out"] == len(everything) - MAX_PROXY_TRANSITIONS
    # Every proxy's state as its latest transition says, in the pool's order, and the newest of all.
    latest = {t["proxy"]: t for t in everything}
    assert {t["proxy"]: t for t in sent} == latest and sent[-1] == everything[-1]
    assert sent == [t for t in everything if t in sent]
    assert len(json.dumps(built)) < 512 * 1024


def test_a_pools_transitions_within_the_bound_are_all_sent():
    clock = ManualClock()
    pool = ProxyPool(["p1", "p2"], clock=clock)
    report = RunReport("s", "r", proxy_pool=pool, clock=clock)
    pool.failed(pool.acquire(), "slow_body")
    built = report.build()
    assert built["proxy_transitions"] == pool.to_report()
    assert "proxy_transitions_left_out" not in built["counters"]


def test_guard_refuses_numbers_that_were_never_filled_in_and_judges_them_once_they_are():
    published = []
    report = RunReport("s", "r", clock=ManualClock())
    decision = report.completeness()
    assert not decision.replace
    assert "collected was never filled in" in decision.reasons
    assert any(reason.startswith("declared_total was never filled in") for reason in decision.reasons)
    assert report.guard_snapshot(lambda: published.append("early") or 0)["action"] == "kept_previous"
    report.collected = 40
    report.declared_total = None  # said explicitly: the source announces no total
    assert report.guard_snapshot(lambda: published.append("final") or 40) == {"action": "replaced", "rows": 40}
    assert published == ["final"]


def test_guard_asks_the_finalizer_for_final_numbers():
    numbers = {"final": False}
    report = RunReport("s", "r", clock=ManualClock())

    def finalizer():
        if not numbers["final"]:
            return "the crawl has not ended"
        report.declared_total, report.collected = 600, 600
        return None

    report.finalizer = finalizer
    assert report.completeness().reasons == (
        "the crawl has not ended",
        "collected was never filled in",
        "declared_total was never filled in (set it to None when the source announces none)",
        "collected nothing and the source declared no total",
    )
    numbers["final"] = True
    assert report.guard_snapshot(lambda: 600) == {"action": "replaced", "rows": 600}


def test_finish_reason_and_unfetched_pages_keep_the_previous_snapshot():
    report = RunReport("s", "r", clock=ManualClock())
    report.declared_total = report.collected = 10
    assert report.completeness().replace
    report.finish_reason = "closespider_itemcount"
    assert not report.completeness().replace
    report.finish_reason = "finished"
    report.page_lost("https://site.example/list?page=2")
    report.unfetched_page_urls = ["https://site.example/list?page=2", "https://site.example/list?page=3"]
    built = report.build()
    assert built["pages"]["lost_urls"] == ["https://site.example/list?page=2", "https://site.example/list?page=3"]
    assert built["pages"]["lost"] == 2 and built["crawler_verdict"] == "incomplete"


def test_a_crawl_cut_short_with_thousands_of_listing_pages_waiting_names_a_bounded_sample():
    # The service refuses the whole report beyond 10,000 lost URLs, one over 2,000 characters or
    # 1 MiB: the run that lost the most would never be judged. Every page is still counted.
    report = RunReport("s", "r", clock=ManualClock())
    report.declared_total, report.collected = 120_000, 20
    report.finish_reason = "closespider_timeout"
    report.page_lost("https://site.example/search?q=" + "x" * 2_000)
    report.page_lost("https://site.example/list?page=2")
    tracking = "&utm_source=newsletter&utm_medium=email&utm_campaign=" + "c" * 60
    report.unfetched_page_urls = [f"https://site.example/list?page={n}{tracking}" for n in range(3, 12_003)]
    built = report.build()
    pages = built["pages"]
    assert pages["lost"] == 12_002 and built["exit_code"] == 3
    assert pages["lost_urls"][:2] == ["https://site.example/list?page=2", f"https://site.example/list?page=3{tracking}"]
    assert len(pages["lost_urls"]) == 1_000 and max(len(url) for url in pages["lost_urls"]) <= 2_000
    assert len(json.dumps(built).encode()) < 1024 * 1024 // 2


def test_lost_records_are_counted_and_keep_the_previous_snapshot():
    report = RunReport("s", "r", clock=ManualClock())
    report.declared_total, report.collected = None, 10
    report.counters["mine"] = 1
    assert report.build()["crawler_verdict"] == "complete"
    report.record_lost()
    built = report.build()
    # The count is the report's own field; a copy among the counters was listed twice on the run page.
    assert built["records_lost"] == 1 and built["crawler_verdict"] == "incomplete"
    assert built["counters"] == {"mine": 1}
    assert report.counters == {"mine": 1}  # the report's counters are the crawler's own


def test_a_paused_run_keeps_the_previous_snapshot_and_exits_0_beside_an_unpaused_one():
    report = RunReport("s", "r", clock=ManualClock())
    report.declared_total = report.collected = 10
    assert report.completeness().replace and report.build()["exit_code"] == 0
    report.pause("proxy pool migration")
    assert report.guard_snapshot(lambda: 10) == {"action": "kept_previous", "rows": None}
    built = report.build()
    assert built["paused"] is True and built["exit_code"] == 0
    assert "the run was paused: proxy pool migration" in report.completeness().reasons


def test_a_total_read_from_the_page_as_text_is_named_and_the_report_is_still_built():
    # `spider.declared_total = response.css("#total::text").get()` is "201": compared with the count,
    # it raised while the run closed, and the run was neither written nor posted.
    clock = ManualClock()
    report = RunReport("s", "r", clock=clock)
    report.collected = 200
    report.declared_total = "201"
    body = report.to_dict()
    assert body["declared_total"] == "201"
    [error] = validate_report(body)
    assert error.path == "declared_total"
    assert error.message == "must be an integer or null (got the text '201': convert it with int())"
    with pytest.raises(ReportInvalid):
        report.build()
    report.declared_total = 201
    assert report.build()["crawler_verdict"] == "complete"


def test_a_long_batch_error_or_pause_reason_is_cut_to_what_the_service_takes():
    # add_failed_batch(name, rows, str(exc)) with a driver's error, which quotes the statement of a
    # 500-row insert: the service refuses an error over 2,000 characters, and with it the whole report.
    report = RunReport("s", "r", clock=ManualClock())
    report.declared_total = report.collected = 500
    report.add_failed_batch("crm-upsert-" + "7" * 300, 500, "deadlock detected [SQL: INSERT " + "(?, ?)," * 2000)
    report.pause("proxy migration: " + "pool-ae " * 400)
    body = report.build()
    [batch] = body["failed_batches"]
    assert len(batch["name"]) == 200 and batch["name"].endswith("…")
    assert len(batch["error"]) == 2000 and batch["error"].startswith("deadlock detected [SQL: INSERT (?, ?),")
    assert len(body["pause_reason"]) == 2000
    # A report written by hand is told so before it is posted, as the service would.
    body["failed_batches"][0]["error"] += "x"
    body["pause_reason"] += "x"
    body["failed_batches"].append({"name": "", "rows": 1, "error": ""})
    assert paths(body) == {"failed_batches[0].error", "failed_batches[1].name", "pause_reason"}


def test_the_readme_says_how_a_pools_transitions_reach_the_report():
    # The pool's transitions reach the service only through the report; the README named to_report()
    # and never the report's way to it, so the proxies page stayed empty for a crawler using the pool.
    import re
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    pieces = readme[readme.index("- `proxies.ProxyPool`") :]
    construction = re.search(r"`(RunReport\([^`]*proxy_pool=pool\))`", pieces).group(1)
    pool = ProxyPool(["pool-ae/exit-1"], clock=ManualClock())
    pool.failed(pool.acquire(), "connect_refused")
    report = eval(construction, {"RunReport": RunReport, "pool": pool})
    report.declared_total = report.collected = 1
    built = report.build()
    assert [t["reason"] for t in built["proxy_transitions"]] == ["connect_refused"]
    assert built["counters"]["proxy_failures_connect_refused"] == 1
    assert "self.completeness.proxy_pool = pool" in pieces


def test_a_publish_that_raises_is_a_failed_batch_and_the_run_incomplete():
    # A spider's closed() whose publish hit a full disk: Scrapy logged the error and the run said
    # complete, exit 0, over a snapshot that was never written.
    report = RunReport("s", "r", clock=ManualClock())
    report.declared_total = report.collected = 40

    def publish() -> int:
        raise OSError("No space left on device")

    with pytest.raises(OSError):
        report.guard_snapshot(publish)
    body = report.build()
    assert body["failed_batches"] == [
        {"name": "snapshot", "rows": 40, "error": "publishing raised OSError: No space left on device"}
    ]
    assert (body["crawler_verdict"], body["exit_code"]) == ("incomplete", 3) and "snapshot" not in body


def test_validate_report_names_a_clock_without_its_zone():
    from datetime import UTC, datetime

    from completeness_client import validate_report

    report = {
        "source": "shop",
        "run_id": "r1",
        "started_at": "2026-09-15T03:00:00Z",
        "finished_at": "2026-09-15T04:00:00Z",
        "collected": 1,
    }
    assert validate_report(report, now=datetime(2026, 9, 16, tzinfo=UTC)) == []
    with pytest.raises(ValueError, match="must carry its time zone"):
        validate_report(report, now=datetime(2026, 9, 16))

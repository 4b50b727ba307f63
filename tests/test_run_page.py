"""The run page: every field, findings with expected/actual, breaker chart, proxies, rates, attrition."""

import json
import re

import pytest

from tests.conftest import report, run_report

WINDOW = {
    "size": 200,
    "threshold": 0.35,
    "min_samples": 50,
    "bad_classes": ["http_5xx", "timeout"],
    "events": [
        {"at": "2026-09-14T03:10:00Z", "seq": 1840, "kind": "tripped", "ratio": 0.41, "samples": 200},
        {"at": "2026-09-14T03:15:00Z", "seq": 1840, "kind": "probe", "sent": 20, "bad": 14},
        {"at": "2026-09-14T03:20:00Z", "seq": 1860, "kind": "probe", "sent": 20, "bad": 2},
        {"at": "2026-09-14T03:20:05Z", "seq": 1860, "kind": "resumed"},
        {"at": "2026-09-14T04:00:00Z", "seq": 4100, "kind": "stopped", "ratio": 0.52, "samples": 200},
    ],
    "series": [[0, 0.0], [200, 0.02], [1840, 0.41], [4100, 0.52]],
}


@pytest.fixture
def run_id(api):
    api.post_run(run_report("shop", 2, collected=9000))
    body = run_report(
        "shop",
        1,
        collected=1200,
        written=1100,
        removed=7,
        snapshot={"action": "replaced", "rows": 1200},
        requests={"by_class": {"ok": 900, "not_found": 7, "timeout": 40, "http_4xx_other": 3}},
        pages={"expected": 40, "fetched": 38, "lost": 2, "lost_urls": ["https://shop.test/list?page=39"]},
        failed_batches=[{"name": "prices-eu", "rows": 100, "error": "deadlock detected"}],
        delivery={"attempted": 1100, "delivered": 1000, "errors": {"crm_timeout": 100}},
        failure_window=WINDOW,
        proxy_transitions=[
            {
                "proxy": "pool-ae/exit-0193",
                "at": "2026-09-14T03:11:02Z",
                "from": "eligible",
                "to": "cooling",
                "reason": "connect_refused",
                "stage": "connect",
                "until": "2026-09-14T03:16:02Z",
            }
        ],
        outcomes={"generated": 9000, "url_filters_rejected": 1000},
        counters={"hosts_affected_per_host_overflow": 12},
        meta={"crawler": "kit 1.2"},
    )
    return api.post_run(body).json()["run"]


def test_unknown_run_is_404(staff_client):
    missing = staff_client.get("/runs/424242/")
    assert missing.status_code == 404
    # A page of the site, with its header and a way back, not a bare "Not Found".
    body = missing.content.decode()
    assert "<code>/runs/424242/</code>" in body and 'href="/">Overview</a> lists every source' in body
    assert 'class="top"' in body
    assert staff_client.get("/runs/abc/").status_code == 404


def test_findings_show_expected_and_actual(run_id, staff_client):
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    for rule in ("snapshot_overwritten", "drop", "lost_pages", "failed_batches", "breaker_stopped"):
        assert f"<code>{rule}</code>" in page
    assert (
        '<td class="num" data-label="expected">9,000</td><td class="num" data-label="actual">1,200</td>' in page
    )  # drop
    assert "SILENT" in page


def test_report_fields(run_id, staff_client):
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    for text in (
        "https://shop.test/list?page=39",
        "prices-eu",
        "deadlock detected",
        "crm_timeout",
        "1,000 of 1,100 delivered",
        "pool-ae/exit-0193",
        "connect refused",
        "kit 1.2",
        "hosts_affected_per_host_overflow",
        "never in a denominator",
    ):
        assert text in page, text
    # 40 expected = 38 fetched + 2 lost: every page accounted for, nothing more said.
    assert "neither fetched nor reported lost" not in page


def test_listing_pages_neither_fetched_nor_lost_are_counted_on_the_run_page(api, staff_client):
    # A crawler cut short that counts no unfetched page as lost (the kit counts them as lost).
    body = report(run_id="cut", declared_total=9000, collected=1200, pages={"expected": 360, "fetched": 48, "lost": 0})
    run = api.post_run(body).json()["run"]
    page = staff_client.get(f"/runs/{run}/").content.decode()
    assert "expected 360, fetched 48, lost 0; <strong>312 neither fetched nor reported lost</strong>" in page


def test_attrition_is_told_apart_from_bad_classes(run_id, staff_client):
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert re.search(r'class="req attrition"><td><code>not_found</code>', page)
    # The count holds every 404, a listing page's too, which the kit reports as a lost page: "gone at
    # the source, not a failure" beside the lost page's own 404 told ops the opposite of its finding.
    assert "attrition (a record gone at the source; a listing page's 404 is a lost page)" in page
    assert re.search(r'class="req bad"><td><code>timeout</code>', page)
    # http_4xx_other is not in this run's bad_classes: neither bad nor attrition.
    assert re.search(r'class="req other"><td><code>http_4xx_other</code>', page)


def test_outcome_rates_with_counts(run_id, staff_client):
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert '<code>generated</code></td><td class="num">9,000</td><td class="num">9,000</td>' in page
    assert '<code>url_filters_rejected</code></td><td class="num">1,000</td><td class="num">1,000</td>' in page
    # The denominator the rates are shares of: counters (hosts_affected_...) are not in it.
    assert '<th>considered (the rates\' denominator)</th><td class="num">10,000</td>' in page


def test_a_run_without_outcomes_shows_no_denominator(api, staff_client):
    run_id = api.post_run(run_report("shop", 1, collected=10)).json()["run"]
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert "No outcome counts." in page and "considered (the rates" not in page


def test_failure_window_chart(run_id, staff_client):
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    body = re.search(r'data-target="chart-window">(.*?)</script>', page, re.S).group(1)
    figure = json.loads(body)
    names = [t["name"] for t in figure["data"]]
    assert {"tripped", "probe", "resumed", "stopped", "threshold 35.0%", "min_samples 50"} <= set(names)
    probe = next(t for t in figure["data"] if t["name"] == "probe")
    assert probe["text"] == ["probe 14/20", "probe 2/20"]
    assert figure["layout"]["shapes"][0]["y0"] == 0.35


def test_a_run_without_window_has_no_chart(api, staff_client):
    run = api.post_run(run_report("plain", 1)).json()["run"]
    page = staff_client.get(f"/runs/{run}/").content.decode()
    assert "chart-window" not in page and "no failure window" in page


def test_a_window_that_never_tripped_says_so_under_its_table(api, staff_client):
    calm = {**WINDOW, "events": [], "series": [[0, 0.0], [200, 0.02]]}
    run = api.post_run(run_report("calm", 1, failure_window=calm)).json()["run"]
    page = staff_client.get(f"/runs/{run}/").content.decode()
    assert "chart-window" in page and "No breaker events in this window" in page


def test_a_window_of_settings_alone_draws_no_empty_chart_and_says_so(api, staff_client):
    # It drew empty axes, "request sequence 0 to 0", with the threshold across them.
    bare = {**WINDOW, "events": [], "series": []}
    run = api.post_run(run_report("bare", 1, failure_window=bare)).json()["run"]
    page = " ".join(staff_client.get(f"/runs/{run}/").content.decode().split())
    assert "chart-window" not in page
    assert "carried its failure window's settings (threshold 35.0%, min_samples 50) but no ratio series" in page


def test_the_exit_code_row_says_whose_each_code_is(api, staff_client):
    run = api.post_run(run_report("short", 1, collected=10, declared_total=1000)).json()["run"]
    page = " ".join(staff_client.get(f"/runs/{run}/").content.decode().split())
    assert "0 from the crawler; 3 advised by this verdict (incomplete: for a scheduler to see)" in page


def test_a_paused_run_is_not_shown_as_a_loss_against_the_snapshot_and_a_judged_one_is(api, staff_client):
    # A paused run that collected nothing read "last complete snapshot 4,091 (-100.0%); the count was
    # judged against its own normal": it was judged by nothing.
    api.post_run(run_report("jobs", 3, collected=4091))
    paused = api.post_run(run_report("jobs", 2, collected=0, paused=True)).json()
    assert paused["verdict"] == "paused"
    page = " ".join(re.sub(r"<[^>]+>", " ", staff_client.get(f"/runs/{paused['run']}/").content.decode()).split())
    assert "last complete snapshot 4,091; a paused run is not judged" in page and "-100.0%" not in page
    judged = api.post_run(run_report("jobs", 1, collected=1000)).json()
    page = " ".join(re.sub(r"<[^>]+>", " ", staff_client.get(f"/runs/{judged['run']}/").content.decode()).split())
    assert "baseline judged against 4,091 (-75.6%)" in page


def test_a_bad_class_with_no_request_in_it_is_not_marked_as_a_failure(api, staff_client):
    body = report(run_id="quiet", requests={"total": 100, "by_class": {"ok": 100, "timeout": 0}})
    run = api.post_run(body).json()["run"]
    page = staff_client.get(f"/runs/{run}/").content.decode()
    assert re.search(r'class="req bad none"><td><code>timeout</code>', page)
    assert re.search(r'class="req ok"><td><code>ok</code>', page)


def test_a_declared_run_says_its_normal_did_not_judge_it_and_how_to_accept_a_lower_share(api, staff_client):
    """An approximate total's run failed at 95%: its page listed the count's normal as if it judged
    the run, and offered "later runs are judged against 9,500" where they are judged by their totals."""
    for n in range(30, 1, -1):
        api.post_run(run_report("approx", n, collected=9900 + n % 3 * 20, declared_total=10000))
    failed = api.post_run(run_report("approx", 1, collected=9500, declared_total=10000)).json()
    assert [f["rule"] for f in failed["findings"]] == ["declared_total"] and failed["expectation"] is not None
    page = " ".join(re.sub(r"<[^>]+>", " ", staff_client.get(f"/runs/{failed['run']}/").content.decode()).split())
    assert "not what this run was judged by: it declared a total, the more precise judge" in page
    assert "the count was judged against its own normal" not in page
    assert "A run that declares a total is still judged by its share of that total, as its findings say" in page
    assert "lower min_completeness in the source's rule settings instead" in page

    # Beside it, a run without a declared total: judged by its normal, and the page says so.
    plain = api.post_run(run_report("approx", 0, collected=9920)).json()
    assert plain["expectation"] is not None
    page = " ".join(re.sub(r"<[^>]+>", " ", staff_client.get(f"/runs/{plain['run']}/").content.decode()).split())
    assert "not what this run was judged by" not in page
    assert "the count was judged against its own normal, above" in page


def _report_row(page: str, label: str) -> str:
    row = re.search(rf"<tr><th>{label}</th><td>(.*?)</td></tr>", page)
    assert row, label
    return " ".join(re.sub(r"<[^>]+>", " ", row.group(1)).split())


def test_the_report_says_whose_pause_a_paused_run_had(api, staff_client):
    # A run made while an operator had the source paused read "verdict paused" over "paused: no".
    api.post_run(run_report("shop", 2, collected=3000, declared_total=3000))
    assert api.post("/sources/shop/pause", {"reason": "site redesign", "until": None}).status_code == 200
    answer = api.post_run(run_report("shop", 1, collected=1000, declared_total=2990)).json()
    page = staff_client.get(f"/runs/{answer['run']}/").content.decode()
    assert _report_row(page, "paused by the crawler") == "no (the source was paused when it arrived)"
    answer = api.post_run(run_report("own", 1, collected=0, paused=True, pause_reason="proxy migration")).json()
    page = staff_client.get(f"/runs/{answer['run']}/").content.decode()
    assert _report_row(page, "paused by the crawler") == "yes: proxy migration"
    page = staff_client.get(f"/runs/{api.post_run(run_report('other', 1)).json()['run']}/").content.decode()
    assert _report_row(page, "paused by the crawler") == "no"


def test_a_paused_run_says_it_was_not_judged_rather_than_that_no_rule_fired(api, staff_client):
    # 1,000 of 2,990 posted while an operator had the source paused: "No rule fired." read as a clean bill
    # of health for a run that no rule looked at.
    api.post_run(run_report("shop", 2, collected=3000, declared_total=3000))
    assert api.post("/sources/shop/pause", {"reason": "site redesign", "until": None}).status_code == 200
    answer = api.post_run(run_report("shop", 1, collected=1000, declared_total=2990)).json()
    assert answer["verdict"] == "paused"
    page = staff_client.get(f"/runs/{answer['run']}/").content.decode()
    findings = page[page.index('id="findings"') : page.index("</section>", page.index('id="findings"'))]
    assert "No rule fired" not in findings
    assert "Not judged: the source was paused when it arrived" in findings
    # A run its own crawler reported paused says so, and why.
    answer = api.post_run(run_report("own", 1, collected=0, paused=True, pause_reason="proxy migration")).json()
    page = staff_client.get(f"/runs/{answer['run']}/").content.decode()
    findings = page[page.index('id="findings"') : page.index("</section>", page.index('id="findings"'))]
    assert "Not judged: its crawler reported it paused: proxy migration, so no rule looked" in findings
    # A judged run with no finding still says so.
    page = staff_client.get(f"/runs/{api.post_run(run_report('other', 1)).json()['run']}/").content.decode()
    assert "No rule fired." in page


def test_a_run_page_says_where_its_source_stands_now(api, staff_client):
    # Opened from a failing alert after the fix: the run still reads "incomplete", and nothing said
    # the source had recovered since.
    api.post_run(run_report("shop", 3, collected=9000, declared_total=9000))
    bad = api.post_run(run_report("shop", 2, collected=1200, declared_total=9000)).json()["run"]
    page = staff_client.get(f"/runs/{bad}/").content.decode()
    now = " ".join(re.sub(r"<[^>]+>", " ", re.search(r'data-part="source-now">(.*?)</p>', page).group(1)).split())
    assert now == "shop now: failing · this is its latest run"
    good = api.post_run(run_report("shop", 1, collected=9000, declared_total=9000)).json()["run"]
    page = staff_client.get(f"/runs/{bad}/").content.decode()
    found = re.search(r'data-part="source-now">(.*?)</p>', page).group(1)
    assert " ".join(re.sub(r"<[^>]+>", " ", found).split()) == "shop now: ok · its latest run started later: open it"
    assert f'href="/runs/{good}/"' in found


def test_a_mass_removal_run_says_its_removed_records_are_no_attrition_and_what_it_collected_of_the_total(
    api, staff_client
):
    # "completeness 100.0%, complete from 99.0%" stood beside an incomplete run: the share is of what
    # was left after the removed records, by the contract, and 7,800 of them were the loss.
    bad = api.post_run(run_report("shop", 2, collected=1200, declared_total=9000, removed=7800)).json()["run"]
    page = " ".join(re.sub(r"<[^>]+>", " ", staff_client.get(f"/runs/{bad}/").content.decode()).split())
    assert "removed (attrition) 7,800: not taken as attrition, more than a quarter of the declared total" in page
    assert (
        "completeness 100.0% of what was left after the removed records, complete from 99.0%; "
        "1,200 of the 9,000 declared" in page
    )
    # Its healthy neighbour: attrition is attrition, and its share is said of what was left.
    good = api.post_run(run_report("shop", 1, collected=965, declared_total=1000, removed=35)).json()["run"]
    page = " ".join(re.sub(r"<[^>]+>", " ", staff_client.get(f"/runs/{good}/").content.decode()).split())
    assert "removed (attrition) 35 completeness 100.0% of what was left after the removed records" in page
    assert "not taken as attrition" not in page and "of the 1,000 declared" not in page


def test_a_field_the_report_does_not_have_is_named_on_the_run_page(api, staff_client):
    # A typo at the top level is taken as an unknown field (the answer's ignored_fields) and the run is
    # judged without it: the page showed it only inside the raw report.
    typo = api.post_run({**run_report("shop", 2, collected=1200), "declared_totl": 9000}).json()
    assert typo["ignored_fields"] == ["declared_totl"]
    page = staff_client.get(f"/runs/{typo['run']}/").content.decode()
    row = re.search(r'data-part="ignored-fields">(.*?)</tr>', page).group(1)
    assert "<code>declared_totl</code>: not a field of the report, so nothing judged it (a misspelling?)" in row
    # Its neighbour with every key known says nothing of it.
    clean = api.post_run(run_report("shop", 1, collected=1200, declared_total=9000)).json()
    assert 'data-part="ignored-fields"' not in staff_client.get(f"/runs/{clean['run']}/").content.decode()


def test_a_late_reports_page_says_its_latest_run_started_later_though_it_arrived_first(api, staff_client):
    # "a later run came in" read oddly on a report that itself came in after the others.
    latest = api.post_run(run_report("shop", 1)).json()["run"]
    late = api.post_run(run_report("shop", 5)).json()["run"]
    page = staff_client.get(f"/runs/{late}/").content.decode()
    found = re.search(r'data-part="source-now">(.*?)</p>', page).group(1)
    assert " ".join(re.sub(r"<[^>]+>", " ", found).split()) == "shop now: ok · its latest run started later: open it"
    assert f'href="/runs/{latest}/"' in found

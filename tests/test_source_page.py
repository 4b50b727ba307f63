"""The source page: charts, rules table with what enforcing would cost, mode switch, history, pause."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from sources.models import PauseEvent, Source
from tests.conftest import run_report, unwrapped


def figures(response) -> dict[str, dict]:
    page = response.content.decode()
    found = re.findall(r'data-target="chart-(\w+)">(.*?)</script>', page, re.S)
    return {name: json.loads(body) for name, body in found}


@pytest.fixture
def shop(api):
    for n in range(12, 0, -1):
        lost = {"pages": {"expected": 10, "fetched": 9, "lost": 1}, "exit_code": 1} if n % 4 == 0 else {}
        silent = {"collected": 900} if n == 1 else {}
        api.post_run(
            run_report(
                "shop",
                n,
                declared_total=1000,
                **{**lost, **silent},
                delivery={"attempted": 10, "delivered": 9 if n % 2 else 10},
            )
        )
    return Source.objects.get(slug="shop")


def test_unknown_source_is_404(staff_client):
    assert staff_client.get("/sources/nope/").status_code == 404


def test_charts_are_embedded_with_their_data(shop, staff_client):
    response = staff_client.get("/sources/shop/")
    figs = figures(response)
    # Panels with nothing to draw are a line of text each, not an empty chart.
    assert set(figs) == {"collected", "completeness"}
    blank = response.content.decode()
    blank = " ".join(re.sub(r"<[^>]+>", " ", blank[blank.index('id="blank-charts"') :]).split())
    assert "Field coverage : this source reports no field counts" in blank
    assert "Peak failure-window ratio : no failure window in these reports" in blank
    assert "Proxy states : no proxy transitions reported" in blank
    collected = {t["name"]: t for t in figs["collected"]["data"]}
    assert len(collected["collected"]["y"]) == 12
    assert collected["incomplete, silent (crawler said ok)"]["y"] == [900]
    # The lost-page runs exited 1: incomplete but loud, marked apart from the silent one.
    assert collected["incomplete (crawler knew)"]["y"] == [1000, 1000, 1000]
    floor = {t["name"]: t for t in figs["completeness"]["data"]}["min_completeness 99.0%"]
    assert floor["y"] == [pytest.approx(0.99)] * len(floor["y"]) and floor["y"]


def test_plotly_js_comes_from_our_static_files(shop, staff_client):
    page = staff_client.get("/sources/shop/").content.decode()
    assert (
        """<script src="/static/completeness/charts.js" data-plotly="/static/vendor/plotly-cartesian.min.js" defer>"""
        in page
    )
    # Every script and stylesheet is ours: nothing is loaded from another host (a CDN least of all).
    # Checking for the word "cdn" failed now and then on a random CSRF token or nonce that held it.
    assert re.findall(r'(?:src|href)="(?:https?:)?//', page) == []


def test_rules_table_counts_what_enforcing_would_cost(shop, staff_client):
    page = staff_client.get("/sources/shop/").content.decode()

    def cell(rule: str) -> str:
        start = page.index(f'data-rule="{rule}"')
        return page[start : page.index("</tr>", start)]

    assert "3 of 12" in cell("lost_pages")  # runs 12, 8, 4
    assert "6 of 12" in cell("delivery") and "observe" in cell("delivery")
    assert "1 of 12" in cell("declared_total")
    assert "0 of 12" in cell("layout")
    assert "always enforced" in cell("snapshot_overwritten")


def test_staff_switches_a_rule_and_the_next_run_is_judged_by_it(api, shop, staff_client):
    response = staff_client.post("/sources/shop/rules", {"rule": "lost_pages", "mode": "observe"})
    assert response.status_code == 302
    assert Source.objects.get(slug="shop").rule_modes == {"lost_pages": "observe"}
    body = api.post_run(
        run_report("shop", 0, declared_total=1000, pages={"expected": 10, "fetched": 9, "lost": 1})
    ).json()
    assert body["verdict"] == "complete"
    assert [f["mode"] for f in body["findings"] if f["rule"] == "lost_pages"] == ["observe"]


@pytest.mark.parametrize(
    "post",
    [
        {"rule": "snapshot_overwritten", "mode": "observe"},
        {"rule": "nope", "mode": "observe"},
        {"rule": "drop", "mode": "sometimes"},
        {},
    ],
)
def test_mode_switch_refuses_bad_input_without_error(shop, staff_client, post):
    response = staff_client.post("/sources/shop/rules", post)
    assert response.status_code == 302
    assert Source.objects.get(slug="shop").rule_modes == {}


def test_run_history_is_paged_and_survives_bad_page_numbers(api, staff_client):
    for n in range(30, 0, -1):
        api.post_run(run_report("long", n))
    first = staff_client.get("/sources/long/").content.decode()
    assert "page 1 of 2" in first and first.count('class="verdict-') == 25
    second = staff_client.get("/sources/long/?page=2").content.decode()
    assert second.count('class="verdict-') == 5
    for bad in ("0", "x", "999", "-3"):
        assert staff_client.get(f"/sources/long/?page={bad}").status_code == 200


def test_pause_form_pauses_with_who_and_why(shop, staff_client):
    until = (timezone.now() + timedelta(days=30)).replace(second=0, microsecond=0)
    response = staff_client.post(
        "/sources/shop/pause", {"reason": "proxy migration", "until": until.strftime("%Y-%m-%dT%H:%M")}
    )
    assert response.status_code == 302
    source = Source.objects.get(slug="shop")
    assert source.paused and source.health == "paused"
    assert source.paused_by == "user:ops" and source.pause_origin == "ui"
    assert source.paused_until == until
    page = unwrapped(staff_client.get("/sources/shop/").content.decode())
    assert "proxy migration" in page and "Resume" in page and f"until {until:%Y-%m-%d %H:%M}" in page


def test_pause_needs_a_reason_and_a_future_end(shop, staff_client):
    staff_client.post("/sources/shop/pause", {"reason": ""})
    staff_client.post("/sources/shop/pause", {"reason": "x", "until": "2001-01-01T00:00"})
    staff_client.post("/sources/shop/pause", {"reason": "x", "until": "not a date"})
    assert not Source.objects.get(slug="shop").paused
    assert not PauseEvent.objects.exists()


def test_resume(shop, staff_client):
    staff_client.post("/sources/shop/pause", {"reason": "maintenance"})
    staff_client.post("/sources/shop/resume")
    source = Source.objects.get(slug="shop")
    assert not source.paused and source.health == "failing"  # its last run was incomplete
    assert list(PauseEvent.objects.values_list("action", "actor")) == [("resume", "user:ops"), ("pause", "user:ops")]


def test_pause_and_resume_of_unknown_source_is_404(staff_client):
    assert staff_client.post("/sources/nope/pause", {"reason": "x"}).status_code == 404
    assert staff_client.post("/sources/nope/resume").status_code == 404


def test_source_page_query_count_does_not_grow_with_runs(api, staff_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert staff_client.get("/sources/grow/").status_code == 200
        return len(captured)

    for n in range(3, 0, -1):
        api.post_run(run_report("grow", n, declared_total=1000))
    few = queries()
    for n in range(40, 3, -1):
        api.post_run(run_report("grow", n, declared_total=1000, collected=900 if n % 5 else 1000))
    assert queries() == few


def test_the_source_page_lists_the_channels_that_cover_it_and_not_the_others(staff_client, api):
    from sources.alerts import channels
    from sources.models import Source, Tag

    api.post_run(run_report("shop", 1))
    shop = Source.objects.get(slug="shop")
    shop.tags.add(Tag.objects.create(name="uae"))
    channels.create_channel(kind="webhook", target="http://127.0.0.1:9/by-tag", name="by tag", tag_names=["uae"])
    channels.create_channel(
        kind="webhook", target="http://127.0.0.1:9/other", name="other source", source_slugs=["elsewhere"]
    )
    page = staff_client.get("/sources/shop/").content.decode()
    assert "by tag" in page and "other source" not in page


def test_a_source_no_channel_covers_says_its_alerts_reach_nobody(staff_client, api):
    api.post_run(run_report("shop", 1))
    assert "reach nobody" in staff_client.get("/sources/shop/").content.decode()


def test_on_a_phone_a_run_card_has_no_blank_last_line_unless_it_offers_acceptance(shop, staff_client):
    # The last cell holds the accept button or the accepted pill; empty, it took a blank line per card.
    page = staff_client.get("/sources/shop/").content.decode()
    rows = re.findall(r'<tr class="verdict-(\w+)[^"]*">(.*?)</tr>', page, re.S)
    last_cells = [(verdict, re.findall(r"<td([^>]*)>", row)[-1]) for verdict, row in rows]
    assert all("data-blank" in cell for verdict, cell in last_cells if verdict == "complete")
    # The newest run, incomplete and newer than the baseline, may be accepted; the older incomplete
    # runs, with complete runs after them, are not offered.
    assert last_cells[0][0] == "incomplete" and "data-blank" not in last_cells[0][1]
    assert all("data-blank" in cell for verdict, cell in last_cells[1:] if verdict == "incomplete")


def test_a_source_without_a_normal_yet_says_so_and_from_when_it_will_have_one(api, staff_client):
    from datetime import date

    from tests.conftest import day

    def learning_note(slug: str) -> str:
        found = re.search(r'data-part="learning">(.*?)</p>', staff_client.get(f"/sources/{slug}/").content.decode())
        return unwrapped(found.group(1)) if found else ""

    api.post_run(run_report("young", 5, collected=400))
    since = date.fromisoformat(day(5)[:10])
    assert f"it learns one from its runs since {since} and" in learning_note("young")  # from its first run on
    for n in range(4, 0, -1):
        api.post_run(run_report("young", n, collected=400))
    note = learning_note("young")
    assert f"it learns one from its runs since {since} and needs 10 of them over 14 days" in note, note
    assert (
        f"the first run it judges against its normal is one after {since + timedelta(days=14)}, two weeks after its first"
        in note
    )
    assert "the fixed rules judge each run against the last good snapshot" in note and "25.0%" in note

    # Weekly: its runs span six weeks, and six runs are too few.
    for n in range(42, 0, -7):
        api.post_run(run_report("weekly", n, collected=400))
    assert "its runs since" in learning_note("weekly") and "span 14 days, but fewer than 10" in learning_note("weekly")

    # Sixteen days of daily runs: it has its normal, and the page has nothing to explain.
    for n in range(16, 0, -1):
        api.post_run(run_report("learned", n, collected=400))
    assert Source.objects.get(slug="learned").last_run.expected is not None
    assert learning_note("learned") == ""

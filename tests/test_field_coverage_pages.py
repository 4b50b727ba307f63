"""Field coverage on the pages: the source page's chart (a line, a dashed floor and the normal's band
per field, the worst eight, an empty state), its table of the latest run against the baseline, and the
run page's fields."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sources.pages.charts.coverage import MAX_LINES
from tests.conftest import run_report
from tests.test_expectation import START, post
from tests.test_expectation_small_samples import post_small_offers_feed
from tests.test_source_page import figures

# Example s08: price half empty, then phone gone, then all well again.
S08 = [
    {"title": 1000, "price": 990, "phone": 620},
    {"title": 1000, "price": 480, "phone": 610},
    {"title": 1000, "price": 985},
    {"title": 1000, "price": 985, "phone": 600},
]


@pytest.fixture
def listings(api):
    for n, fields in zip((4, 3, 2, 1), S08, strict=True):
        assert api.post_run(run_report("listings", n, declared_total=1000, fields=fields)).status_code == 201


def traces(client, slug: str) -> dict[str, dict]:
    return {t["name"]: t for t in figures(client.get(f"/sources/{slug}/"))["coverage"]["data"]}


def rows(html: str, table: str = "fields") -> dict[str, str]:
    body = html[html.index(f'class="grid {table}"') :]
    body = body[: body.index("</table>")]
    return dict(re.findall(r'data-field="([^"]+)">(.*?)</tr>', body, re.S))


def test_the_chart_draws_each_fields_coverage_in_percent_and_its_floor_dashed_in_the_same_colour(
    listings, staff_client
):
    drawn = traces(staff_client, "listings")
    assert drawn["price"]["y"] == [0.99, 0.48, 0.985, 0.985]
    # No floor on the first run (no baseline yet); then baseline coverage less 10 points.
    assert (
        drawn["price floor"]["y"] == [None] + [pytest.approx(0.89)] * 3
    )  # runs 2 and 3 failed: run 1 stays the baseline
    assert drawn["price floor"]["line"]["dash"] == "dash"
    assert drawn["price floor"]["line"]["color"] == drawn["price"]["line"]["color"]
    # phone was omitted on the third run: judged as 0, drawn as 0.
    assert drawn["phone"]["y"] == [0.62, 0.61, 0.0, 0.6]
    assert sorted(drawn["below its floor"]["text"]) == ["phone", "price"]
    figure = figures(staff_client.get("/sources/listings/"))["coverage"]
    assert figure["layout"]["yaxis"]["tickformat"] == ".0%"


def test_the_chart_shades_each_fields_normal_from_its_floor_up_to_the_coverage_it_was_set_from(listings, staff_client):
    drawn = traces(staff_client, "listings")
    # While the source is new, the usual coverage is the baseline run's: run 1's 99% for price.
    # Drawn over the three runs that had it, from the second on.
    assert drawn["price usually"]["y"] == [pytest.approx(0.99)] * 3
    band = drawn["price normal"]
    assert band["y"] == [pytest.approx(0.89)] * 3 and band["x"] == drawn["price"]["x"][1:]
    assert band["fill"] == "tonexty" and band["hoverinfo"] == "skip"
    # Filled in the line's own colour, lightly, and hidden and shown with it.
    colour = drawn["price"]["line"]["color"]
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    assert band["fillcolor"] == f"rgba({red}, {green}, {blue}, 0.12)"
    assert band["legendgroup"] == drawn["price"]["legendgroup"] and band["visible"] == drawn["price"]["visible"]
    # The band's edges come right before it in the drawing order, as `tonexty` fills to the trace before.
    names = list(drawn)
    assert names.index("price normal") == names.index("price usually") + 1
    assert "floor dashed, normal shaded" in drawn


def test_runs_stored_before_the_usual_coverage_was_kept_have_their_floor_and_no_band(listings, staff_client):
    from sources.models import Run

    Run.objects.update(field_usual=None)
    drawn = traces(staff_client, "listings")
    assert drawn["price floor"]["y"] == [None] + [pytest.approx(0.89)] * 3
    assert "price usually" not in drawn and "price normal" not in drawn
    # The table falls back on the baseline run's coverage.
    assert ">62.0%<" in rows(staff_client.get("/sources/listings/").content.decode())["phone"]


def test_a_learned_fields_band_and_usually_are_the_centre_of_its_own_normal(api, staff_client):
    from sources.models import Run, Source
    from sources.pages.charts.coverage import coverage_figure
    from sources.pages.selectors.source import chart_runs

    for day in range(30):
        post(api, "wander", day, 1000, fields={"price": 980 + day % 3, "discount": 100 + 10 * day})
    run = Run.objects.get(run_id="wander-29-0")
    # The learned normal's centre (the median coverage), not the baseline run's 38.0%.
    assert run.field_usual == {"price": pytest.approx(0.981), "discount": pytest.approx(0.24, abs=0.006)}
    assert run.field_floors["discount"] < 0.1  # optional: only its emptying counts
    table = rows(staff_client.get(f"/runs/{run.pk}/").content.decode())
    assert ">98.1%<" in table["price"] and ">39.0%<" in table["discount"]
    # Its runs are older than the page's default span: the chart as drawn over them.
    runs = chart_runs(Source.objects.get(slug="wander"), since=START)
    drawn = {t["name"]: t for t in coverage_figure(runs)["data"]}
    assert drawn["discount usually"]["y"][-1] == run.field_usual["discount"]
    assert drawn["discount normal"]["y"][-1] == run.field_floors["discount"]
    latest = api.get("/sources/wander/runs").json()["items"][0]
    assert latest["field_usual"] == run.field_usual and latest["field_floors"] == run.field_floors


def test_a_field_under_an_operators_minimum_has_its_floor_and_no_usual(api, staff_client):
    from sources.models import Run, Source
    from sources.services.rule_settings import update_rule_settings

    api.post_run(run_report("minimum", 2, fields={"price": 990}))
    update_rule_settings(Source.objects.get(slug="minimum"), field_minimums={"price": 0.9})
    api.post_run(run_report("minimum", 1, fields={"price": 950}))
    run = Run.objects.get(run_id="minimum-1-")
    assert run.field_floors == {"price": 0.9} and run.field_usual == {}
    assert "price usually" not in traces(staff_client, "minimum")
    # Neither page says a usual coverage the floor was not set from (the baseline's 99.0% is not it).
    for page in (f"/runs/{run.pk}/", "/sources/minimum/"):
        row = rows(staff_client.get(page).content.decode())["price"]
        assert ">99.0%<" not in row and ">90.0%<" in row, page


def test_the_worst_field_comes_first(listings, staff_client):
    names = [name for name, trace in traces(staff_client, "listings").items() if trace.get("showlegend", True)]
    assert names[:3] == ["phone", "price", "title"]  # phone fell 62 points below its floor, price 41


def test_with_many_fields_the_chart_keeps_the_worst_eight_and_says_which_it_left_out(api, staff_client):
    names = [f"f{i:02d}" for i in range(12)]
    api.post_run(run_report("wide", 3, fields={name: 990 for name in names}))
    api.post_run(run_report("wide", 2, fields={name: 990 - 10 * i for i, name in enumerate(names)}))
    api.post_run(run_report("wide", 1, fields={**{name: 990 for name in names}, "f03": 500}))
    figure = figures(staff_client.get("/sources/wide/"))["coverage"]
    lines = [t["name"] for t in figure["data"] if t.get("showlegend", True) and re.fullmatch(r"f\d\d", t["name"])]
    assert len(lines) == MAX_LINES and lines[0] == "f03"
    assert lines[1:] == ["f11", "f10", "f09", "f08", "f07", "f06", "f05"]
    title = figure["layout"]["title"]["text"]
    # f03 fell below its floor and is drawn with the two nearest theirs; five more are in the legend.
    assert "3 of 12 fields drawn, nearest their floor;" in title and "5 more in the legend, a click away;" in title
    assert "left out (none ever below its floor):" in title
    assert "f00, f01, f02, f04" in title
    # In lines a phone's chart holds: a title does not wrap.
    lines = [re.sub(r"<[^>]+>", "", line) for line in title.split("<br>")[1:]]
    assert all(len(line) <= 48 for line in lines), lines


def test_a_source_that_counts_no_fields_gets_an_empty_state(api, staff_client):
    api.post_run(run_report("plain", 1))
    assert "coverage" not in figures(staff_client.get("/sources/plain/"))
    page = staff_client.get("/sources/plain/").content.decode()
    assert 'data-blank="coverage"><b>Field coverage</b>: this source reports no field counts' in page
    assert "The latest run counted no fields" in page


def test_the_latest_run_is_listed_against_the_baseline_it_was_judged_by(listings, staff_client):
    page = staff_client.get("/sources/listings/").content.decode()
    table = rows(page)
    # The latest run is complete, so it is the baseline now: the table compares with the one before.
    assert list(table) == ["phone", "price", "title"]  # closest to its floor first
    assert ">60.0%<" in table["phone"] and ">62.0%<" in table["phone"] and ">52.0%<" in table["phone"]
    assert "+8.0 pts" in table["phone"] and "below its floor" not in table["phone"]


def test_a_field_below_its_floor_is_marked_and_listed_first(api, listings, staff_client):
    api.post_run(run_report("listings", 0, declared_total=1000, fields={"title": 1000, "price": 480, "phone": 600}))
    table = rows(staff_client.get("/sources/listings/").content.decode())
    assert list(table)[0] == "price"
    assert "below its floor" in table["price"] and "-40.5 pts" in table["price"]
    assert ">48.0%<" in table["price"] and ">98.5%<" in table["price"] and ">88.5%<" in table["price"]


def test_the_run_page_lists_every_field_with_count_coverage_floor_and_below(listings, staff_client):
    from sources.models import Run

    run = Run.objects.get(run_id="listings-2-")  # price back, phone omitted
    page = staff_client.get(f"/runs/{run.pk}/").content.decode()
    table = rows(page)
    assert list(table) == ["phone", "price", "title"]
    assert "not reported" in table["phone"] and ">0.0%<" in table["phone"] and "below its floor" in table["phone"]
    assert ">985<" in table["price"] and ">98.5%<" in table["price"] and ">89.0%<" in table["price"]
    assert "below its floor" not in table["price"]


def test_a_floor_of_zero_on_a_small_run_says_why_and_a_judged_field_beside_it_has_no_note(api, staff_client):
    # A feed of about 30 items whose discount is in 30-45% of them: a run of 30 cannot tell its loss,
    # so its floor is 0. Shown bare, "0.0%" read as a fault of the page.
    from sources.models import Run

    post_small_offers_feed(api)
    post(api, "offers", 30, 30, fields={"price": 29, "discount": 0})
    for page in (
        staff_client.get(f"/runs/{Run.objects.get(run_id='offers-30-0').pk}/").content.decode(),
        staff_client.get("/sources/offers/").content.decode(),
    ):
        table = rows(page)
        assert ">0.0%<" in table["discount"] and 'href="#open-floors"' in table["discount"]
        assert 'href="#open-floors"' not in table["price"]
        note = page[page.index('id="open-floors"') :].split("</p>")[0]
        assert "<code>discount</code>" in note and "<code>price</code>" not in note
        assert "none of 30 records" in note
    # A run of 4,000 has a floor for the discount: no note.
    post(api, "offers", 31, 4000, fields={"price": 3900, "discount": 1400})
    page = staff_client.get("/sources/offers/").content.decode()
    assert 'id="open-floors"' not in page and 'href="#open-floors"' not in page


def test_a_run_without_fields_says_so(api, staff_client):
    from sources.models import Run

    api.post_run(run_report("plain", 1))
    page = staff_client.get(f"/runs/{Run.objects.get().pk}/").content.decode()
    assert "The report counted no fields." in page


def test_the_source_page_reads_no_more_with_more_runs_with_fields_and_no_declared_total(api, staff_client):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert staff_client.get("/sources/grow/").status_code == 200
        return len(captured)

    for n in range(40, 37, -1):
        api.post_run(run_report("grow", n, fields={"price": 990, "phone": 600}))
    few = queries()
    for n in range(37, 0, -1):
        collected = 1000 - 5 * (40 - n)
        body = run_report("grow", n, collected=collected, fields={"price": collected * (9 if n % 4 else 4) // 10})
        assert api.post_run(body).status_code == 201
    assert queries() == few


def test_the_coverage_chart_draws_the_fields_below_their_floor_and_the_worst_few_the_rest_a_click_away():
    from sources.pages.charts.coverage import FIRST_SHOWN, coverage_figure

    fields = {f"f{i}": 0.99 - i * 0.01 for i in range(6)}
    floors = dict.fromkeys(fields, 0.5)
    runs = []
    for n in range(5):
        coverage = dict(fields)
        if n == 4:
            coverage["f5"] = 0.2  # below its floor on the latest run
        runs.append(
            {
                "id": n + 1,
                "x": f"2026-11-2{n}T03:00:00+00:00",
                "collected": 1000,
                "verdict": "complete",
                "field_counts": {name: round(share * 1000) for name, share in coverage.items()},
                "field_floors": floors,
            }
        )
    figure = coverage_figure(runs)
    lines = {t["name"]: t.get("visible", True) for t in figure["data"] if t["name"] in fields}
    drawn = sorted(name for name, visible in lines.items() if visible is True)
    # f5 fell below its floor and is the worst; then the closest to theirs, FIRST_SHOWN in all.
    assert FIRST_SHOWN == 3 and drawn == ["f3", "f4", "f5"]
    assert {name for name, visible in lines.items() if visible == "legendonly"} == set(fields) - set(drawn)
    assert (
        '3 of 6 fields drawn, nearest their floor;</span><br><span style="font-size:12px">3 more in the legend, a click away'
        in figure["layout"]["title"]["text"]
    )
    # The y axis fits what is drawn at first: the 20% point is in it.
    assert figure["layout"]["yaxis"]["range"][0] <= 0.2

"""The source page's charts in a browser: a click on a run's marker opens the run,
the range control changes the x range and the URL, paused periods are shaded, the y axis fits."""

from contextlib import contextmanager
from datetime import datetime, timedelta

import pytest

from sources.models import PauseOrigin, Source
from sources.services import pausing
from tests.conftest import run_report
from tests.test_browser import SCREENSHOTS, browser, log_in, open_page, sync_api, wait_until  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(sync_api is None, reason="playwright is not installed")


@pytest.fixture
def shop(transactional_db, api):
    # Forty days of a declared total, with a silent 8% drop at the end and a pause in between.
    for n in range(40, 0, -1):
        lost = 80 if n <= 2 else 0
        api.post_run(run_report("shop", n, collected=1000 - lost, declared_total=1000, suffix="d"))
    source = Source.objects.get(slug="shop")
    pausing.pause_source(source, origin=PauseOrigin.UI, actor="user:ops", reason="proxy migration")
    return source


@contextmanager
def charts_page(browser, live_server, path: str):
    """A logged-in desktop page at `path`, once its five charts are drawn."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    try:
        log_in(page, live_server, "ops", "ops-password")
        page.goto(f"{live_server.url}{path}")
        wait_until(page, "document.querySelectorAll('.chart .main-svg').length >= 5")
        yield page
    finally:
        context.close()


def x_range_days(page, chart: str) -> float:
    lo, hi = page.evaluate(f"document.getElementById('chart-{chart}')._fullLayout.xaxis.range")
    parse = lambda text: datetime.fromisoformat(text[:19])  # noqa: E731
    return (parse(hi) - parse(lo)) / timedelta(days=1)


def test_a_click_on_a_collected_marker_opens_its_run(browser, live_server, shop, staff):
    with charts_page(browser, live_server, "/sources/shop/") as page:
        for chart in ("collected", "completeness"):
            page.goto(f"{live_server.url}/sources/shop/")
            wait_until(page, f"document.querySelector('#chart-{chart} .scatterlayer .trace .point')")
            point = page.locator(f"#chart-{chart} .scatterlayer .trace").first.locator(".point").nth(5)
            point.scroll_into_view_if_needed()
            box = point.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_url(f"{live_server.url}/runs/*/", timeout=5000)
            assert "shop" in page.locator(".crumbs").inner_text(), chart


def test_no_chart_offers_to_send_its_data_to_plotlys_cloud(browser, live_server, shop, staff):
    with charts_page(browser, live_server, "/sources/shop/") as page:
        charts = page.locator(".js-plotly-plot")
        for n in range(charts.count()):
            charts.nth(n).hover()
            titles = charts.nth(n).locator(".modebar-btn").evaluate_all("els => els.map(e => e.dataset.title)")
            assert "Download plot as a PNG" in titles and not any("Share" in t or "Chart Studio" in t for t in titles)
        sent = page.evaluate(
            "() => [...document.querySelectorAll('.js-plotly-plot')].map(g => g._context.showSendToCloud)"
        )
        assert set(sent) == {False}


def test_the_range_control_changes_the_x_range_and_the_url(browser, live_server, shop, staff):
    with charts_page(browser, live_server, "/sources/shop/") as page:
        # The 90-day range of a source 40 days old spans its runs (with a margin), not 50 empty days.
        assert 40 < x_range_days(page, "collected") < 43
        page.click("#range a[data-range='7d']")
        page.wait_for_url("**/sources/shop/?range=7d#range")
        wait_until(page, "document.querySelectorAll('.chart .main-svg').length >= 5")
        assert round(x_range_days(page, "collected")) == 7
        assert round(x_range_days(page, "completeness")) == 7
        assert page.locator("#range a.current").inner_text() == "7 d"
        # Only the week's runs were loaded (started 1..6 days and 3 hours ago), not 40.
        assert page.evaluate("document.getElementById('chart-collected').data[0].x.length") == 6
        # The y axis fits the week's 920..1,000 (and the baseline), not 0..1,000.
        low, high = page.evaluate("document.getElementById('chart-collected')._fullLayout.yaxis.range")
        assert 800 < low < 920 and high >= 1000
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#range").scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "source-range-7d-1440.png"))


def test_a_pause_is_shaded_on_the_charts(browser, live_server, shop, staff):
    with charts_page(browser, live_server, "/sources/shop/?range=30d") as page:
        shapes = page.evaluate("document.getElementById('chart-collected').layout.shapes || []")
        assert [s["type"] for s in shapes] == ["rect"]
        names = page.evaluate("document.getElementById('chart-collected').data.map(t => t.name)")
        assert "paused" in names


@pytest.fixture
def many_fields(transactional_db, api):
    # Eleven fields: eight drawn, three listed under the title ("left out ..."), one that fell.
    for n in (3, 2, 1):
        counts = {f"field_{k:02d}": 1000 - 10 * k for k in range(11)}
        if n == 1:
            counts["field_00"] = 400
        api.post_run(run_report("many-fields", n, declared_total=1000, fields=counts))


@pytest.mark.parametrize("width", [1440, 390])
def test_the_coverage_charts_subtitle_stays_above_its_plot(browser, live_server, many_fields, staff, width):
    context, page = open_page(browser, width, 900)
    try:
        log_in(page, live_server, "ops", "ops-password")
        page.goto(f"{live_server.url}/sources/many-fields/")
        page.locator("#chart-coverage .main-svg").first.wait_for(timeout=30_000)
        title = page.locator("#chart-coverage .gtitle").bounding_box()
        plot = page.locator("#chart-coverage .nsewdrag").first.bounding_box()
        assert title is not None and plot is not None
        assert "left out" in page.locator("#chart-coverage .gtitle").text_content()
        assert title["y"] >= 0 and title["y"] + title["height"] + 8 <= plot["y"], (title, plot)
        page.locator("#chart-coverage").screenshot(path=str(SCREENSHOTS / f"coverage-subtitle-{width}.png"))
    finally:
        context.close()

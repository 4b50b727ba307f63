"""The pages with a keyboard alone, in a real browser: a skip link past the header, focus kept where it
was when the overview refreshes itself, a refresh that can be paused; and fields, borders and the header
as a low-vision reader needs them (contrast, 320 px / 400% zoom)."""

from __future__ import annotations

import pytest

from sources.models import Source
from tests.conftest import run_report
from tests.test_browser import SCREENSHOTS, browser, sync_api, wait_until  # noqa: F401 (fixtures)
from tests.test_browser_phone import _page, week  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(sync_api is None, reason="playwright is not installed")

FOCUSED = "document.activeElement === document.body ? 'body' : document.activeElement.textContent.trim()"


@pytest.mark.parametrize("width", [1440, 390])
def test_the_first_tab_offers_a_visible_skip_to_the_content(browser, live_server, week, staff, width):
    """Eight header links and a warning's links stood between a keyboard and the overview's counts."""
    context, page = _page(browser, live_server, width)
    try:
        page.goto(f"{live_server.url}/")
        page.keyboard.press("Tab")
        skip = page.locator(":focus")
        assert skip.inner_text() == "Skip to the content"
        box = skip.bounding_box()
        assert box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= width, box
        assert box["width"] > 40 and box["height"] >= 20, box
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        # The next stop is the first link inside <main>, not the header's.
        assert page.evaluate("document.activeElement.closest('main') !== null")
        assert page.evaluate("document.activeElement.closest('header') === null")
    finally:
        context.close()


def test_the_overviews_refresh_keeps_the_keyboards_place(browser, live_server, week, staff, api):
    """The minute's refresh swapped the table out from under the focused link: focus fell to <body>, and a
    keyboard or screen reader user reading the rows was sent back to the top of the page."""
    context, page = _page(browser, live_server, 1440)
    try:
        page.goto(f"{live_server.url}/")
        for selector, text in (
            ("tr[data-slug=cars-ae] td:first-child a", "cars-ae"),
            ("[data-count=failing]", "failing"),
        ):
            page.focus(selector)
            before = page.locator("#updated time").get_attribute("datetime")
            page.wait_for_timeout(1100)  # the stamp has seconds
            page.evaluate("window.completenessRefresh()")
            wait_until(page, f"document.querySelector('#updated time').getAttribute('datetime') !== '{before}'")
            assert text in page.evaluate(FOCUSED), selector
            assert page.evaluate(f"document.activeElement === document.querySelector('{selector}')"), selector
    finally:
        context.close()


# Each visible form field's border against the first opaque background behind it (WCAG 1.4.11: the
# boundary that says "type here" needs 3:1; a text field has nothing else to show where it is).
FIELD_BORDERS = """
() => [...document.querySelectorAll('input:not([type=hidden]):not([type=checkbox]), select, textarea')]
  .filter(field => field.offsetParent).map(field => {
  const rgb = text => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => [r, g, b].map(c => (c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  let behind = field.parentElement;
  while (behind && rgb(getComputedStyle(behind).backgroundColor)[3] === 0) { behind = behind.parentElement; }
  const background = behind ? rgb(getComputedStyle(behind).backgroundColor) : [255, 255, 255];
  const [a, b] = [luminance(rgb(getComputedStyle(field).borderTopColor)), luminance(background)].sort((x, y) => y - x);
  return [field.name, Math.round((a + 0.05) / (b + 0.05) * 100) / 100];
})
"""


def test_form_fields_have_a_border_that_can_be_seen(browser, live_server, week, staff):
    """The fields' #d1d5db border stood at 1.5:1 on white, 1.4:1 on the page's grey: the search box, the
    pause reason and the acknowledgement note were a blank strip to a low-vision reader."""
    context, page = _page(browser, live_server, 1440)
    try:
        for path in ("/", "/sources/cars-ae/", "/alerts/", "/alerts/channels/"):
            page.goto(f"{live_server.url}{path}")
            found = page.evaluate(FIELD_BORDERS)
            assert found, path
            assert [(name, ratio) for name, ratio in found if ratio < 3] == [], path
    finally:
        context.close()


def test_the_overviews_refresh_can_be_paused_from_the_keyboard(browser, live_server, week, staff):
    """The overview replaced its counts and table every minute with no way to stop it (WCAG 2.2.2): a
    screen reader reading the rows was moved about under its cursor, a reader comparing two rows lost them."""
    context, page = _page(browser, live_server, 390)
    try:
        page.clock.install()
        page.goto(f"{live_server.url}/")
        fetched = []
        page.on("request", lambda request: fetched.append(request.url) if request.resource_type == "fetch" else None)
        toggle = page.get_by_role("button", name="Pause refreshing")
        assert toggle.is_visible() and toggle.get_attribute("aria-pressed") == "false"
        box = toggle.bounding_box()
        assert box is not None and box["height"] >= 24 and box["x"] + box["width"] <= 390, box
        toggle.focus()
        page.keyboard.press("Space")
        assert toggle.get_attribute("aria-pressed") == "true"
        assert "not refreshing (paused)" in page.locator("#updated").inner_text()
        page.clock.run_for("03:00")
        page.wait_for_timeout(300)
        assert fetched == []
        # Pressed again: it refreshes at once and every minute after, and the button keeps the focus.
        page.keyboard.press("Space")
        wait_until(page, "document.querySelector('#updated button').getAttribute('aria-pressed') === 'false'")
        page.wait_for_timeout(300)
        assert len(fetched) == 1, fetched
        assert page.evaluate("document.activeElement.id") == "refresh-toggle"
    finally:
        context.close()


def test_at_320_px_the_header_wraps_and_nothing_scrolls_sideways(browser, live_server, week, staff):
    """At 320 px (a small phone, or 1280 px zoomed to 400%: WCAG 1.4.10) the header's links stood in one
    row: "Admin" lay past the right edge and every page scrolled sideways by 58 px."""
    context, page = _page(browser, live_server, 320)
    try:
        for path in ("/", "/sources/cars-ae/", "/alerts/", "/proxies/"):
            page.goto(f"{live_server.url}{path}")
            right = page.evaluate(
                "Math.max(...[...document.querySelectorAll('.top a, .top button')].map(e => e.getBoundingClientRect().right))"
            )
            assert right <= 320, (path, right)
            assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"), (
                path,
                page.evaluate("document.scrollingElement.scrollWidth"),
            )
    finally:
        context.close()


def test_a_field_left_in_the_legend_can_be_drawn_from_the_keyboard(browser, live_server, staff, api):
    """The coverage chart draws the fields nearest their floor and leaves the rest in its legend, "a click
    away": Plotly's legend answers the mouse only, so from a keyboard those fields' lines could not be shown."""
    steady = {"title": 1000, "price": 990, "rooms": 950, "phone": 930, "agent": 910}
    for n in (5, 4, 3, 2):
        api.post_run(run_report("listings", n, declared_total=1000, fields=steady))
    api.post_run(run_report("listings", 1, declared_total=1000, fields={**steady, "price": 474}))
    context, page = _page(browser, live_server, 1440)
    try:
        page.goto(f"{live_server.url}/sources/listings/")
        chart = page.locator("#chart-coverage")
        chart.locator(".main-svg").first.wait_for(timeout=30_000)
        entry = chart.get_by_role("button", name="title")
        assert entry.get_attribute("aria-pressed") == "false"
        before = chart.locator(".scatterlayer .trace").count()
        entry.focus()
        page.keyboard.press("Enter")
        wait_until(
            page, f"document.querySelectorAll('#chart-coverage .scatterlayer .trace').length > {before}", timeout=5000
        )
        # The entry says it is shown now, and still has the focus for the next key.
        assert chart.get_by_role("button", name="title").get_attribute("aria-pressed") == "true"
        assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "title"
        page.keyboard.press("Space")
        wait_until(
            page, f"document.querySelectorAll('#chart-coverage .scatterlayer .trace').length === {before}", timeout=5000
        )
    finally:
        context.close()


def test_a_charts_toolbar_is_one_tab_stop_that_shows_itself_and_arrows_move_in_it(browser, live_server, staff, api):
    """Each of the seven buttons of Plotly's toolbar was a tab stop: a keyboard crossed seven per chart
    to reach what lies below it."""
    for n in (5, 4, 3, 2, 1):
        api.post_run(run_report("shop", n, declared_total=1000, collected=1000))
    context, page = _page(browser, live_server, 1440)
    try:
        page.goto(f"{live_server.url}/sources/shop/")
        chart = page.locator("#chart-collected")
        chart.locator(".modebar-btn").first.wait_for(state="attached", timeout=30_000)
        wait_until(page, "document.querySelector('#chart-collected .modebar[role=toolbar]') !== null", timeout=5000)
        stops = chart.locator(".modebar-btn[tabindex='0']")
        assert stops.count() == 1 and chart.locator(".modebar-btn").count() > 3
        assert chart.locator("[role=toolbar]").get_attribute("aria-label").startswith("chart tools")
        stops.first.focus()
        first = page.evaluate("document.activeElement.dataset.title")
        # Shown while it has the focus, though no mouse is over it (Plotly's own :focus-within).
        wait_until(page, "getComputedStyle(document.activeElement.closest('.modebar-group')).opacity === '1'", 2000)
        page.keyboard.press("ArrowRight")
        second = page.evaluate("document.activeElement.dataset.title")
        assert second != first and page.evaluate("document.activeElement.getAttribute('tabindex')") == "0"
        page.keyboard.press("End")
        last = page.evaluate("document.activeElement.dataset.title")
        page.keyboard.press("ArrowRight")  # round to the first
        assert page.evaluate("document.activeElement.dataset.title") == first != last
        # Tab leaves the toolbar for the next thing on the page, not its next button.
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.closest('.modebar') === null")
    finally:
        context.close()


UNLABELLED = """() => [...document.querySelectorAll('main input:not([type=hidden]), main select, main textarea')]
  .filter(field => field.offsetParent && !(field.labels && [...field.labels].some(l => l.innerText.trim())))
  .map(field => field.name)"""


@pytest.mark.parametrize("width", [1440, 390])
def test_every_field_has_a_label_that_stays_on_screen(browser, live_server, week, staff, width):
    """The overview's search and filters, the proxies' pool and state, the pause reason and end, a run's
    baseline note and /alerts/' note were named by a placeholder or a first option only: gone once typed
    into or chosen ("ae": of what?), and never a label to click."""
    run = Source.objects.get(slug="cars-ae").last_run_id
    context, page = _page(browser, live_server, width)
    try:
        for path in ("/", "/proxies/", "/sources/cars-ae/", f"/runs/{run}/", "/alerts/", "/alerts/channels/"):
            page.goto(f"{live_server.url}{path}")
            assert page.evaluate(UNLABELLED) == [], path
            assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"), path
        page.goto(f"{live_server.url}/")
        page.get_by_label("region").select_option("")  # found by its visible label
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("form.filters").screenshot(path=str(SCREENSHOTS / f"labelled-filters-{width}.png"))
    finally:
        context.close()


def test_a_failed_refresh_is_announced_to_a_screen_reader(browser, live_server, week, staff):
    """A failed refresh said so beside the stamp only: a screen reader, not looking there, went on reading
    a table that was no longer current (WCAG 4.1.3). A status region outside the swapped parts says it."""
    context, page = _page(browser, live_server, 1440)
    try:
        page.goto(f"{live_server.url}/")
        status = page.get_by_role("status")
        assert status.count() == 1 and status.inner_text() == ""
        page.route(f"{live_server.url}/", lambda route: route.fulfill(status=503, body="down"))
        page.evaluate("window.completenessRefresh()")
        wait_until(page, "document.querySelector('#updated .failed') !== null")
        assert "Refresh failed" in status.inner_text()
        page.unroute(f"{live_server.url}/")
        page.evaluate("window.completenessRefresh()")
        wait_until(page, "document.querySelector('#updated .failed') === null")
        assert status.inner_text() == ""
    finally:
        context.close()

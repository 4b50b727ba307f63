"""Every operator page at 1440 and 390 px: nothing wider than the screen,
tables scroll inside their own box, the header wraps; screenshots in var/screenshots/ (viewport-sized,
so that they stay legible); and the overview refreshes itself in place."""

import json
from contextlib import contextmanager
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from sources.models import Channel, Source, Tag
from tests.conftest import day, run_report
from tests.test_browser import SCREENSHOTS, browser, log_in, sync_api, wait_until  # noqa: F401 (fixtures)
from tests.test_proxies_page import transition

pytestmark = pytest.mark.skipif(sync_api is None, reason="playwright is not installed")

WIDTHS = [1440, 390]
NO_SIDEWAYS_SCROLL = "document.scrollingElement.scrollWidth <= window.innerWidth"
# Each chart's x and y tick labels that come within 2 px of each other (a "0%" on a "0" read as "0%0").
TICK_LABELS_CROSSING = """[...document.querySelectorAll('.chart')].flatMap(chart => {
    const boxes = axis => [...chart.querySelectorAll(`g.${axis}tick text`)]
        .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
    const near = (a, b) => a.left < b.right + 2 && b.left < a.right + 2 && a.top < b.bottom + 2 && b.top < a.bottom + 2;
    return boxes('x').flatMap(([x, a]) => boxes('y').filter(([, b]) => near(a, b)).map(([y]) => `${chart.id}: ${x} / ${y}`));
})"""


@pytest.fixture
def fleet(transactional_db, api):
    channel = Channel.objects.create(kind="webhook", name="ops hook", target="http://127.0.0.1:9/hook")
    for n in range(12, 0, -1):
        window = {
            "threshold": 0.35,
            "min_samples": 50,
            "series": [[n * 10, min(0.9, n / 40)] for n in range(60)],
            "events": breaker_events(day(n)),
        }
        api.post_run(
            run_report(
                "big-marketplace-listings-eu",
                n,
                collected=37403 - (3000 if n <= 2 else 0),
                declared_total=37403,
                fields={
                    "title": 34000,
                    "price": 36000 - (9000 if n <= 2 else 0),
                    "description": 37000,
                    "floor_area_m2": 30500,
                },
            )
        )
        api.post_run(
            run_report(
                "quiet-feed",
                n,
                collected=550 - (60 if n <= 3 else 0),
                declared_total=550,
                failure_window=window,
                proxy_transitions=[
                    transition(f"pool-eu-west/exit-{n:04}", "eligible", "excluded", "slow_body", "body", n),
                    transition(
                        f"pool-eu-west/exit-{n + 100:04}", "probe_allowed", "eligible", "probe_succeeded", "probe", n
                    ),
                ],
            )
        )
    for n in range(40):
        source = Source.objects.create(slug=f"filler-{n:02}", name=f"Filler shop number {n}", region="eu-west")
        source.tags.add(Tag.objects.get_or_create(name="retail")[0])
    return channel


def breaker_events(started_at: str) -> list[dict]:
    """A trip, a probe and a resume ten minutes into a run, some with a ratio, some with probe counts, at
    requests late in the window's series (which starts at request 0), as a breaker trips."""
    at = datetime.fromisoformat(started_at.replace("Z", "+00:00"))

    def moment(minutes: int) -> str:
        return (at + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

    return [
        {"at": moment(10), "seq": 400, "kind": "tripped", "ratio": 0.41, "samples": 120},
        {"at": moment(12), "seq": 400, "kind": "probe", "sent": 2, "bad": 0},
        {"at": moment(13), "seq": 420, "kind": "resumed", "ratio": 0.02, "samples": 60},
    ]


@contextmanager
def staff_page(browser, live_server, width: int):
    """A page logged in as staff in a window `width` wide (a phone's height below 400 px)."""
    context = browser.new_context(viewport={"width": width, "height": 900 if width > 400 else 844})
    try:
        page = context.new_page()
        log_in(page, live_server, "ops", "ops-password")
        yield page
    finally:
        context.close()


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name))


@pytest.mark.parametrize("width", WIDTHS)
def test_a_channels_last_error_wraps_on_a_phone(browser, live_server, fleet, staff, width):
    # A refused connection as requests words it: one token of some 50 characters with no space in it.
    error = (
        "ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: ... "
        "(Caused by NewConnectionError(\"HTTPConnection(host='127.0.0.1', port=9): Failed to establish a new "
        'connection: [Errno 111] Connection refused"))'
    )
    for broken in (False, True):
        Channel.objects.filter(pk=fleet.pk).update(last_error=error, last_error_at=timezone.now(), broken=broken)
        with staff_page(browser, live_server, width) as page:
            page.goto(f"{live_server.url}/alerts/channels/{fleet.pk}/")
            assert "Connection refused" in page.inner_text("main")
            assert page.evaluate(NO_SIDEWAYS_SCROLL), (broken, page.evaluate("document.scrollingElement.scrollWidth"))
            screenshot(page, f"channel-error-{width}-{'broken' if broken else 'retrying'}.png")


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways_and_each_is_screenshotted(browser, live_server, fleet, staff, width):
    with staff_page(browser, live_server, width) as page:
        run_id = page.locator("tr[data-slug=quiet-feed] a.verdict").get_attribute("href")
        pages = {
            "overview": "/",
            "source": "/sources/big-marketplace-listings-eu/",
            "run": run_id,
            "alerts": "/alerts/",
            "channels": "/alerts/channels/",
            "proxies": "/proxies/",
        }
        for name, path in pages.items():
            page.goto(f"{live_server.url}{path}")
            if page.locator(".chart").count():
                wait_until(page, "[...document.querySelectorAll('.chart')].every(c => c.querySelector('.main-svg'))")
            assert page.evaluate(NO_SIDEWAYS_SCROLL), (name, page.evaluate("document.scrollingElement.scrollWidth"))
            assert page.evaluate(TICK_LABELS_CROSSING) == [], name
            # Tables that are cards on a phone keep every cell on the screen, not in a box to scroll.
            right = page.evaluate(
                "Math.max(0, ...[...document.querySelectorAll('table.cards td, table.proxies > tbody > tr > td')].map(e => e.getBoundingClientRect().right))"
            )
            assert width > 600 or right <= width, (name, right)
            if name == "source":
                # "vs floor", how far a field is below its floor, is on the screen, not past the box's edge.
                edge = page.evaluate(
                    "document.querySelector('#fields table.fields th:last-child').getBoundingClientRect().right"
                )
                assert edge <= width, edge
            if name == "run":
                # A proxy's long name and its change are read on the screen, not in a box to scroll.
                proxy = page.locator("#proxies td[data-label=proxy]").first
                assert "pool-eu-west/exit-" in proxy.inner_text()
                page.locator("#proxies").screenshot(path=str(SCREENSHOTS / f"run-proxies-{width}.png"))
                # On a phone each report key stands over its value: a long counter name does not squeeze
                # every value into a narrow column beside it.
                key, value = page.evaluate(
                    "[...document.querySelectorAll('#report table.kv tr')].slice(1, 2)"
                    ".flatMap(r => [r.querySelector('th'), r.querySelector('td')])"
                    ".map(e => e.getBoundingClientRect().toJSON())"
                )
                assert (key["bottom"] <= value["top"] + 1) == (width <= 600), (key, value)
                # The breaker's events are read the same way: a trip's ratio, a probe's bad of sent.
                probe = page.locator("#failure-window tr.event.probe td[data-label='probe bad / sent']")
                assert probe.inner_text() == "0 / 2"
                tripped_samples = page.locator("#failure-window tr.event.tripped td[data-label=samples]")
                assert tripped_samples.inner_text() == "120"
                # A probe has no ratio and no samples: on a phone those lines are left out, not shown empty.
                blank = page.locator("#failure-window tr.event.probe td[data-label=samples]")
                assert blank.is_visible() == (width > 600)
                page.locator("#failure-window table").screenshot(path=str(SCREENSHOTS / f"run-breaker-{width}.png"))
            screenshot(page, f"{name}-{width}.png")
            if name in ("source", "run", "channels"):
                page.evaluate("window.scrollBy(0, window.innerHeight * 0.9)")
                screenshot(page, f"{name}-{width}-2.png")
        # The header's links and "Log out" are all on screen, none cut off at the right.
        right = page.evaluate(
            "Math.max(...[...document.querySelectorAll('.top a, .top button')]"
            ".map(e => e.getBoundingClientRect().right))"
        )
        assert right <= width


def test_the_overview_refreshes_in_place_keeping_filters_and_scroll(browser, live_server, fleet, staff, api):
    context = browser.new_context(viewport={"width": 1440, "height": 700})
    page = context.new_page()
    try:
        log_in(page, live_server, "ops", "ops-password")
        page.goto(f"{live_server.url}/?region=eu-west")
        assert page.locator("#sources tbody tr").count() == 40
        assert page.locator("#updated").get_attribute("data-refresh-seconds") == "60"
        before = page.locator("#updated time").get_attribute("datetime")
        page.fill("input[name=q]", "half-typed")
        page.evaluate("window.scrollTo(0, 600)")
        Source.objects.filter(slug="filler-07").update(region="us-east")
        page.wait_for_timeout(1100)  # the stamp has seconds
        page.evaluate("window.completenessRefresh()")
        wait_until(page, f"document.querySelector('#updated time').getAttribute('datetime') !== {json.dumps(before)}")
        assert page.locator("#sources tbody tr").count() == 39  # the filter still applies
        assert page.evaluate("window.scrollY") == 600
        assert page.input_value("input[name=q]") == "half-typed"
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_channel_form_lists_every_source_in_a_box_that_scrolls_down(browser, live_server, fleet, staff, width):
    # CSS columns in a box of fixed height spilled sideways: 27 of 60 sources showed, with no hint.
    with staff_page(browser, live_server, width) as page:
        page.goto(f"{live_server.url}/alerts/channels/")
        box = page.locator("#id_sources")
        sizes = box.evaluate("b => [b.scrollWidth, b.clientWidth, b.scrollHeight, b.clientHeight]")
        scroll_width, client_width, scroll_height, client_height = sizes
        assert scroll_width <= client_width + 1, sizes
        assert scroll_height > client_height, sizes  # 42 sources: more than the box shows, below
        last = box.locator("label").last
        assert last.inner_text().strip() == "quiet-feed"
        last.scroll_into_view_if_needed()
        inside = box.evaluate(
            "(b, l) => { const r = l.getBoundingClientRect(), o = b.getBoundingClientRect();"
            " return r.left >= o.left && r.right <= o.right + 1 && r.top >= o.top && r.bottom <= o.bottom + 1 }",
            last.element_handle(),
        )
        assert inside


@pytest.mark.parametrize("width", WIDTHS)
def test_the_channel_forms_checkboxes_are_targets_a_finger_can_hit(browser, live_server, fleet, staff, width):
    """The sources' and tags' labels (each ticks its box) stood 21 px tall and touching, a list of 42 on a
    phone: under the 24 px WCAG 2.5.8 asks of targets that close together."""
    with staff_page(browser, live_server, width) as page:
        page.goto(f"{live_server.url}/alerts/channels/")
        heights = page.evaluate(
            "[...document.querySelectorAll('#id_sources label, #id_tags label')].map(l => l.getBoundingClientRect().height)"
        )
        assert len(heights) > 40 and min(heights) >= 24, sorted(heights)[:3]
        # The whole label is the target: a tap on its name ticks the box.
        label = page.locator("#id_sources label").last
        label.click(position={"x": 60, "y": 3})
        assert label.locator("input").is_checked()

"""The pages in a real browser: Playwright drives Debian's chromium against a live server.

Screenshots of the overview, a source page, and a source and run page with field coverage at 1440 and
390 px go to var/screenshots/ (CI keeps them as artifacts).
"""

import os
import re
import time
from pathlib import Path

import pytest

from sources.models import Source
from tests.conftest import run_report

# Playwright's sync API runs an event loop in this thread; the ORM calls of the test setup are
# still plain synchronous calls, which Django would otherwise refuse inside a running loop.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parent.parent / "var" / "screenshots"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


# Chromium reports a CSP violation as a console error ("Refused to ..."), and the page sees a
# securitypolicyviolation event; the init script (run by DevTools, outside the policy) logs the event
# too, so that a violation in an iframe or a worker is not missed either.
REPORT_VIOLATIONS = """
document.addEventListener('securitypolicyviolation', e =>
    console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} in ${e.sourceFile}:${e.lineNumber}`));
"""


def open_page(browser, width: int = 1400, height: int = 1000):
    """A new page that collects every Content-Security-Policy violation into `page.csp_violations`."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    page.csp_violations = []
    page.on("console", lambda message: _collect_violation(page, message))
    return context, page


def wait_until(page, expression: str, timeout: float = 30_000) -> None:
    """Wait until the JavaScript expression is true, as page.wait_for_function, but checked from here
    with page.evaluate (DevTools, outside the page's policy). Playwright polls a string predicate by
    evaluating it inside the page, which the Content-Security-Policy (no 'unsafe-eval') refuses: the
    wait failed with an EvalError whenever its first check was false, so a chart slow to draw under
    load failed a test. `timeout` in milliseconds, as Playwright's."""
    deadline = time.monotonic() + timeout / 1000
    while not page.evaluate(f"!!({expression})"):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout / 1000:g} s: {expression}")
        page.wait_for_timeout(50)


def _collect_violation(page, message) -> None:
    if message.type == "error" and ("Content Security Policy" in message.text or "CSP violation" in message.text):
        page.csp_violations.append(message.text)


@pytest.fixture
def page(browser):
    context, page = open_page(browser)
    yield page
    context.close()
    # Every page must work under the policy: a blocked script or style fails the test that saw it.
    assert page.csp_violations == []


@pytest.fixture
def sources(transactional_db, api):
    # Six days up to today: the silent counts count runs by when they ran, and "last 24 hours" must
    # hold the latest.
    for n in range(5, -1, -1):
        api.post_run(run_report("healthy-shop", n, collected=1000, declared_total=1000))
        # Losing 5-8% every run with exit 0: silent degradation on the last three.
        lost = 60 if n <= 2 else 0
        api.post_run(run_report("quiet-feed", n, collected=550 - lost, declared_total=550))
    return Source.objects.all()


def log_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def test_overview_lists_the_silent_source_above_the_healthy_one(page, live_server, sources, staff):
    log_in(page, live_server, "ops", "ops-password")
    slugs = page.locator("#sources tbody tr").evaluate_all("rows => rows.map(r => r.dataset.slug)")
    assert slugs == ["quiet-feed", "healthy-shop"]
    assert page.locator("tr[data-slug=quiet-feed] .flag.silent").count() == 1
    assert page.locator("tr[data-slug=healthy-shop] .flag.silent").count() == 0
    assert page.locator("[data-count=silent-24h] .n").inner_text() == "1"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "overview.png"), full_page=True)


def test_source_page_draws_its_plotly_charts(page, live_server, sources, staff):
    log_in(page, live_server, "ops", "ops-password")
    page.goto(f"{live_server.url}/sources/quiet-feed/")
    page.locator("#chart-completeness .main-svg").first.wait_for()
    for name in ("collected", "completeness"):
        chart = page.locator(f"#chart-{name}")
        assert chart.locator(".main-svg").count() >= 1, name
    # What has nothing to draw is a line of text, not an empty chart.
    for name in ("coverage", "breaker", "proxies"):
        assert page.locator(f"#blank-charts [data-blank={name}]").is_visible(), name
        assert page.locator(f"#chart-{name} .main-svg").count() == 0, name
    # Lines and markers were drawn, not only empty axes.
    assert page.locator("#chart-collected .scatterlayer .trace").count() >= 3
    assert page.locator("#chart-collected .point").count() >= 3
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "source.png"), full_page=True)


@pytest.fixture
def listings(transactional_db, api):
    fields = [
        {"title": 1000, "price": 990, "phone": 620},
        {"title": 1000, "price": 985, "phone": 610},
        {"title": 1000, "price": 480, "phone": 600},
    ]
    for n, counted in zip((3, 2, 1), fields, strict=True):
        api.post_run(run_report("listings", n, declared_total=1000, fields=counted))
    return Source.objects.get(slug="listings")


@pytest.mark.parametrize("width", [1440, 390])
def test_a_source_with_fields_draws_its_coverage_chart_and_lists_its_fields(
    browser, live_server, listings, staff, width
):
    context, page = open_page(browser, width, 900)
    try:
        log_in(page, live_server, "ops", "ops-password")
        page.goto(f"{live_server.url}/sources/listings/")
        wait_until(page, "document.querySelectorAll('.chart .main-svg').length >= 5")
        coverage = page.locator("#chart-coverage")
        assert coverage.locator(".main-svg").count() >= 1
        assert coverage.locator(".scatterlayer .trace").count() >= 6  # three fields, their floors, the below marks
        assert "price" in coverage.locator(".legend").text_content()
        assert page.locator("#fields tr.below code").first.inner_text() == "price"
        # Nothing wider than the screen: the page does not scroll sideways on a phone.
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"source-fields-{width}.png"), full_page=True)
        page.click("#history tbody tr:first-child a")
        assert page.locator("#fields tr.below code").first.inner_text() == "price"
        page.screenshot(path=str(SCREENSHOTS / f"run-fields-{width}.png"), full_page=True)
    finally:
        context.close()
    assert page.csp_violations == []


def test_staff_saves_rule_settings_and_sees_a_bad_line_named(page, live_server, listings, staff):
    log_in(page, live_server, "ops", "ops-password")
    page.goto(f"{live_server.url}/sources/listings/")
    page.fill("#settings textarea[name=field_minimums]", "price = 95%\nphone fifty")
    page.click("#settings button[type=submit]")
    page.wait_for_selector("#settings .field-errors")
    assert "line 2 “phone fifty”" in page.locator("#settings .field-errors").inner_text()
    assert Source.objects.get(slug="listings").field_minimums == {}
    page.fill("#settings textarea[name=field_minimums]", "price = 95%\nphone = 0.5")
    page.click("#settings button[type=submit]")
    page.wait_for_selector(".messages .success")
    assert Source.objects.get(slug="listings").field_minimums == {"price": 0.95, "phone": 0.5}


def test_pause_form_pauses_and_the_overview_shows_it(page, live_server, sources, staff):
    log_in(page, live_server, "ops", "ops-password")
    page.goto(f"{live_server.url}/sources/healthy-shop/")
    page.fill("#pause-form input[name=reason]", "proxy migration")
    page.click("#pause-form button[type=submit]")
    page.wait_for_selector("#resume")
    assert "Paused" in page.locator(".paused-note").inner_text()
    page.goto(f"{live_server.url}/")
    assert page.locator("tr[data-slug=healthy-shop] .pill").inner_text() == "paused"
    assert page.locator("[data-count=paused] .n").inner_text() == "1"
    assert Source.objects.get(slug="healthy-shop").paused_by == "user:ops"


def test_a_link_from_an_alert_keeps_its_place_through_the_login(page, live_server, sources, staff):
    # The acknowledge link of every alert is /alerts/#ack-<slug>: the browser never sends the #part, so
    # a phone that was not logged in landed at the top of /alerts/, the form a screen or two below.
    page.goto(f"{live_server.url}/alerts/#ack-quiet-feed")
    page.fill("input[name=username]", "ops")
    page.fill("input[name=password]", "ops-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/alerts/#ack-quiet-feed")
    # A link without one lands where it pointed, with nothing added.
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/alerts/")
    page.fill("input[name=username]", "ops")
    page.fill("input[name=password]", "ops-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/alerts/")


def test_an_acknowledge_link_of_the_old_form_to_an_ended_problem_says_what_became_of_it(
    page, live_server, sources, staff
):
    # /alerts/#ack-<slug>, as alerts linked before the link named its source in the query: healthy-shop
    # has no open problem, so the page has no row for it, and the server never saw the #part.
    log_in(page, live_server, "ops", "ops-password")
    page.goto(f"{live_server.url}/alerts/#ack-healthy-shop")
    page.wait_for_url(f"{live_server.url}/alerts/?ack=healthy-shop#ack-healthy-shop")
    notice = page.locator("[data-part=acknowledge-target]").inner_text()
    assert notice.startswith("healthy-shop has no open problem now: it is ok since"), notice
    # A listed problem's link stays as it is, and opens at its row.
    page.goto(f"{live_server.url}/alerts/#ack-quiet-feed")
    page.wait_for_load_state()
    assert page.url == f"{live_server.url}/alerts/#ack-quiet-feed"
    assert page.locator("#ack-quiet-feed").is_visible()
    assert page.locator("[data-part=acknowledge-target]").count() == 0


def test_non_staff_user_cannot_switch_a_rule_mode(page, live_server, sources, viewer):
    log_in(page, live_server, "viewer", "viewer-password")
    page.goto(f"{live_server.url}/sources/quiet-feed/")
    assert page.locator("form[action$='/rules']").count() == 0
    # Even a hand-made POST with a valid CSRF token is refused by the server.
    token = page.locator("#pause-form input[name=csrfmiddlewaretoken]").input_value()
    response = page.request.post(
        f"{live_server.url}/sources/quiet-feed/rules",
        form={"rule": "declared_total", "mode": "observe", "csrfmiddlewaretoken": token},
        headers={"Referer": f"{live_server.url}/sources/quiet-feed/"},
    )
    assert response.status == 403
    assert Source.objects.get(slug="quiet-feed").rule_modes == {}


def test_staff_user_can_switch_a_rule_mode(page, live_server, sources, staff):
    log_in(page, live_server, "ops", "ops-password")
    page.goto(f"{live_server.url}/sources/quiet-feed/")
    # The button names what it does, not the mode the rule is in.
    assert page.locator("tr[data-rule=declared_total] button").inner_text() == "switch to observe"
    page.click("tr[data-rule=declared_total] button")
    page.wait_for_selector(".messages .success")
    assert re.search(r"observe", page.locator("tr[data-rule=declared_total] .mode").inner_text())
    assert Source.objects.get(slug="quiet-feed").rule_modes == {"declared_total": "observe"}


def test_every_page_works_under_the_content_security_policy(page, live_server, sources, django_user_model):
    from sources.models import Run

    django_user_model.objects.create_superuser("root", password="root-password")
    log_in(page, live_server, "root", "root-password")
    run = Run.objects.filter(source__slug="quiet-feed").latest("started_at")
    paths = [
        "/",
        "/sources/quiet-feed/",
        f"/runs/{run.pk}/",
        "/proxies/",
        "/alerts/",
        "/alerts/channels/",
        "/admin/",
        "/admin/sources/source/",
        "/api/v1/docs",
    ]
    for path in paths:
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        assert "script-src 'self' 'nonce-" in response.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
    # The charts drew under it, and the API docs page (swagger-ui) rendered its operations.
    assert page.locator(".opblock").count() >= 5
    assert page.csp_violations == []

"""The source page's headline in a real browser: on a 390 px phone the first screen
says what is wrong, since when, how many records and who owns it, without scrolling sideways or down.
Screenshots: var/screenshots/headline-<width>.png."""

import pytest

from sources.models import Source
from tests.conftest import run_report
from tests.test_browser import SCREENSHOTS, browser, log_in, sync_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(sync_api is None, reason="playwright is not installed")

PARTS = ("problem", "overwritten", "since", "cost", "owner", "next")


@pytest.fixture
def overwritten(transactional_db, api):
    for n in (6, 5, 4, 3):
        api.post_run(run_report("cars-example", n, collected=9000, declared_total=9000))
    for n in (2, 1):
        api.post_run(
            run_report(
                "cars-example", n, collected=1200, declared_total=9000, snapshot={"action": "replaced", "rows": 1200}
            )
        )
    Source.objects.filter(slug="cars-example").update(
        owner="amira",
        team="gulf",
        runbook_url="https://runbooks.example.com/cars-example",
    )


@pytest.mark.parametrize("width,height", [(390, 844), (1440, 900)])
def test_the_first_screen_says_what_since_when_how_many_and_who(
    browser, live_server, overwritten, staff, width, height
):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        log_in(page, live_server, "ops", "ops-password")
        page.goto(f"{live_server.url}/sources/cars-example/")
        headline = page.locator("#headline")
        for part in PARTS:
            box = headline.locator(f"[data-part={part}]").first.bounding_box()
            assert box is not None, part
            # On the first screen, and inside its width.
            assert box["y"] + box["height"] <= height and box["x"] + box["width"] <= width + 0.5, (part, box)
        text = " ".join(headline.inner_text().split())
        assert "1,200" in text and "9,000" in text
        assert "Snapshot overwritten" in text
        assert "15,600 of 18,000 expected records missing over 2 incomplete runs" in text
        assert "Failing for 2 days" in text and "amira" in text and "gulf" in text
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"headline-{width}.png"))
    finally:
        context.close()

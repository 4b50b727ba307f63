"""What a screen reader is given in the markup: a text alternative for every chart."""

from __future__ import annotations

import re

from tests.conftest import run_report
from tests.test_proxies_page import pool  # noqa: F401 (fixture)
from tests.test_run_page import run_id  # noqa: F401 (fixture)


def _figures(page: str) -> dict[str, str]:
    """Each <figure>'s chart id and its caption's words."""
    found = re.findall(
        r'<figure[^>]*>\s*<div class="chart" id="chart-(\w+)".*?<figcaption[^>]*>(.*?)</figcaption>', page, re.S
    )
    return {name: " ".join(re.sub(r"<[^>]+>", " ", caption).split()) for name, caption in found}


def test_each_chart_of_a_source_says_in_words_what_it_draws(api, staff_client):
    """A Plotly chart is an SVG of tick labels to a screen reader, and an empty box without JavaScript:
    the collected line, the declared total and the incomplete runs it marks were nowhere in words."""
    for n in (4, 3, 2):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000, fields={"price": 8900}))
    api.post_run(run_report("shop", 1, collected=1200, declared_total=9000, fields={"price": 600}, exit_code=1))
    page = staff_client.get("/sources/shop/").content.decode()
    captions = _figures(page)
    assert set(captions) == {"collected", "coverage", "completeness"}, captions
    assert "Latest: collected 1,200; declared total 9,000" in captions["collected"]
    assert "Marked: 1 incomplete (crawler knew)" in captions["collected"]
    assert "UTC" in captions["collected"]
    assert "price 50.0%" in captions["coverage"]
    assert "13.3%" in captions["completeness"]


def test_the_run_and_proxies_charts_say_it_too(run_id, pool, staff_client):  # noqa: F811 (fixtures)
    window = _figures(staff_client.get(f"/runs/{run_id}/").content.decode())
    assert list(window) == ["window"] and "request sequence 0 to 4,100" in window["window"], window
    capacity = _figures(staff_client.get("/proxies/").content.decode())
    assert list(capacity) == ["capacity"] and "Latest: eligible" in capacity["capacity"], capacity

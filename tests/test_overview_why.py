"""The overview's "why": the worst enforced finding in a short sentence, every enforced rule as a tag."""

import json
import re

from tests.conftest import EXAMPLES_DIR
from tests.test_overview import _queries, row_html, seed


def post_example(api, name: str) -> None:
    for step in json.loads((EXAMPLES_DIR / f"{name}.json").read_text())["steps"][
        : 2 if name.startswith("s08") else None
    ]:
        assert api.post_run(step["report"]).status_code == 201


def why(response, slug: str) -> tuple[str, list[str]]:
    cell = row_html(response, slug)
    cell = cell[cell.index('class="why"') :]
    cell = cell[: cell.index("</td>")]
    cell = re.sub(r'<span class="nowrap">(.*?)</span>', r"\1", cell)  # a date kept on one line
    reason = re.search(r'class="reason">(.*?)</span>', cell)
    return (reason.group(1) if reason else ""), re.findall(r'class="tag">(.*?)</span>', cell)


def test_a_field_coverage_run_names_the_worst_field(api, staff_client):
    post_example(api, "s08-field-coverage")
    assert why(staff_client.get("/"), "listings-fc") == (
        "price filled in 48.0% of 1,000 records, floor 89.0% (baseline 99.0% minus 10 points)",
        ["field_coverage"],
    )


def test_a_trend_run_names_the_decline_and_its_reference(api, staff_client):
    post_example(api, "s09-slow-decline")
    assert why(staff_client.get("/"), "ads-slow") == (
        "collected 693, 30.7% below the best of the last 30 days (1,000 on 2026-09-14)",
        ["trend"],
    )


def test_the_worst_finding_speaks_and_every_enforced_rule_is_tagged(api, staff_client):
    seed(
        api,
        "loud",
        {
            "collected": 600,
            "exit_code": 1,
            "pages": {"expected": 10, "fetched": 8, "lost": 2},
            "delivery": {"attempted": 10, "delivered": 5},
        },
    )
    reason, tags = why(staff_client.get("/"), "loud")
    assert reason.startswith("collected 600 of 1,000 declared")
    # The crawler exited 1: crawler_reported, last of the enforced rules; delivery is observed: no tag.
    assert tags == ["declared_total", "lost_pages", "crawler_reported"]


def test_a_healthy_source_has_no_why(api, staff_client):
    seed(api, "fine", {})
    assert why(staff_client.get("/"), "fine") == ("", [])


def test_a_long_first_clause_is_cut_short(api, staff_client):
    urls = [f"https://shop.test/listing/{'x' * 80}?page={p}" for p in range(3)]
    seed(api, "urls", {"pages": {"expected": 10, "fetched": 7, "lost": 3, "lost_urls": urls}, "exit_code": 1})
    reason, _ = why(staff_client.get("/"), "urls")
    assert len(reason) <= 160 and reason.endswith("…")


def test_the_why_costs_no_query(api, staff_client):
    seed(api, "s-0", {})
    few = _queries(staff_client)
    for n in range(1, 6):
        post_example(api, "s09-slow-decline") if n == 1 else seed(api, f"s-{n}", {"collected": 500})
    # 10, the broken-channel banner's one, the acknowledgements and the rows' last runs (findings included),
    # the owner and team filters, the sources no channel covers, and those that went quiet with no clock
    assert _queries(staff_client) == few == 21  # 16, and the fleet's week (tests/test_overview_fleet.py)

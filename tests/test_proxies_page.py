"""The proxies page: a proxy excluded for a passing reason is capacity lost by mistake; a revoked one is not."""

import json
import re

import pytest

from sources.pages.proxies import lost_by_mistake
from tests.conftest import day, run_report


def transition(proxy: str, frm: str, to: str, reason: str, stage: str, n: int = 1) -> dict:
    return {"proxy": proxy, "at": day(n), "from": frm, "to": to, "reason": reason, "stage": stage}


@pytest.fixture
def pool(api):
    api.post_run(
        run_report(
            "shop",
            2,
            proxy_transitions=[
                transition("pool-ae/slow", "eligible", "excluded", "slow_body", "body", 2),
                transition("pool-ae/revoked", "eligible", "excluded", "account_revoked", "auth", 2),
                transition("pool-ae/cool", "eligible", "cooling", "connect_timeout", "connect", 2),
            ],
        )
    )
    api.post_run(
        run_report(
            "shop",
            1,
            proxy_transitions=[
                transition("pool-ae/cool", "cooling", "probe_allowed", "cooldown_expired", "probe", 1),
                transition("pool-eu/fine", "probe_allowed", "eligible", "probe_succeeded", "probe", 1),
            ],
        )
    )


def row(page: str, proxy: str) -> str:
    start = page.index(f'data-proxy="{proxy}"')
    return page[start : page.index("</details>", start) if "</details>" in page[start:] else None]


def test_slow_body_exclusion_is_flagged_revoked_account_is_not(pool, staff_client):
    page = staff_client.get("/proxies/").content.decode()
    assert "lost by mistake" in row(page, "pool-ae/slow")
    assert "lost by mistake" not in row(page, "pool-ae/revoked")
    assert "lost by mistake" not in row(page, "pool-ae/cool")
    assert re.search(r'data-count="lost-by-mistake"><span class="n">1<', page)


def test_pools_current_state_and_history(pool, staff_client):
    page = staff_client.get("/proxies/").content.decode()
    assert "Pool pool-ae" in page and "Pool pool-eu" in page
    assert "probe allowed" in row(page, "pool-ae/cool")
    assert "2 transitions" in row(page, "pool-ae/cool")


def test_a_cooldown_that_ended_since_the_last_report_says_so_and_one_still_running_does_not(api, staff_client):
    # "cooling until 09:34" read at 09:53 claimed a cooldown still running: the state is the last report's.
    from datetime import UTC, datetime, timedelta

    ahead = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    past = transition("pool-x/past", "eligible", "cooling", "connect_refused", "connect", 1) | {"until": day(1, 2)}
    running = transition("pool-x/ahead", "eligible", "cooling", "slow_body", "body", 1) | {"until": ahead}
    api.post_run(run_report("shop", 1, proxy_transitions=[past, running]))
    page = staff_client.get("/proxies/").content.decode()
    assert "(passed: no report since said how its probe went)" in row(page, "pool-x/past")
    assert "passed" not in row(page, "pool-x/ahead")


def test_capacity_chart_counts_eligible_proxies_over_time(pool, staff_client):
    page = staff_client.get("/proxies/").content.decode()
    figure = json.loads(re.search(r'data-target="chart-capacity">(.*?)</script>', page, re.S).group(1))
    eligible = next(t for t in figure["data"] if t["name"] == "eligible")
    # Before anything changed: slow, revoked and cool were eligible, fine was probe_allowed.
    assert eligible["y"][0] == 3
    assert eligible["y"][-1] == 1  # only pool-eu/fine is eligible at the end


def test_no_transitions_is_an_empty_page_not_an_error(staff_client):
    assert b"No proxy transitions reported yet." in staff_client.get("/proxies/").content


@pytest.mark.parametrize(
    "reason, flagged",
    [
        ("slow_body", True),
        ("connect_timeout", True),
        ("connect_refused", True),
        ("probe_failed", True),
        ("account_revoked", False),
        ("operator_removed", False),
    ],
)
def test_lost_by_mistake_rule(reason, flagged):
    assert lost_by_mistake("excluded", reason) is flagged
    assert lost_by_mistake("cooling", reason) is False

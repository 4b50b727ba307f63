"""Each proxy's current state, kept at ingest (sources/ingest/proxy_current.py): the proxies page lists
and counts one row per proxy instead of ranking every transition ever stored."""

import random

import pytest

from sources.ingest import proxy_current
from sources.models import ProxyCurrent, Run
from tests.conftest import day, run_report

pytestmark = pytest.mark.django_db


def transition(proxy: str, n: float, to: str, frm: str = "eligible", reason: str = "slow_body") -> dict:
    return {"proxy": proxy, "at": day(n), "from": frm, "to": to, "reason": reason, "stage": "body"}


def current() -> dict[str, tuple[str, str]]:
    return {
        row.proxy: (row.transition.to_state, row.transition.at.isoformat())
        for row in ProxyCurrent.objects.select_related("transition")
    }


def test_a_report_of_older_news_arriving_later_leaves_a_proxy_in_its_newest_state(api):
    assert api.post_run(run_report("shop", 1, proxy_transitions=[transition("p/a", 1, "excluded")])).status_code == 201
    assert current()["p/a"][0] == "excluded"
    # Another crawler's run of three days ago arrives now: older news of the same proxy.
    assert api.post_run(run_report("feed", 3, proxy_transitions=[transition("p/a", 3, "cooling")])).status_code == 201
    assert current()["p/a"][0] == "excluded"
    # Newer news moves it.
    news = [transition("p/a", 0.5, "eligible", frm="excluded", reason="probe_succeeded")]
    assert api.post_run(run_report("feed", 0, proxy_transitions=news)).status_code == 201
    assert current()["p/a"][0] == "eligible"


def test_within_a_report_the_latest_dated_transition_wins_and_then_the_later_listed(api):
    transitions = [
        transition("p/a", 1.01, "cooling"),
        transition("p/a", 1.02, "excluded"),  # later dated, listed second
        transition("p/b", 1.0, "cooling"),
        transition("p/b", 1.0, "excluded"),  # same instant: listed last
        transition("p/c", 1.0, "excluded"),
        transition("p/c", 1.1, "cooling"),  # earlier dated, listed last
    ]
    assert api.post_run(run_report("shop", 1, proxy_transitions=transitions)).status_code == 201
    assert {proxy: state for proxy, (state, _) in current().items()} == {
        "p/a": "cooling",
        "p/b": "excluded",
        "p/c": "excluded",
    }


def test_what_ingest_keeps_is_what_a_rebuild_from_every_transition_finds(api):
    rng = random.Random(5)
    for n in rng.sample(range(1, 40), 25):  # runs arriving out of order, from three crawlers
        transitions = [
            transition(f"p/{rng.randrange(8)}", n - rng.random(), rng.choice(["cooling", "excluded", "eligible"]))
            for _ in range(rng.randint(1, 6))
        ]
        source = rng.choice(["shop", "feed", "jobs"])
        assert api.post_run(run_report(source, n, proxy_transitions=transitions)).status_code == 201
    kept = current()
    assert len(kept) >= 6
    proxy_current.rebuild()
    assert current() == kept


def test_a_proxy_whose_latest_transition_is_deleted_with_its_run_leaves_the_page(api, staff_client):
    assert (
        api.post_run(run_report("shop", 2, proxy_transitions=[transition("p/old", 2, "excluded")])).status_code == 201
    )
    assert api.post_run(run_report("shop", 1, proxy_transitions=[transition("p/new", 1, "cooling")])).status_code == 201
    Run.objects.filter(run_id="shop-2-").delete()
    assert set(current()) == {"p/new"}
    page = staff_client.get("/proxies/").content.decode()
    assert 'data-proxy="p/new"' in page and 'data-proxy="p/old"' not in page

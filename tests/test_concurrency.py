"""Real parallel requests against a live server on PostgreSQL: one run per run_id, consistent baselines."""

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
import requests
from django.db import connection

from sources.models import Run, Source
from tests.conftest import make_token, report

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks and parallel writers are tested on PostgreSQL"
)
WORKERS = 8


def post_all(url: str, token: str, bodies: list[dict]) -> list[requests.Response]:
    session = requests.Session()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(body):
        return session.post(f"{url}/api/v1/runs", data=json.dumps(body), headers=headers, timeout=30)

    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(post, bodies))


@pytest.mark.django_db(transaction=True)
def test_the_same_run_posted_at_once_is_stored_once(live_server):
    token = make_token("parallel")
    for attempt in range(5):
        body = report(source=f"race-{attempt}", run_id="the-run")
        statuses = sorted(r.status_code for r in post_all(live_server.url, token, [body] * WORKERS))
        assert statuses == [200] * (WORKERS - 1) + [201]
        assert Run.objects.filter(source__slug=f"race-{attempt}").count() == 1
        assert Source.objects.filter(slug=f"race-{attempt}").count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_same_run_id_with_different_bodies_at_once_keeps_one(live_server):
    token = make_token("parallel")
    bodies = [report(source="race", run_id="r", collected=1000 + i) for i in range(WORKERS)]
    statuses = sorted(r.status_code for r in post_all(live_server.url, token, bodies))
    assert statuses == [201] + [409] * (WORKERS - 1)
    assert Run.objects.count() == 1


@pytest.mark.parametrize("source", ["busy-1", "busy-2", "busy-3"])
@pytest.mark.django_db(transaction=True)
def test_runs_of_one_source_arriving_together_see_a_consistent_baseline(live_server, source):
    token = make_token("parallel")
    start = datetime(2026, 9, 1, 3, tzinfo=UTC)

    def body(n: int, collected: int) -> dict:
        at = start + timedelta(hours=n)
        return report(
            source=source,
            run_id=f"run-{n:03d}",
            collected=collected,
            started_at=at.isoformat(),
            finished_at=(at + timedelta(minutes=30)).isoformat(),
        )

    # Complete runs and sharp drops, in a shuffled order of start times, all at once.
    bodies = [body(n, 1000 + n if n % 3 else 100) for n in (5, 1, 9, 3, 7, 2, 8, 4, 6, 10, 12, 11, 15, 13, 14, 16)]
    responses = post_all(live_server.url, token, bodies)
    assert all(r.status_code == 201 for r in responses), [r.content for r in responses]

    # Replay in the order the server judged them (its row lock serialises them by id):
    # each run's baseline must be the latest complete run started before it, among those judged before it.
    judged = []
    for run in Run.objects.order_by("id"):
        earlier_good = [r for r in judged if r.verdict == "complete" and r.started_at < run.started_at]
        expected = max(earlier_good, key=lambda r: r.started_at).collected if earlier_good else None
        assert run.baseline_collected == expected, run.run_id
        judged.append(run)
    state = Source.objects.get(slug=source)
    latest_good = max((r for r in judged if r.verdict == "complete"), key=lambda r: r.started_at)
    assert state.baseline_collected == latest_good.collected
    # The latest run by start time, however the requests interleaved.
    assert state.last_run.run_id == "run-016" and state.last_verdict == "complete"

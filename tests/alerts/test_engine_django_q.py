"""End to end on django-q2, the default engine: reports posted to the API, jobs run by django-q2 in sync mode
(on commit, as the worker would), and a Slack-compatible receiver on 127.0.0.1 gets exactly the expected messages.
"""

import pytest
from django_q.models import Schedule

from sources import jobs
from sources.models import Notification, PauseOrigin, Source
from sources.services import pausing
from tests.alerts.sinks import HttpSink, Reply
from tests.conftest import report

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=300)


@pytest.fixture(autouse=True)
def no_grouping(settings):
    # These tests are about the engine, one source at a time; django-q2 sweeps once a minute, which
    # would hold a second alert within the grouping window that long. Storms: test_storms.py, and
    # end to end the Celery test, whose beat sweeps every half second.
    settings.ALERTS_GROUP_SECONDS = 0


@pytest.fixture
def post(api, inline_jobs, django_capture_on_commit_callbacks):
    def post(n: int, source: str = "shop", **fields) -> dict:
        body = report(
            source=source,
            run_id=f"{source}-{n}",
            started_at=f"2026-09-{n:02d}T03:00:00Z",
            finished_at=f"2026-09-{n:02d}T04:00:00Z",
            **fields,
        )
        # Commit callbacks run as after a real commit: that is where deliveries are enqueued.
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post_run(body)
        assert response.status_code == 201, response.content
        return response.json()

    return post


def texts(sink: HttpSink) -> list[str]:
    return [r.json()["text"] for r in sink.received()]


def test_failing_once_silent_while_failing_resolved_when_complete(post, slack, http_sink):
    post(1, **GOOD)
    assert texts(http_sink) == []
    post(2, **BAD)
    assert len(texts(http_sink)) == 1 and "shop is failing silently (was ok)" in texts(http_sink)[0]
    post(3, **BAD)
    assert len(texts(http_sink)) == 1
    post(4, **GOOD)
    assert len(texts(http_sink)) == 2 and "shop is ok again (was failing)" in texts(http_sink)[1]
    assert set(Notification.objects.values_list("status", flat=True)) == {"sent"}


def test_a_paused_sources_failing_report_sends_nothing(post, slack, http_sink):
    post(1, source="quiet", **GOOD)
    pausing.pause_source(Source.objects.get(slug="quiet"), origin=PauseOrigin.API, actor="ops", reason="migration")
    assert post(2, source="quiet", **BAD)["verdict"] == "paused"
    assert http_sink.received() == [] and not Notification.objects.exists()


def test_a_receiver_answering_500_three_times_gets_the_message_from_the_sweep(post, slack, http_sink, no_backoff):
    http_sink.reply(Reply(500), Reply(500), Reply(500))
    post(1, **GOOD)
    post(2, **BAD)
    assert Notification.objects.get().status == "retrying"
    for _ in range(3):
        jobs.sweep_outbox()
    assert Notification.objects.get().status == "sent"
    assert len(http_sink.received()) == 4 and len({r.body for r in http_sink.received()}) == 1


def test_the_periodic_jobs_have_django_q_schedules():
    schedules = {s.name: s for s in Schedule.objects.all()}
    assert schedules["completeness.sweep_outbox"].func == "sources.jobs.sweep_outbox"
    assert schedules["completeness.check_overdue"].func == "sources.jobs.check_overdue"
    assert {s.schedule_type for s in schedules.values()} == {Schedule.MINUTES}
    assert schedules["completeness.prune"].func == "sources.jobs.prune"
    assert schedules["completeness.send_digests"].minutes == 60  # ALERTS_DIGEST_CHECK_SECONDS: hourly
    slow = ("completeness.prune", "completeness.send_digests")
    assert {s.minutes for name, s in schedules.items() if name not in slow} == {1}
    assert schedules["completeness.prune"].minutes == 24 * 60  # PRUNE_SECONDS: daily
    from sources.alerts.schedules import ensure_schedules

    ensure_schedules()  # idempotent: migrate runs it every time
    assert Schedule.objects.filter(name__startswith="completeness.").count() == 4


@pytest.mark.django_db(False)
def test_a_real_qcluster_delivers_exactly_the_expected_messages(tmp_path, e2e_template):
    """The same, with `manage.py qcluster` (ORM broker) and the web server as processes of their own."""
    import time

    from tests.alerts.stack import Stack

    def run(n, source, **fields):
        return dict(
            source=source,
            run_id=f"{source}-{n}",
            started_at=f"2026-09-{n:02d}T03:00:00Z",
            finished_at=f"2026-09-{n:02d}T04:00:00Z",
            exit_code=0,
            **fields,
        )

    with (
        HttpSink() as sink,
        e2e_template.copy(tmp_path) as db,
        Stack(tmp_path, db.url, TASK_ENGINE="django_q", ALERTS_GROUP_SECONDS=0) as stack,
    ):
        stack.serve()
        stack.start("qcluster", "manage.py", "qcluster")
        stack.setup(["slack", sink.url("/slack")])
        stack.wait_until_serving()
        for source in ("shop", "quiet"):
            assert stack.post_run(**run(1, source, **GOOD)).status_code == 201
        assert stack.post("/sources/quiet/pause", {"reason": "migration"}).status_code == 200
        assert stack.post_run(**run(2, "quiet", **BAD)).json()["verdict"] == "paused"
        assert stack.post_run(**run(2, "shop", **BAD)).json()["verdict"] == "incomplete"
        assert len(sink.wait_for(1, timeout=30)) == 1, stack.logs()
        assert stack.post_run(**run(3, "shop", **BAD)).status_code == 201
        assert stack.post_run(**run(4, "shop", **GOOD)).status_code == 201
        received = sink.wait_for(2, timeout=30)
        time.sleep(1.5)  # the ORM broker polls every 0.2 s: a stray message would be here by now
        received = sink.received()
        # "resolved" says how long the problem lasted: seconds here.
        assert [r.json()["text"].split("*")[1].split(", after ")[0] for r in received] == [
            "shop is failing silently (was ok)",
            "shop is ok again (was failing)",
        ], stack.logs()

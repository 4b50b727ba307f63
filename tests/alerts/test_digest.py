"""The weekly digest: each covered source's week in one line (runs, share complete, records short,
episodes, the longest), the worst first, with links; once a week per channel that wants one, email and
Slack, written by a periodic job on both engines. Real SMTP and HTTP receivers on 127.0.0.1."""

import email
from datetime import timedelta
from email import policy
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone

from completeness.alerts import digest
from sources.alerts import channels, digests
from sources.models import Channel, Flip, Notification, Run, Source
from tests.alerts.conftest import deliver_all

pytestmark = pytest.mark.django_db


def runs(slug: str, verdicts: list[str], *, expected: int = 1000, collected: int = 1000, days_ago: float = 1) -> None:
    source = Source.objects.get_or_create(slug=slug)[0]
    start = timezone.now() - timedelta(days=days_ago)
    for n, verdict in enumerate(verdicts):
        Run.objects.create(
            source=source,
            run_id=f"{slug}-{days_ago}-{n}",
            started_at=start + timedelta(minutes=n),
            finished_at=start + timedelta(minutes=n + 1),
            verdict=verdict,
            expected=expected,
            collected=expected if verdict == "complete" else collected,
            raw={},
        )


def episode(slug: str, began_hours_ago: float, lasted_hours: float | None) -> None:
    source = Source.objects.get(slug=slug)
    now = timezone.now()
    began = now - timedelta(hours=began_hours_ago)
    Flip.objects.create(source=source, old_health="ok", new_health="failing", at=began, cause="run")
    if lasted_hours is not None:
        Flip.objects.create(
            source=source, old_health="failing", new_health="ok", at=began + timedelta(hours=lasted_hours), cause="run"
        )
    else:
        Source.objects.filter(pk=source.pk).update(health="failing")


@pytest.fixture
def fleet(db):
    runs("steady", ["complete"] * 7)
    runs("leaky", ["complete"] * 5 + ["incomplete"] * 2, collected=400)  # 1,200 short
    runs("broken", ["complete"] + ["incomplete"] * 3, collected=100)  # 2,700 short
    runs("old", ["incomplete"] * 3, collected=0, days_ago=9)  # last week's: not counted
    episode("leaky", 30, 2)
    episode("broken", 50, 10)
    episode("broken", 20, None)  # still failing
    Source.objects.filter(slug="old").update(health="ok")


def test_the_digest_lists_each_source_worst_first_with_its_week_in_one_line(fleet, smtp_sink, settings):
    channels.create_channel(kind="email", target="ops@example.com", weekly_digest=True)
    channels.create_channel(kind="email", target="quiet@example.com")  # did not ask for one
    assert len(digests.send_digests()) == 1
    deliver_all()
    # Beside it, the two new channels were told of the sources already failing (reminders.brief).
    [envelope] = [m for m in smtp_sink.messages if b"Weekly digest" in m.content]
    message = email.message_from_bytes(envelope.content, policy=policy.default)
    assert envelope.rcpt_tos == ["ops@example.com"]
    assert message["Subject"].startswith("[completeness] Weekly digest, ")
    assert message["Subject"].endswith(": 4 sources, 3 with problems")
    text = message.get_body(("plain",)).get_content()
    lines = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    assert lines[0] == "old — no judged run this week, 0 records short, 0 episodes"
    assert lines[1] == "broken — 4 runs, 25% complete, 2,700 records short, 2 episodes, longest 20 h"
    assert lines[2] == "leaky — 7 runs, 71% complete, 1,200 records short, 1 episode, longest 2 h"
    assert lines[3] == "steady — 7 runs, 100% complete, 0 records short, 0 episodes"
    assert "http://127.0.0.1:8000/sources/broken/" in text
    html = message.get_body(("html",)).get_content()
    assert '<a href="http://127.0.0.1:8000/sources/broken/">broken</a>' in html


def test_a_source_paused_now_is_listed_last_with_how_long_and_why_and_is_no_problem(fleet, smtp_sink):
    # A pause nobody lifted silences a source for good: it read "no judged run this week" at the top,
    # as the worst source, with nothing to say it was paused, since when, or why.
    now = timezone.now()
    Source.objects.create(
        slug="resting", paused=True, paused_since=now - timedelta(days=64, hours=3), paused_reason="site redesign"
    )
    # Paused yesterday after a failing week: its week still counts, and says it is paused now.
    runs("flaky", ["incomplete"] * 2, collected=500, days_ago=3)
    episode("flaky", 72, 47)
    until = now + timedelta(days=2)
    Source.objects.filter(slug="flaky").update(
        paused=True, paused_since=now - timedelta(days=1), paused_until=until, paused_reason="proxy migration"
    )
    channels.create_channel(kind="email", target="ops@example.com", weekly_digest=True)
    assert digests.send_digests(now=now) != []
    deliver_all()
    [envelope] = [m for m in smtp_sink.messages if b"Weekly digest" in m.content]
    message = email.message_from_bytes(envelope.content, policy=policy.default)
    # resting is no problem; flaky, paused now after two failing runs this week, is.
    assert message["Subject"].endswith(": 6 sources, 4 with problems")
    text = message.get_body(("plain",)).get_content()
    lines = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    assert [line.split(" — ")[0] for line in lines] == ["old", "broken", "leaky", "steady", "resting", "flaky"]
    since = (now - timedelta(days=64, hours=3)).strftime("%Y-%m-%d %H:%M UTC")
    assert lines[4] == f"resting — paused for 64 days 3 h, since {since}, until resumed: site redesign"
    assert lines[5].startswith(
        f"flaky — paused for 1 day, since {(now - timedelta(days=1)):%Y-%m-%d %H:%M UTC}, "
        f"until {until:%Y-%m-%d %H:%M UTC}: proxy migration, 2 runs, 0% complete, 1,000 records short, 1 episode"
    )


def test_slack_gets_it_once_a_week_and_only_for_the_sources_it_covers(fleet, http_sink):
    channels.create_channel(kind="slack", target=http_sink.url("/slack"), weekly_digest=True, source_slugs=["leaky"])
    now = timezone.now()
    assert digests.send_digests(now=now) != []
    assert digests.send_digests(now=now + timedelta(days=6, hours=23)) == []  # not before a week
    deliver_all()
    [posted] = http_sink.received("/slack")
    payload = posted.json()
    assert payload["blocks"][0]["text"]["text"].endswith(": 1 source, 1 with problems")
    assert "<http://127.0.0.1:8000/sources/leaky/|leaky> — 7 runs, 71% complete" in payload["blocks"][1]["text"]["text"]
    assert "broken" not in payload["text"]
    assert digests.send_digests(now=now + timedelta(days=7)) != []  # the next week


def test_a_digest_is_only_for_email_and_slack_and_is_set_by_command_form_and_admin(db, admin_client):
    with pytest.raises(ValidationError, match="only email and Slack"):
        channels.create_channel(kind="webhook", target="https://hooks.example/a", weekly_digest=True)
    call_command("add_channel", "email", "ops@example.com", "--weekly-digest", stdout=StringIO())
    assert Channel.objects.get(kind="email").weekly_digest
    form = {"kind": "slack", "target": "https://hooks.example/s", "method": "GET", "weekly_digest": "on"}
    assert admin_client.post("/alerts/channels/", form).status_code == 302
    assert Channel.objects.get(kind="slack").weekly_digest
    assert "weekly digest" in admin_client.get("/alerts/channels/").content.decode()
    admin = {"name": "", "kind": "webhook", "target": "https://hooks.example/w", "method": "GET", "weekly_digest": "on"}
    refused = admin_client.post("/admin/sources/channel/add/", admin)
    assert refused.status_code == 200 and b"only email and Slack channels get the weekly digest" in refused.content
    assert not Notification.objects.exists()


def test_worst_first_is_least_complete_then_most_short_then_longest():
    rows = [
        {"slug": "a", "runs": 10, "complete": 9, "records_short": 10, "longest_seconds": 60, "episodes": 1},
        {"slug": "b", "runs": 10, "complete": 9, "records_short": 500, "longest_seconds": 60, "episodes": 1},
        {"slug": "c", "runs": 10, "complete": 5, "records_short": 0, "longest_seconds": 0, "episodes": 1},
        {"slug": "d", "runs": 10, "complete": 10, "records_short": 0, "longest_seconds": 0, "episodes": 0},
    ]
    assert [r["slug"] for r in digest.worst_first(rows)] == ["c", "b", "a", "d"]
    now = timezone.now()
    assert digests.episodes_of([], True, now - timedelta(days=7), now) == (1, 7 * 86400)


def test_the_digest_job_is_scheduled_on_both_engines(settings):
    from completeness.celery import app
    from sources.alerts.schedules import ensure_schedules

    assert settings.PERIODIC_JOBS["send_digests"] == "ALERTS_DIGEST_CHECK_SECONDS"
    settings.TASK_ENGINE = "django_q"
    assert "send_digests" in ensure_schedules()
    from django_q.models import Schedule

    assert Schedule.objects.get(name="completeness.send_digests").minutes == 60
    beat = app.conf.beat_schedule
    assert any("send_digests" in str(entry) for entry in beat.values())


def test_a_channel_that_covers_no_source_yet_gets_no_empty_digest_and_gets_one_once_it_does(db, http_sink):
    # Added before any source existed, it sent "0 sources, 0 with problems" at once, and nothing worth
    # reading until a week later.
    channel = channels.create_channel(kind="slack", target=http_sink.url("/slack"), weekly_digest=True)
    now = timezone.now()
    assert digests.send_digests(now=now) == []
    assert Channel.objects.get(pk=channel.pk).digest_sent_at is None
    Source.objects.create(slug="shop")
    assert digests.send_digests(now=now + timedelta(hours=1)) == [channel.pk]


def test_a_backfill_posted_this_week_is_not_this_weeks_trouble_and_a_failure_counts_from_its_run(db):
    # History posted this week flipped the source when each report arrived: two incidents of last
    # month read as this week's two episodes of a few seconds. Dated by their runs, they are not in it.
    runs("backfilled", ["complete"] * 3, days_ago=40)
    source = Source.objects.get(slug="backfilled")
    old_runs = list(Run.objects.filter(source=source).order_by("started_at"))
    now = timezone.now()
    for n, (old, new) in enumerate((("ok", "failing"), ("failing", "ok"))):
        Flip.objects.create(
            source=source, old_health=old, new_health=new, at=now - timedelta(hours=1, seconds=-n), run=old_runs[n]
        )
    # This week's failure: its run started five hours before its report arrived, and it lasted until
    # a run that started three hours later.
    runs("live", ["incomplete", "complete"], days_ago=2)
    live = Source.objects.get(slug="live")
    bad, good = Run.objects.filter(source=live).order_by("started_at")
    Run.objects.filter(pk=good.pk).update(started_at=bad.started_at + timedelta(hours=3))
    Flip.objects.create(
        source=live, old_health="ok", new_health="failing", at=bad.started_at + timedelta(hours=5), run=bad
    )
    Flip.objects.create(
        source=live, old_health="failing", new_health="ok", at=bad.started_at + timedelta(hours=8), run=good
    )
    rows = {row["slug"]: row for row in digests.week_rows(Source.objects.all(), now - timedelta(days=7), now)}
    assert rows["backfilled"]["episodes"] == 0 and rows["backfilled"]["longest_seconds"] == 0
    assert rows["live"]["episodes"] == 1 and rows["live"]["longest_seconds"] == 3 * 3600


def test_an_overdue_ended_by_a_run_that_started_before_it_is_a_short_episode_not_the_whole_week(db):
    runs("slow", ["complete"], days_ago=1)
    source = Source.objects.get(slug="slow")
    run = Run.objects.get(source=source)
    # The crawl ran long: its source went overdue half an hour into it, and its report ended that.
    overdue_at = run.started_at + timedelta(minutes=30)
    Flip.objects.create(source=source, old_health="ok", new_health="overdue", at=overdue_at, cause="clock")
    Flip.objects.create(
        source=source, old_health="overdue", new_health="ok", at=overdue_at + timedelta(minutes=10), run=run
    )
    now = timezone.now()
    [row] = digests.week_rows(Source.objects.filter(slug="slow"), now - timedelta(days=7), now)
    assert row["episodes"] == 1 and row["longest_seconds"] == 10 * 60, row  # read "longest 6 days 23 h"

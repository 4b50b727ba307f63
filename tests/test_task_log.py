"""The task cluster's log keeps what an operator reads it for: a job that failed, and the jobs a report
queued (an alert's delivery), not three lines a minute for each periodic job that ran as it should.

Each job runs through django-q2 itself (sync: its worker and monitor in this process), so the lines
are the ones it writes, through the logging the settings configure."""

from __future__ import annotations

import logging

import pytest
from django.utils import timezone

from sources import queue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def inline_cluster(settings):
    settings.TASK_ENGINE = "django_q"
    settings.TASKS_SYNC = True


def lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "django-q"]


def test_a_periodic_job_that_ran_as_it_should_leaves_no_line_at_the_default_level(inline_cluster, caplog):
    caplog.set_level(logging.INFO)
    queue.enqueue("sweep_outbox")
    queue.enqueue("check_overdue")
    assert [line for line in lines(caplog) if "sources.jobs" in line] == []


def test_the_schedules_handing_out_their_jobs_leave_no_line_at_the_default_level(inline_cluster, caplog):
    from django_q.brokers import get_broker
    from django_q.models import Schedule
    from django_q.scheduler import scheduler

    assert Schedule.objects.filter(name="completeness.sweep_outbox").exists()
    caplog.set_level(logging.DEBUG)
    scheduler(broker=get_broker())
    handed_out = [line for line in lines(caplog) if "from schedule [completeness.sweep_outbox]" in line]
    assert handed_out, lines(caplog)  # django-q2 did write it, at DEBUG only
    caplog.clear()
    caplog.set_level(logging.INFO)
    Schedule.objects.update(next_run=timezone.now())
    scheduler(broker=get_broker())
    assert [line for line in lines(caplog) if "from schedule" in line] == []


def test_a_delivery_a_report_queued_is_logged_as_it_was(inline_cluster, caplog):
    caplog.set_level(logging.INFO)
    queue.enqueue("deliver_notification", 0)  # no such notification: the job has nothing to do
    said = lines(caplog)
    assert any("processing" in line and "'sources.jobs.deliver_notification'" in line for line in said), said
    assert any(line.startswith("Processed 'sources.jobs.deliver_notification'") for line in said), said


def test_a_periodic_job_that_failed_is_logged_at_error(caplog):
    # In sync mode django-q2 raises a failure before its monitor logs it, so the monitor's line is
    # written here as it writes it (django_q/monitor.py), through the logger the settings configure.
    caplog.set_level(logging.INFO)
    logging.getLogger("django-q").error(
        "Failed 'sources.jobs.sweep_outbox' (golf-nine-lima-echo) - RuntimeError: the sweep broke"
    )
    assert lines(caplog) == ["Failed 'sources.jobs.sweep_outbox' (golf-nine-lima-echo) - RuntimeError: the sweep broke"]


def test_log_level_debug_shows_the_routine_lines_again(inline_cluster, caplog):
    caplog.set_level(logging.DEBUG)
    queue.enqueue("sweep_outbox")
    said = lines(caplog)
    assert any(line.startswith("Processed 'sources.jobs.sweep_outbox'") for line in said), said

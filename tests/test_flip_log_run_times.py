"""The logs of health changes (the source page's, /alerts/'s) date a change when its report arrived, the
time alerts give. A backfill of past runs (docs/verdicts.md) makes every incident of the history a
change dated the minute of the backfill: the log then says when the run that caused it ran as well."""

import re

import pytest
from django.contrib.auth.models import User

from sources.models import Flip, Run
from tests.conftest import day, run_report

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(client):
    client.force_login(User.objects.create_user("member", password="x"))
    return client


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace(" ,", ",")


def _backfilled_incident_then_a_live_one(api):
    for n in (20, 19, 18):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    api.post_run(run_report("shop", 12, collected=3600, declared_total=9000))
    for n in (11, 10, 1):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    live = run_report("shop", 0, collected=5400, declared_total=9000)
    api.post_run(live)
    return day(12).replace("T", " ")[:16] + " UTC", day(11).replace("T", " ")[:16] + " UTC"


def test_the_source_pages_log_says_when_a_backfilled_run_ran(member, api):
    failed, recovered = _backfilled_incident_then_a_live_one(api)
    page = member.get("/sources/shop/").content.decode()
    log = _text(page[page.index("Health changes and baseline acceptances") :])
    assert f"the run, which ran {failed}" in log and f"the run, which ran {recovered}" in log, log
    # A run reported as it ended needs no second time: the change's own is the run's.
    assert log.count("which ran") == 2, log


def test_the_alerts_pages_log_says_when_a_backfilled_run_ran(member, api):
    failed, recovered = _backfilled_incident_then_a_live_one(api)
    page = member.get("/alerts/").content.decode()
    log = _text(page[page.index("Recent changes of health") : page.index('id="notifications"')])
    assert f"ran {failed}" in log and f"ran {recovered}" in log, log
    assert log.count(" ran ") == 2, log


def test_the_source_page_reads_the_runs_of_its_log_in_its_own_query(member, api, django_assert_max_num_queries):
    _backfilled_incident_then_a_live_one(api)
    assert Flip.objects.count() == 3 and Run.objects.count() == 8
    with django_assert_max_num_queries(40) as counted:
        member.get("/sources/shop/")
    before = len(counted)
    api.post_run(run_report("shop", -1, collected=9000, declared_total=9000, suffix="again"))
    api.post_run(run_report("shop", -1, collected=900, declared_total=9000, suffix="again2"))
    with django_assert_max_num_queries(before):
        member.get("/sources/shop/")


def test_a_crawlers_pause_in_a_backfill_says_when_its_run_ran(member, api):
    for n in (20, 19):
        api.post_run(run_report("shop", n, collected=9000))
    api.post_run(run_report("shop", 18, collected=9000, paused=True, pause_reason="proxy migration"))
    api.post_run(run_report("shop", 17, collected=9000))
    page = member.get("/sources/shop/").content.decode()
    pauses = _text(page[page.index("<h2>Pauses") : page.index('id="channels"')])
    paused, resumed = (day(n).replace("T", " ")[:16] + " UTC" for n in (18, 17))
    assert f"(crawler report, its run ran {paused})" in pauses and f"its run ran {resumed}" in pauses, pauses

"""/alerts/' open problems say why each source is failing, as the overview row does: the on-call who
opens the page from an alert sees what is wrong beside when it began, without a click per source."""

from datetime import timedelta

import pytest
from django.utils import timezone

from completeness.alerts.why import why_of
from sources.models import Health, Run, Source
from sources.services import overdue
from tests.alerts.test_pages import _problem_row as problem_row
from tests.conftest import run_report, unwrapped

pytestmark = pytest.mark.django_db


def _problem_row(member, slug: str) -> str:
    return problem_row(unwrapped(member.get("/alerts/").content.decode()), slug)


def _overwritten(api, slug: str = "shop") -> Run:
    for n in (9, 8, 7):
        api.post_run(run_report(slug, n, collected=9000, snapshot={"action": "replaced", "rows": 9000}))
    api.post_run(run_report(slug, 2, collected=1200, snapshot={"action": "replaced", "rows": 1200}))
    return Run.objects.get(source__slug=slug, verdict="incomplete")


def test_a_failing_source_says_why_with_its_rules(api, member):
    failed = _overwritten(api)
    row = _problem_row(member, "shop")
    why = why_of(failed.findings)
    assert "1,200 rows" in why["why"] and why["why"] in row, row
    for rule in why["why_rules"]:
        assert f'<span class="tag">{rule}</span>' in row
    assert "snapshot_overwritten" in why["why_rules"]
    assert "no report" not in row


def test_a_source_resumed_into_failing_says_why_from_the_run_it_fails_for(api, member):
    # The paused run after the failure carries no findings: the why comes from the run that failed.
    failed = _overwritten(api)
    assert api.post("/sources/shop/pause", {"reason": "fix deployed", "until": None}).status_code == 200
    api.post_run(run_report("shop", 1, collected=9000))
    assert api.post("/sources/shop/resume").json()["health"] == "failing"
    assert why_of(failed.findings)["why"] in _problem_row(member, "shop")


def test_an_overdue_source_says_how_long_it_has_been_silent_not_its_old_findings(api, member):
    failed = _overwritten(api)
    # Its crawler stops: reported four hours ago, expected hourly.
    Source.objects.filter(slug="shop").update(
        expected_interval=timedelta(hours=1),
        grace=timedelta(hours=1),
        last_report_at=timezone.now() - timedelta(hours=4, minutes=5),
        health_since=timezone.now() - timedelta(hours=4, minutes=5),
    )
    assert overdue.mark_overdue() == ["shop"]
    assert Source.objects.get(slug="shop").health == Health.OVERDUE
    row = _problem_row(member, "shop")
    assert "no report for 4 h" in row, row
    assert why_of(failed.findings)["why"] not in row and 'class="tag"' not in row

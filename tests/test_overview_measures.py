"""One meaning per number: a row failing on a field shows that field's coverage, not the
run's 100.0% completeness; a count finding's change is against its own reference; /alerts/ writes every
duration as the pages do."""

from __future__ import annotations

import json
import re
from datetime import timedelta

from django.utils import timezone

from completeness.report import RunReport
from completeness.verdicts import Baseline, History, RuleSettings, rules
from completeness.verdicts.expectation import Expectation
from sources.models import Run
from sources.pages.selectors.overview import failed_measure
from sources.templatetags.dashboard import signed_percent
from tests.conftest import report as conftest_report
from tests.conftest import run_report


def row_of(page: str, slug: str) -> str:
    start = page.index(f'data-slug="{slug}"')
    return " ".join(re.sub(r"<[^>]+>", " ", page[start : page.index("</tr>", start)]).split())


def test_a_field_failure_shows_the_field_coverage_not_a_full_completeness(api, staff_client):
    for n in (6, 5, 4, 3):
        api.post_run(run_report("flats", n, declared_total=1000, fields={"price": 990, "rooms": 900}))
    api.post_run(run_report("flats", 1, declared_total=1000, fields={"price": 474, "rooms": 900}))
    page = staff_client.get("/").content.decode()
    row = row_of(page, "flats")
    assert "47.4% coverage of price" in row
    assert "100.0%" not in row
    # A phone's card labels each cell with its column (data-label); the measure is named once, below.
    cells = page[page.index('data-slug="flats"') : page.index("</tr>", page.index('data-slug="flats"'))]
    assert cells.count("coverage of price") == 1 and 'data-label="completeness"' in cells


def test_a_count_finding_shows_its_change_against_its_own_reference():
    findings = [
        {"rule": "snapshot_overwritten", "mode": "enforce", "expected": 9017, "actual": 1200},
        {"rule": "trend", "mode": "enforce", "message": "level 1,733 ...", "expected": 2338, "actual": 1733},
        {"rule": "drop", "mode": "enforce", "message": "...", "expected": 1900, "actual": 1733},
    ]
    measure = failed_measure(findings)
    assert measure["reference"] == "vs best of window"
    assert round(measure["reference_change"], 3) == round((1733 - 2338) / 2338, 3)
    assert failed_measure([{**findings[1], "mode": "observe"}]) == {}
    assert failed_measure([{"rule": "lost_pages", "mode": "enforce", "expected": 0, "actual": 3}]) == {}
    field = {"rule": "field_coverage", "mode": "enforce", "message": "unit price missing from the report (...)"}
    assert failed_measure([{**field, "expected": 0.89, "actual": 0.0}]) == {
        "coverage_field": "unit price",
        "coverage": 0.0,
    }


def test_a_drop_row_says_what_its_change_is_against(api, staff_client):
    for n in (6, 5, 4, 3):
        api.post_run(run_report("shop", n, collected=9000))
    api.post_run(run_report("shop", 1, collected=1200))
    row = row_of(staff_client.get("/").content.decode(), "shop")
    assert "-86.7% vs baseline" in row


def test_a_mass_removal_reads_against_the_whole_declared_total(staff_client, api):
    for n in (6, 5, 4, 3):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    api.post_run(run_report("shop", 1, collected=1200, declared_total=9000, removed=7800))
    row = row_of(staff_client.get("/").content.decode(), "shop")
    assert "-86.7% vs declared" in row


def test_a_drop_from_the_sources_normal_says_vs_expected():
    report = RunReport.model_validate_json(json.dumps(conftest_report(collected=1657)))
    normal = Expectation(expected=2368, low=2203, basis="56 runs since 2026-08-13: 2,203-2,540", runs=56)
    snapshot = Baseline(2368, None)
    for history, reference in (
        (History(baseline=snapshot, expectation=normal), "vs expected"),
        (History(baseline=snapshot), "vs baseline"),
    ):
        draft = rules.drop(report, RuleSettings(), history)
        assert draft is not None
        finding = {"rule": "drop", "mode": "enforce", "message": draft.message, "expected": 2368, "actual": 1657}
        assert failed_measure([finding])["reference"] == reference


def test_the_alerts_page_writes_job_intervals_as_durations(staff_client):
    page = staff_client.get("/alerts/").content.decode()
    jobs = page[page.index('class="grid jobs cards"') : page.index("</table>", page.index('class="grid jobs cards"'))]
    assert not re.search(r"\d s<", jobs), jobs
    assert "1 day" in jobs and "1 min" in jobs


def test_an_ordinary_saturday_reads_against_its_normal_not_fridays_snapshot(api, staff_client):
    # A weekday feed at 45% on weekends, learned: its Saturday is complete, and its change is the
    # Saturday's against what a Saturday collects, not -55% in red against Friday's snapshot.
    month_ago = (timezone.now() - timedelta(days=35)).replace(hour=3, minute=0, second=0, microsecond=0)
    start = month_ago - timedelta(days=month_ago.weekday())  # a Monday
    for day in range(34):  # the last one a Saturday
        started = start + timedelta(days=day)
        saturday_or_sunday = started.weekday() >= 5
        body = run_report("weekday-feed", 0, collected=450 if saturday_or_sunday else 1000)
        body.update(
            run_id=f"d{day}",
            started_at=started.isoformat(),
            finished_at=(started + timedelta(hours=1)).isoformat(),
        )
        assert api.post_run(body).status_code == 201
    saturday = Run.objects.get(run_id="d33")
    assert saturday.started_at.weekday() == 5 and saturday.verdict == "complete" and saturday.expected
    row = row_of(staff_client.get("/").content.decode(), "weekday-feed")
    change = (450 - saturday.expected) / saturday.expected
    assert f"{signed_percent(change)} vs expected" in row
    assert "-55.0%" not in row
    page = staff_client.get("/sources/weekday-feed/").content.decode()
    first_run = page[page.index('id="history"') :]
    first_run = first_run[first_run.index("<tbody>") : first_run.index("</tr>", first_run.index("<tbody>"))]
    assert 'data-label="vs expected" title="against expected ' in first_run and "-55.0%" not in first_run


def test_a_learned_source_failing_on_a_field_shows_the_field_and_its_change_against_expected(api, staff_client):
    for n in range(20, 1, -1):
        api.post_run(run_report("flats-learned", n, collected=4800, fields={"price": 4790}))
    failed = api.post_run(run_report("flats-learned", 1, collected=4800, fields={"price": 2300})).json()
    assert failed["expectation"] is not None
    assert [f["rule"] for f in failed["findings"] if f["mode"] == "enforce"] == ["field_coverage"]
    row = row_of(staff_client.get("/").content.decode(), "flats-learned")
    assert "47.9% coverage of price" in row and "vs expected" in row and "vs baseline" not in row


def test_a_learned_source_failing_on_a_count_shows_its_change_against_that_rules_reference(api, staff_client):
    # Both measures named a change (the normal's and the failed rule's): the overview answered 500 for
    # the whole fleet as soon as one learned source failed a count rule (as in the demo data).
    for n in range(20, 1, -1):
        api.post_run(run_report("shop-learned", n, collected=4800))
    failed = api.post_run(run_report("shop-learned", 1, collected=1200)).json()
    assert failed["expectation"] is not None
    reference = next(f for f in failed["findings"] if f["mode"] == "enforce" and f["rule"] != "snapshot_overwritten")
    response = staff_client.get("/")
    assert response.status_code == 200
    row = row_of(response.content.decode(), "shop-learned")
    change = (reference["actual"] - reference["expected"]) / reference["expected"]
    assert f"{signed_percent(change)} vs " in row, (reference, row)


def test_a_declared_run_is_measured_against_its_total_less_removed_on_every_page(api, staff_client):
    # The finding says "collected 2,480 of 7,358 (7,368 declared, 10 removed)". The headline counted
    # the loss against the learned normal first (or the total with the removed records in it), and the
    # runs table its change against the normal: three numbers for one run.
    for n in range(20, 1, -1):
        api.post_run(run_report("parts", n, collected=7300, declared_total=7350, removed=20))
    failed = api.post_run(run_report("parts", 1, collected=2480, declared_total=7368, removed=10)).json()
    assert failed["expectation"] is not None and failed["expectation"]["expected"] == 7300
    assert "collected 2,480 of 7,358 (7,368 declared, 10 removed)" in failed["findings"][0]["message"]
    row = row_of(staff_client.get("/").content.decode(), "parts")
    assert f"{signed_percent((2480 - 7358) / 7358)} vs declared" in row
    page = staff_client.get("/sources/parts/").content.decode()
    headline = " ".join(re.sub(r"<[^>]+>", " ", page[page.index('data-part="cost"') :].split("</span>")[0]).split())
    assert "4,878 of 7,358 expected records missing" in headline
    history = page[page.index('id="history"') :]
    latest, before = history.split("<tbody>")[1].split("</tr>")[:2]
    assert 'data-label="vs declared" title="against 7,358 declared (7,368 less 10 removed)"' in latest
    assert signed_percent((2480 - 7358) / 7358) in latest
    # A complete declared run beside it: against its own 7,330, not the normal's 7,300.
    assert 'title="against 7,330 declared (7,350 less 20 removed)"' in before
    assert signed_percent((7300 - 7330) / 7330) in before

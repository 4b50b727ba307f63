"""The source page's headline: what is wrong, since when, how many records, who owns
it, the overwrite in plain words, and what to do next; owner, team and runbook on every surface."""

import re
from datetime import datetime, timedelta

from django.utils import timezone

from sources.alerts import channels
from sources.models import Flip, Health, Notification, Run, Source
from sources.pages.selectors.fleet import fleet
from sources.pages.selectors.overview import OverviewFilters
from sources.services import overdue
from tests.conftest import day, run_report, unwrapped


def _headline(page: str) -> str:
    start = page.index('id="headline"')
    return page[start : page.index("</section>", start)]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _three_good_then_two_partial(api, **partial):
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    api.post_run(run_report("shop", 2, collected=1200, declared_total=9000, **partial))
    api.post_run(run_report("shop", 1, collected=3000, declared_total=9000, **partial))


def test_a_failing_source_says_what_since_when_and_how_many_records(staff_client, api):
    _three_good_then_two_partial(api)
    Source.objects.filter(slug="shop").update(
        owner="amira", team="gulf", runbook_url="https://runbooks.example.com/shop"
    )
    page = staff_client.get("/sources/shop/").content.decode()
    text = _text(_headline(page))
    # The worst enforced finding's sentence, with its numbers.
    assert "3,000" in text and "9,000" in text
    # Since the first run of the episode (two days ago), not since the latest one.
    first = day(2).replace("T", " ")[:16] + " UTC"
    assert re.search(rf"Failing for 2 days 3 h, since {first}", text), text
    # The alerts and the health log give the time the source's health changed: when that run was reported.
    reported = Source.objects.get(slug="shop").health_since.strftime("%Y-%m-%d %H:%M UTC")
    assert f"when its first bad run started (reported {reported}, the time alerts give)" in text, text
    # Both partial runs of the episode: 7,800 + 6,000 short of their declared total.
    assert "13,800 of 18,000 expected records missing over 2 incomplete runs" in text
    assert "Owner: amira , team gulf" in text.replace("amira,", "amira ,")
    assert 'href="https://runbooks.example.com/shop"' in _headline(page)
    assert "Open the run" in text and "Accept this run as the new baseline" in text and 'href="#pause"' in page


def test_the_overwrite_is_said_in_plain_words(staff_client, api):
    _three_good_then_two_partial(api, snapshot={"action": "replaced", "rows": 3000})
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert (
        "Snapshot overwritten: the partial run replaced the published snapshot with 3,000 rows where 9,000 stood"
        in text
    )
    # The problem sentence is the loss itself, not the overwrite said twice.
    assert not text.split("Snapshot overwritten")[0].strip().lower().startswith("a partial run replaced")


def test_a_declared_total_is_the_measure_where_the_run_had_one_else_its_expectation(staff_client, api):
    _three_good_then_two_partial(api)
    runs = Source.objects.get(slug="shop").runs
    # A run that declared its total is short of that total (less removed), as its finding says, even
    # where it had an expectation too.
    runs.filter(collected=3000).update(expected=5000)
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "13,800 of 18,000 expected records missing" in text  # 7,800 + 6,000 of 9,000 declared each
    runs.filter(collected=3000).update(declared_total=None)
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "9,800 of 14,000 expected records missing" in text  # 7,800 of 9,000 declared + 2,000 of 5,000 expected


def test_a_healthy_source_says_so_and_names_nobody_when_no_owner_is_set(staff_client, api):
    api.post_run(run_report("shop", 1, collected=9000, declared_total=9000))
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "Nothing wrong" in text and "9,000 records" in text
    assert "No owner or team set" in text and "set them" in text


def test_a_healthy_source_whose_latest_run_came_while_paused_says_it_was_not_judged(staff_client, api):
    # "the latest run is paused with 3,000 records" read as a verdict on a count a quarter of the normal.
    api.post_run(run_report("shop", 2, collected=9000, declared_total=9000))
    assert api.post("/sources/shop/pause", {"reason": "site maintenance"}).status_code == 200
    api.post_run(run_report("shop", 1, collected=3000, declared_total=9000))
    assert api.post("/sources/shop/resume").json()["health"] == "ok"
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert (
        "Nothing wrong: the latest run (3,000 records) arrived while the source was paused, so no rule judged it."
        in text
    )
    assert "is paused with" not in text
    # Its healthy neighbour keeps the verdict it was given.
    api.post_run(run_report("shop", 0, collected=9000, declared_total=9000))
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "Nothing wrong: the latest run is complete with 9,000 records." in text


def test_owner_team_and_runbook_are_set_on_the_page_and_filter_the_overview(staff_client, api):
    api.post_run(run_report("shop", 1))
    api.post_run(run_report("other", 1))
    source = Source.objects.get(slug="shop")
    form = {name: "" for name in ("expected_interval",)}
    form.update(
        min_completeness="99%",
        drop_threshold="25%",
        field_drop="10%",
        field_minimums="",
        trend_days=30,
        trend_min_runs=3,
        learn_days=56,
        learn_min_runs=10,
        min_margin="5%",
        grace="1h",
        owner="amira",
        team="gulf",
        runbook_url="https://runbooks.example.com/shop",
    )
    response = staff_client.post("/sources/shop/settings", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    source.refresh_from_db()
    assert (source.owner, source.team, source.runbook_url) == ("amira", "gulf", "https://runbooks.example.com/shop")
    page = staff_client.get("/sources/shop/").content.decode()
    assert "team gulf · owner amira" in page
    overview = staff_client.get("/?team=gulf").content.decode()
    assert 'data-slug="shop"' in overview and 'data-slug="other"' not in overview
    assert "<option selected>gulf</option>" in overview
    assert 'data-slug="shop"' not in staff_client.get("/?owner=nobody").content.decode()


def test_the_api_reads_and_changes_owner_team_and_runbook(client, api):
    api.post_run(run_report("shop", 1))

    def patch(payload):
        return client.patch(
            "/api/v1/sources/shop/settings",
            data=payload,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {api.token}",
        )

    body = patch({"owner": "amira", "team": "gulf", "runbook_url": "https://runbooks.example.com/shop"})
    assert body.status_code == 200, body.content
    assert (body.json()["owner"], body.json()["team"], body.json()["runbook_url"]) == (
        "amira",
        "gulf",
        "https://runbooks.example.com/shop",
    )
    assert api.get("/sources/shop").json()["team"] == "gulf"
    # Only a web link: a javascript: URL in the header would run on a click.
    bad = patch({"runbook_url": "javascript:alert(1)", "owner": "x"})
    assert bad.status_code == 422 and "runbook_url" in [e["path"] for e in bad.json()["errors"]], bad.content
    assert Source.objects.get(slug="shop").owner == "amira"
    assert patch({"owner": ""}).json()["owner"] is None


def test_the_why_is_cut_at_a_semicolon_outside_parentheses():
    from completeness.alerts.why import first_clause

    assert first_clause("collected 1,657, 14.6% below expected (1,940; normal from 1,800); also x") == (
        "collected 1,657, 14.6% below expected (1,940; normal from 1,800)"
    )
    assert first_clause("a; b") == "a" and first_clause("no clause") == "no clause"


def test_a_field_loss_says_every_record_arrived(staff_client, api):
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=1000, declared_total=1000, fields={"price": 990}))
    api.post_run(run_report("shop", 1, collected=1000, declared_total=1000, fields={"price": 480}))
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "price filled in 48.0% of 1,000 records" in text.lower()
    assert "no records missing over 1 incomplete run (1,000 expected" in text
    assert "what fell short is in the findings" in text


def test_runs_within_their_normal_lost_no_records_and_one_below_it_counts_against_expected(staff_client, api):
    """A count inside the source's normal range is no loss of records, however close under `expected`;
    a run judged below it is counted against `expected`, as its finding says."""
    counts = [1000, 1010, 990, 1005, 995]
    for n in range(40, 2, -1):
        api.post_run(run_report("steady", n, collected=counts[n % 5], fields={"price": 990}))
    # Two runs: a field lost at 996 (expected about 1,000), and the crawler's own "incomplete" at 994.
    api.post_run(run_report("steady", 2, collected=996, fields={"price": 400}))
    answer = api.post_run(run_report("steady", 1, collected=994, fields={"price": 990}, exit_code=1)).json()
    assert answer["expectation"]["low"] < 994 < answer["expectation"]["expected"]
    text = _text(_headline(staff_client.get("/sources/steady/").content.decode()))
    assert "no records missing over 2 incomplete runs" in text, text
    week = fleet(OverviewFilters(), timezone.now())
    assert (week.short, [(loss.slug, loss.short, loss.runs) for loss in week.losses]) == (0, [("steady", 0, 2)])

    # Below its normal: counted against expected.
    answer = api.post_run(run_report("steady", 0, collected=900, fields={"price": 890})).json()
    assert [f["rule"] for f in answer["findings"]] == ["below_expected"]
    expected = answer["expectation"]["expected"]
    assert fleet(OverviewFilters(), timezone.now()).short == expected - 900
    text = _text(_headline(staff_client.get("/sources/steady/").content.decode()))
    assert f"{expected - 900:,} of" in text and "expected records missing over 3 incomplete runs" in text, text


def test_an_overdue_source_says_how_long_and_when_it_was_due(staff_client, api):
    from datetime import timedelta

    api.post_run(run_report("shop", 3))
    source = Source.objects.get(slug="shop")
    Source.objects.filter(slug="shop").update(
        expected_interval=timedelta(days=1),
        grace=timedelta(hours=3),
        last_report_at=source.last_report_at - timedelta(days=3),
        health_since=source.health_since - timedelta(days=3),
    )
    page = unwrapped(staff_client.get("/sources/shop/").content.decode())
    text = _text(_headline(page))
    assert re.search(r"No report for \d+ days( \d+ h)?: one is due every 1 day, 3 h grace", text), text
    source = Source.objects.get(slug="shop")
    due = (source.last_report_at + timedelta(days=1, hours=3)).strftime("%Y-%m-%d %H:%M UTC")
    assert f"the next was due {due}" in text and f"overdue since {due}" in page
    # No run is at fault: the button opens the one before the silence, and says so.
    assert "Open the last run" in text and "Open the run" not in text


def test_an_overdue_source_back_from_a_pause_says_the_deadline_its_alert_gave(staff_client, api):
    """A pause that ended after the last report gave a full interval from its end: the alert named that
    deadline, while the page counted from the last report, six hours earlier."""
    now = timezone.now().replace(microsecond=0)
    api.post_run(run_report("shop", 0))
    resumed = now - timedelta(hours=4)
    Source.objects.filter(slug="shop").update(
        expected_interval=timedelta(hours=1),
        grace=timedelta(hours=1),
        last_report_at=now - timedelta(hours=10),
        health_since=resumed,
    )
    source = Source.objects.get(slug="shop")
    Flip.objects.create(source=source, old_health=Health.PAUSED, new_health=Health.OK, at=resumed)
    channels.create_channel(kind="webhook", target="http://127.0.0.1:9/hook")
    assert overdue.mark_overdue(now) == ["shop"]
    told = datetime.fromisoformat(Notification.objects.get().event["overdue"]["due_at"].replace("Z", "+00:00"))
    assert told == resumed + timedelta(hours=2)
    text = _text(_headline(unwrapped(staff_client.get("/sources/shop/").content.decode())))
    assert f"the next was due {told:%Y-%m-%d %H:%M} UTC" in text, text


def test_an_overdue_source_whose_interval_was_lengthened_since_was_not_due_in_the_future(staff_client, api):
    now = timezone.now().replace(microsecond=0)
    api.post_run(run_report("shop", 0))
    Source.objects.filter(slug="shop").update(
        expected_interval=timedelta(minutes=1),
        grace=timedelta(0),
        last_report_at=now - timedelta(hours=3),
        health_since=now - timedelta(hours=3),
    )
    assert overdue.mark_overdue(now) == ["shop"]
    flipped = Source.objects.get(slug="shop").health_since
    # The operator's remedy for an interval set too short; the source stays overdue until its next report.
    Source.objects.filter(slug="shop").update(expected_interval=timedelta(days=1), grace=timedelta(hours=3))
    page = unwrapped(staff_client.get("/sources/shop/").content.decode())
    text = _text(_headline(page))
    tomorrow = (now - timedelta(hours=3) + timedelta(days=1, hours=3)).strftime("%Y-%m-%d %H:%M")
    assert tomorrow not in page, text
    assert f"the next was due {flipped:%Y-%m-%d %H:%M} UTC" in text, text


def test_a_cut_headline_ends_with_its_ellipsis_and_no_full_stop_after_it(staff_client, api):
    urls = [f"https://shop.example.com/category/{'x' * 60}/page-{n}" for n in range(3)]
    api.post_run(run_report("shop", 2, collected=9000))
    api.post_run(
        run_report("shop", 1, collected=9000, pages={"expected": 10, "fetched": 7, "lost": 3, "lost_urls": urls})
    )
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "…" in text and "…." not in text, text


def test_a_run_expects_its_declared_total_less_attrition_and_one_without_a_total_its_normal(staff_client, api):
    from sources.models import Run
    from sources.queries import expected_records

    _three_good_then_two_partial(api)
    runs = Source.objects.get(slug="shop").runs
    runs.filter(collected=1200).update(removed=35)
    runs.filter(collected=3000).update(declared_total=None, expected=5000)
    runs.filter(collected=9000).update(removed=9500)
    expected = dict(Run.objects.annotate(e=expected_records()).values_list("collected", "e"))
    # More than a quarter of its total "removed" in one run is measured against the whole total, as its
    # mass_removal finding is (more removed than declared read 0 records expected, and nothing missing).
    assert expected[1200] == 8965 and expected[3000] == 5000 and expected[9000] == 9000
    runs.filter(collected=1200).update(removed=2250)
    runs.filter(collected=3000).update(declared_total=9000, removed=2251, expected=None)
    expected = dict(Run.objects.annotate(e=expected_records()).values_list("collected", "e"))
    assert expected[1200] == 6750 and expected[3000] == 9000


def test_a_mass_removal_is_counted_as_missing_records_in_the_headline(staff_client, api):
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    answer = api.post_run(run_report("shop", 2, collected=1200, declared_total=9000, removed=7800)).json()
    assert answer["verdict"] == "incomplete" and [f["rule"] for f in answer["findings"]] == ["mass_removal"]
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    # The headline's sentence is the finding's first clause, whole.
    assert "7,800 of 9,000 declared records reported removed during the run (86.7%), collected 1,200." in text
    assert "7,800 of 9,000 expected records missing over 1 incomplete run" in text


def test_a_silent_failure_says_in_the_headline_that_the_crawler_claimed_success(staff_client, api):
    # The alert's first line says it ("Silent: the crawler exited 0 and claimed success"); the page the
    # alert links to showed a bare "SILENT" badge, with no title, above the drop's sentence.
    _three_good_then_two_partial(api, crawler_verdict="complete")
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "Silent: the crawler claimed success (exit code 0, its verdict complete)" in text, text
    assert "the data says this run is incomplete" in text, text
    # A crawler that said it failed is loud: nothing of the kind is claimed for it.
    api.post_run(run_report("shop", 0, collected=2000, declared_total=9000, exit_code=1))
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "claimed success" not in text, text


def test_a_source_resumed_into_failing_counts_its_failure_from_the_run_not_from_the_resume(staff_client, api):
    # Paused and resumed while its latest judged run was incomplete, the source is failing again
    # (docs/alerts.md, "A resume leaves the source as its runs say"). Its headline said "Failing for 0 s,
    # since <the resume>" above "7,800 of 9,000 expected records missing" of a run a day old.
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    api.post_run(run_report("shop", 1, collected=1200, declared_total=9000))
    assert api.post("/sources/shop/pause", {"reason": "fix deployed", "until": None}).status_code == 200
    assert api.post("/sources/shop/resume").json()["health"] == "failing"
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    first = day(1).replace("T", " ")[:16] + " UTC"
    assert re.search(rf"Failing for 1 day \d+ h, since {first}", text), text
    resumed = Source.objects.get(slug="shop").health_since.strftime("%Y-%m-%d %H:%M UTC")
    assert f"when its first bad run started (resumed {resumed}, the time alerts give)" in text, text
    assert "7,800 of 9,000 expected records missing over 1 incomplete run" in text, text


def test_a_backfilled_source_is_ok_since_the_run_that_made_it_ok_not_since_the_backfill(staff_client, api):
    # docs/verdicts.md has a new source's past runs posted first. Every flip of that backfill is dated
    # when its report arrived, so a source whose last incident ended eleven days ago read "OK for 46 s,
    # since <the backfill>" beside a failing headline that dates its failure from its first bad run.
    for n in (20, 19, 18):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    api.post_run(run_report("shop", 12, collected=5400, declared_total=9000))
    for n in (11, 10, 2):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    page = staff_client.get("/sources/shop/").content.decode()
    text = _text(_headline(page))
    recovered = day(11).replace("T", " ")[:16] + " UTC"
    assert re.search(rf"OK for 11 days( \d+ h)?, since {recovered}", text), text
    reported = Source.objects.get(slug="shop").health_since.strftime("%Y-%m-%d %H:%M UTC")
    assert f"when its first good run started (reported {reported}, the time alerts give)" in text, text
    assert f"ok since {recovered}" in _text(page)


def test_a_backfilled_sources_good_spell_is_not_said_to_be_the_time_alerts_give(staff_client, api, settings):
    # With history on (the default), the backfill's flips reached no channel when they were recorded.
    settings.ALERTS_HISTORY_AFTER_SECONDS = 86400
    for n in (20, 19, 18):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    api.post_run(run_report("shop", 12, collected=5400, declared_total=9000))
    for n in (11, 10):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    recorded = Source.objects.get(slug="shop").health_since.strftime("%Y-%m-%d %H:%M UTC")
    assert f"(recorded {recorded} from history posted late, which alerts do not send as news)" in text, text
    assert "the time alerts give" not in text
    # A live report of today's run makes the next change of health news again.
    api.post_run(run_report("shop", 0, collected=5400, declared_total=9000, suffix="live"))
    api.post_run(run_report("shop", 0, collected=9000, declared_total=9000, suffix="again"))
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "the time alerts give" in text and "history posted late" not in text, text


def test_a_source_that_never_changed_health_is_ok_since_its_first_run(staff_client, api):
    for n in (30, 29, 1):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    first = day(30).replace("T", " ")[:16] + " UTC"
    assert re.search(rf"OK for 30 days( \d+ h)?, since {first}", text), text


def test_a_source_resumed_into_ok_is_ok_since_the_resume(staff_client, api):
    for n in (9, 8):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000))
    api.post("/sources/shop/pause", {"reason": "migration", "until": None})
    api.post("/sources/shop/resume")
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    resumed = Source.objects.get(slug="shop").health_since.strftime("%Y-%m-%d %H:%M UTC")
    assert re.search(rf"OK for \d+ s, since {resumed}", text) and "first good run" not in text, text


def test_a_source_resumed_into_failing_after_a_crawl_while_paused_says_what_its_judged_run_lost(staff_client, api):
    # The run made while paused has no findings: the headline read "The latest run is incomplete." (the
    # latest run was not), lost the overwrite's sentence, and opened the paused run.
    for n in (9, 8, 7):
        api.post_run(run_report("shop", n, collected=9000, snapshot={"action": "replaced", "rows": 9000}))
    api.post_run(run_report("shop", 2, collected=1200, snapshot={"action": "replaced", "rows": 1200}))
    assert api.post("/sources/shop/pause", {"reason": "fix deployed", "until": None}).status_code == 200
    api.post_run(run_report("shop", 1, collected=9000))
    assert api.post("/sources/shop/resume").json()["health"] == "failing"
    page = staff_client.get("/sources/shop/").content.decode()
    text = _text(_headline(page))
    assert "The latest run is incomplete" not in text, text
    assert "Snapshot overwritten: the partial run replaced the published snapshot with 1,200 rows" in text, text
    assert "Silent: the crawler claimed success (exit code 0" in text, text
    assert 'class="flag silent"' in page[: page.index('id="headline"')]
    judged = Run.objects.get(source__slug="shop", verdict="incomplete")
    assert f'href="/runs/{judged.pk}/"' in _headline(page)


def test_a_source_paused_while_failing_says_so_and_what_a_resume_brings_back(staff_client, api):
    api.post_run(run_report("shop", 3, collected=9000))
    api.post_run(run_report("shop", 2, collected=1200))
    assert api.post("/sources/shop/pause", {"reason": "fix deployed", "until": None}).status_code == 200
    api.post_run(run_report("shop", 1, collected=9000))
    page = staff_client.get("/sources/shop/").content.decode()
    text = _text(_headline(page))
    assert "Paused: fix deployed." in text
    assert "Failing when paused: its latest judged run, started" in text and "is incomplete: collected 1,200" in text
    assert "Resumed, it is failing again until a complete run." in text
    failed = Run.objects.get(source__slug="shop", verdict="incomplete")
    assert f'href="/runs/{failed.pk}/"' in _headline(page)


def test_a_source_paused_while_healthy_says_nothing_of_a_failure(staff_client, api):
    api.post_run(run_report("shop", 2, collected=9000))
    assert api.post("/sources/shop/pause", {"reason": "site migration", "until": None}).status_code == 200
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "Paused: site migration." in text and "Failing when paused" not in text


def _overwritten_then_recovered(api, overwrite_day: int, partial_snapshot: str = "replaced") -> Run:
    full = {"action": "replaced", "rows": 9000}
    for n in (overwrite_day + 3, overwrite_day + 2, overwrite_day + 1):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000, snapshot=full))
    partial = {"action": partial_snapshot, "rows": 1200 if partial_snapshot == "replaced" else 9000}
    api.post_run(run_report("shop", overwrite_day, collected=1200, declared_total=9000, snapshot=partial))
    api.post_run(run_report("shop", overwrite_day - 1, collected=9000, declared_total=9000, snapshot=full))
    assert Source.objects.get(slug="shop").health == Health.OK
    return Run.objects.get(source__slug="shop", verdict="incomplete")


def test_a_source_recovered_from_a_data_loss_says_what_consumers_may_have_read(staff_client, api):
    loss = _overwritten_then_recovered(api, overwrite_day=2)
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "Nothing wrong" in text
    assert f"Recovered from a data loss: run {loss.run_id} , started {day(2).replace('T', ' ')[:16]} UTC" in text, text
    assert (
        "with a partial one of 1,200 rows" in text and f"started {day(1).replace('T', ' ')[:16]} UTC replaced" in text
    )
    assert f'href="/runs/{loss.pk}/"' in _headline(staff_client.get("/sources/shop/").content.decode())


def test_a_recovery_from_a_loss_that_kept_the_snapshot_or_from_long_ago_says_nothing_of_it(staff_client, api):
    # The partial run kept the full snapshot: nobody downstream read a partial one.
    _overwritten_then_recovered(api, overwrite_day=2, partial_snapshot="kept_previous")
    assert "Recovered from a data loss" not in _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    Run.objects.all().delete()
    Source.objects.all().delete()
    # An overwrite eight days ago, recovered the next day: a week on, the page no longer carries it.
    _overwritten_then_recovered(api, overwrite_day=8)
    assert "Recovered from a data loss" not in _text(_headline(staff_client.get("/sources/shop/").content.decode()))


def test_a_loss_recovered_before_an_earlier_good_run_is_not_dated_by_this_spell(staff_client, api):
    # Lost on day 5, recovered on day 4, failing on day 3 with the snapshot kept, ok again on day 2: the
    # page said whatever read the snapshot before day 2's run read the partial one, since day 4 false.
    full = {"action": "replaced", "rows": 9000}
    for n in (8, 7, 6):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000, snapshot=full))
    api.post_run(
        run_report("shop", 5, collected=1200, declared_total=9000, snapshot={"action": "replaced", "rows": 1200})
    )
    api.post_run(run_report("shop", 4, collected=9000, declared_total=9000, snapshot=full))
    api.post_run(run_report("shop", 3, collected=1200, declared_total=9000, snapshot={"action": "kept_previous"}))
    api.post_run(run_report("shop", 2, collected=9000, declared_total=9000, snapshot=full))
    assert Source.objects.get(slug="shop").health == Health.OK
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "Nothing wrong" in text and "Recovered from a data loss" not in text, text


def test_a_partial_run_accepted_as_the_new_baseline_is_no_data_loss_to_recover_from(staff_client, api):
    # The site really shrank to 1,200: its operator accepted the run. The next run of 1,200 is complete,
    # and the page said consumers had read a partial snapshot, against the operator's word.
    full = {"action": "replaced", "rows": 9000}
    for n in (6, 5, 4):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000, snapshot=full))
    shrunk = {"action": "replaced", "rows": 1200}
    api.post_run(run_report("shop", 3, collected=1200, snapshot=shrunk))
    run = Run.objects.get(source__slug="shop", verdict="incomplete")
    assert staff_client.post(f"/runs/{run.pk}/accept-baseline", {"note": "site removed a category"}).status_code == 302
    api.post_run(run_report("shop", 2, collected=1200, snapshot=shrunk))
    assert Source.objects.get(slug="shop").health == Health.OK
    text = _text(_headline(staff_client.get("/sources/shop/").content.decode()))
    assert "Nothing wrong" in text and "Recovered from a data loss" not in text, text

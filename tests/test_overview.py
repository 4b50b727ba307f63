"""The overview: silently degraded sources first, healthy ones not flagged, counts, filters, fixed query count."""

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from sources.models import Source, Tag
from tests.conftest import run_report


def rows(response) -> list[str]:
    return re.findall(r'data-slug="([^"]+)"', response.content.decode())


def row_html(response, slug: str) -> str:
    page = response.content.decode()
    start = page.index(f'data-slug="{slug}"')
    return page[start : page.index("</tr>", start)]


def count(response, name: str) -> int:
    match = re.search(rf'data-count="{name}">\s*<span class="n">(\d+)', response.content.decode())
    return int(match.group(1))


def seed(api, slug: str, last: dict, region: str = "", tags: tuple[str, ...] = ()) -> None:
    """Two good runs, then `last` (a report's overrides) as the newest."""
    api.post_run(run_report(slug, 3, collected=1000, declared_total=1000, suffix="a"))
    api.post_run(run_report(slug, 2, collected=1000, declared_total=1000, suffix="b"))
    api.post_run(run_report(slug, 0, **{"collected": 1000, "declared_total": 1000, "suffix": "c", **last}))
    source = Source.objects.get(slug=slug)
    source.region = region
    source.save(update_fields=["region"])
    source.tags.set([Tag.objects.get_or_create(name=t)[0] for t in tags])


@pytest.fixture
def fleet(api, staff):
    from sources.services.pausing import pause_source

    seed(api, "aa-healthy", {}, region="uk", tags=("cars",))
    seed(api, "bb-loud", {"collected": 600, "exit_code": 1}, region="uk")
    seed(api, "cc-silent", {"collected": 940}, region="ae", tags=("feed",))
    seed(api, "dd-overwrite", {"collected": 120, "snapshot": {"action": "replaced", "rows": 120}}, region="ae")
    seed(api, "ee-paused", {}, region="de")
    pause_source(Source.objects.get(slug="ee-paused"), origin="ui", actor="user:ops", reason="migration")
    seed(api, "ff-overdue", {}, region="de")
    Source.objects.filter(slug="ff-overdue").update(
        expected_interval=timedelta(hours=6),
        grace=timedelta(hours=1),
    )
    # Its last report, and its last change of health, a day ago: the overdue clock started then.
    Source.objects.filter(slug="ff-overdue").update(
        last_report_at=F("last_report_at") - timedelta(days=1), health_since=F("health_since") - timedelta(days=1)
    )
    Source.objects.filter(slug="aa-healthy").update(expected_interval=timedelta(days=2))


def test_sorted_by_severity(fleet, staff_client):
    assert rows(staff_client.get("/")) == [
        "dd-overwrite",
        "cc-silent",
        "bb-loud",
        "ff-overdue",
        "ee-paused",
        "aa-healthy",
    ]


@pytest.mark.parametrize("page", [1, 2, 3])
def test_every_page_continues_the_order_where_the_one_before_stopped(fleet, staff_client, monkeypatch, page):
    # Two a page: the page's rows are chosen by a subquery with the source table under an alias of its
    # own, which the overdue test must follow (ff-overdue sits on page 2).
    monkeypatch.setattr("sources.pages.selectors.overview.OVERVIEW_PAGE_SIZE", 2)
    order = ["dd-overwrite", "cc-silent", "bb-loud", "ff-overdue", "ee-paused", "aa-healthy"]
    assert rows(staff_client.get(f"/?page={page}")) == order[2 * (page - 1) : 2 * page]


def test_silent_source_is_flagged_and_the_healthy_one_next_to_it_is_not(fleet, staff_client):
    response = staff_client.get("/")
    assert "SILENT" in row_html(response, "cc-silent")
    assert "SILENT" not in row_html(response, "aa-healthy")
    assert "SILENT" not in row_html(response, "bb-loud")  # the crawler knew: loud, not silent


def test_rows_show_health_verdict_completeness_and_change(fleet, staff_client):
    response = staff_client.get("/")
    silent = row_html(response, "cc-silent")
    assert "failing" in silent and "incomplete" in silent and "940 / 1,000" in silent and "94.0%" in silent
    assert "-6.0%" in silent
    healthy = row_html(response, "aa-healthy")
    assert ">ok<" in healthy and "complete" in healthy and ">0.0%<" in healthy
    assert "snapshot overwritten" in row_html(response, "dd-overwrite")
    assert "snapshot overwritten" not in silent
    assert ">paused<" in row_html(response, "ee-paused")
    assert ">overdue<" in row_html(response, "ff-overdue")


def test_a_paused_row_says_why_it_was_paused_and_the_others_do_not(fleet, staff_client):
    # The why column of a paused row was empty: a crawler's CRAWL_PAUSED reason was a click away.
    response = staff_client.get("/")
    assert '<span class="reason paused">paused: migration</span>' in row_html(response, "ee-paused")
    for slug in ("aa-healthy", "cc-silent", "ff-overdue"):
        assert "paused:" not in row_html(response, slug)


def test_headline_counts(fleet, staff_client):
    response = staff_client.get("/")
    assert count(response, "silent-24h") == 2  # cc-silent and dd-overwrite claimed success
    assert count(response, "silent-7d") == 2
    assert count(response, "failing") == 3
    assert count(response, "overdue") == 1
    assert count(response, "paused") == 1
    assert count(response, "ok") == 1


def test_a_filtered_overview_counts_its_own_sources_and_its_links_keep_the_filter(fleet, staff_client):
    ae = staff_client.get("/?region=ae")  # cc-silent and dd-overwrite: both failing and silent
    assert count(ae, "failing") == 2 and count(ae, "silent-24h") == 2 and count(ae, "ok") == 0
    assert "ok of 2<" in ae.content.decode()
    assert 'href="?region=ae&amp;health=failing"' in ae.content.decode()
    uk = staff_client.get("/?region=uk")  # aa-healthy and bb-loud, which knew it failed: not silent
    assert count(uk, "failing") == 1 and count(uk, "silent-24h") == 0 and count(uk, "ok") == 1
    tagged = staff_client.get("/?tag=feed")
    assert count(tagged, "failing") == 1 and count(tagged, "silent-7d") == 1 and count(tagged, "paused") == 0
    # Health narrows the rows, never the counts beside it.
    assert count(staff_client.get("/?region=ae&health=ok"), "failing") == 2
    assert 'href="?health=failing"' in staff_client.get("/").content.decode()


def test_a_choice_that_holds_no_source_says_so_and_a_choice_that_holds_some_does_not(fleet, staff_client):
    # "gulf" is no region here: 0 failing of 0 must not read as all clear.
    empty = staff_client.get("/?region=gulf&tag=feed").content.decode()
    assert 'data-part="empty-scope">No source has region “gulf” and tag “feed”: these counts are of nothing' in empty
    assert "empty-scope" not in staff_client.get("/?region=ae").content.decode()
    assert "empty-scope" not in staff_client.get("/").content.decode()


def test_headline_counts_nothing_when_all_is_well(api, staff_client):
    seed(api, "aa-healthy", {})
    response = staff_client.get("/")
    assert count(response, "silent-24h") == 0 and count(response, "failing") == 0
    assert count(response, "overdue") == 0 and count(response, "paused") == 0


def test_silent_run_older_than_a_day_counts_for_the_week_only(api, staff_client):
    api.post_run(run_report("old-silent", 3, collected=900, declared_total=1000))
    api.post_run(run_report("old-silent", 1, collected=1000, declared_total=1000))
    from sources.models import Run

    Run.objects.filter(silent=True).update(received_at=Run.objects.get(silent=True).started_at)
    response = staff_client.get("/")
    assert count(response, "silent-24h") == 0
    assert count(response, "silent-7d") == 1


def test_silent_runs_count_by_when_they_ran_not_when_they_arrived(api, staff_client):
    # Reported just now, run 40 days ago: no silence of the last day or week.
    api.post_run(run_report("late-silent", 41, collected=1000, declared_total=1000))
    api.post_run(run_report("late-silent", 40, collected=900, declared_total=1000))
    # Beside it, a silent run of today, reported today: counted.
    api.post_run(run_report("now-silent", 2, collected=1000, declared_total=1000))
    api.post_run(run_report("now-silent", 0, collected=900, declared_total=1000))
    response = staff_client.get("/")
    assert count(response, "silent-24h") == 1
    assert count(response, "silent-7d") == 1
    # And the counts' tooltips say so: "received in the last 24 h" sent an operator looking for the
    # backfilled silent run of five days ago, reported a minute before, among the last day's.
    page = response.content.decode()
    titles = re.findall(r'title="(sources with a silent run[^"]*)"\s+data-count="silent-(?:24h|7d)"', page)
    assert len(titles) == 2 and not any("received" in t for t in titles), titles
    assert "that ran in the last 24 h" in titles[0] and "that ran in the last 7 days" in titles[1], titles


def test_a_late_report_says_when_its_run_ran(api, staff_client):
    api.post_run(run_report("backfilled", 40, collected=1000))
    api.post_run(run_report("on-time", 0, collected=1000))
    response = staff_client.get("/")
    late, on_time = row_html(response, "backfilled"), row_html(response, "on-time")
    assert "just now" in late and "ran 40 days ago" in late
    assert "just now" in on_time and "ran " not in on_time


@pytest.mark.parametrize(
    "query, expected",
    [
        ("health=failing", ["dd-overwrite", "cc-silent", "bb-loud"]),
        ("health=paused", ["ee-paused"]),
        ("health=overdue", ["ff-overdue"]),
        ("health=ok", ["aa-healthy"]),
        ("region=ae", ["dd-overwrite", "cc-silent"]),
        ("tag=cars", ["aa-healthy"]),
        ("silent=on", ["dd-overwrite", "cc-silent"]),
        ("q=LOUD", ["bb-loud"]),
        ("region=uk&health=failing", ["bb-loud"]),
    ],
)
def test_filters(fleet, staff_client, query, expected):
    assert rows(staff_client.get(f"/?{query}")) == expected


@pytest.mark.parametrize(
    "query",
    [
        "page=abc",
        "page=-1",
        "page=99999",
        "health=bogus",
        "region=" + "x" * 500,
        "tag=nope",
        "silent=maybe",
        "q=%00",
        "q=" + "%27" * 300,
    ],
)
def test_bad_input_never_errors(fleet, staff_client, query):
    assert staff_client.get(f"/?{query}").status_code == 200


def test_unknown_health_filter_is_ignored_not_applied(fleet, staff_client):
    assert len(rows(staff_client.get("/?health=bogus"))) == 6


def _queries(client) -> int:
    cache.clear()  # the week, kept for a minute, is read anew each time here
    with CaptureQueriesContext(connection) as captured:
        assert client.get("/").status_code == 200
    return len(captured)


def test_query_count_does_not_grow_with_sources_or_runs(api, staff_client):
    seed(api, "s-0", {}, tags=("a",))
    few = _queries(staff_client)
    for n in range(1, 15):
        seed(api, f"s-{n}", {"collected": 900} if n % 3 else {}, region=f"r{n % 4}", tags=("a", f"t{n}"))
        api.post_run(run_report(f"s-{n}", 1, collected=1000, declared_total=1000, suffix="extra"))
    assert _queries(staff_client) == few
    # Pinned: session, user, expired pauses, headline (2), regions, tags, page count, page rows, the rows' tags,
    # the broken-channel banner (templates/alerts/_broken_banner.html), the rows' acknowledgements, the rows'
    # last runs (by primary key: joined into the sorted query they were read for every source), the owner
    # and team filters, the sources no channel covers (templates/sources/_unwarned.html), the sources that went
    # quiet with no clock (_quiet.html), and the fleet's week (5:
    # sources/pages/selectors/fleet.py; none while it is in the cache).
    assert few == 21


def test_an_expired_pause_is_lifted_when_the_overview_loads(api, staff_client):
    from django.utils import timezone

    from sources.models import PauseEvent

    seed(api, "aa-healthy", {})
    Source.objects.filter(slug="aa-healthy").update(
        paused=True,
        health="paused",
        paused_until=timezone.now() - timedelta(minutes=1),
        pause_origin="ui",
    )
    response = staff_client.get("/")
    assert ">ok<" in row_html(response, "aa-healthy")
    assert PauseEvent.objects.get().origin == "clock"


def test_a_pause_still_running_is_not_lifted(api, staff_client):
    from django.utils import timezone

    seed(api, "aa-healthy", {})
    Source.objects.filter(slug="aa-healthy").update(
        paused=True,
        health="paused",
        paused_until=timezone.now() + timedelta(hours=1),
        pause_origin="ui",
    )
    assert ">paused<" in row_html(staff_client.get("/"), "aa-healthy")


@pytest.mark.parametrize(
    "age, overdue", [(timedelta(hours=6, minutes=59), False), (timedelta(hours=7, minutes=1), True)]
)
def test_overdue_is_interval_plus_grace_to_the_minute(api, staff_client, age, overdue):
    from django.utils import timezone

    seed(api, "timed", {})
    Source.objects.filter(slug="timed").update(
        expected_interval=timedelta(hours=6),
        grace=timedelta(hours=1),
        last_report_at=timezone.now() - age,
        health_since=timezone.now() - age,
    )
    response = staff_client.get("/")
    assert (">overdue<" in row_html(response, "timed")) is overdue
    assert count(response, "overdue") == int(overdue)
    # Its why says so, as its source page does: the last run was complete and has nothing to say.
    assert ("no report for 7 h" in row_html(response, "timed")) is overdue


def test_the_source_page_state_agrees_with_the_overview(fleet):
    from sources.pages.selectors.overview import annotated_sources, source_state

    in_sql = {
        row["slug"]: (row["state"], row["severity"]) for row in annotated_sources().values("slug", "state", "severity")
    }
    for source in Source.objects.select_related("last_run"):
        state = source_state(source)
        assert (state["state"], state["severity"]) == in_sql[source.slug], source.slug
    assert len(set(in_sql.values())) == 6  # every class is represented


@pytest.mark.parametrize(
    "since_resume, overdue", [(timedelta(hours=6, minutes=59), False), (timedelta(hours=7, minutes=1), True)]
)
def test_the_page_and_the_overdue_clock_agree_after_a_pause(api, staff_client, since_resume, overdue):
    """Back from a pause, a source gets a full interval; the page must not call overdue what the clock does not."""
    from django.utils import timezone

    from sources.services.overdue import overdue_candidates

    seed(api, "back", {})
    Source.objects.filter(slug="back").update(
        expected_interval=timedelta(hours=6),
        grace=timedelta(hours=1),
        last_report_at=timezone.now() - timedelta(days=3),
        health_since=timezone.now() - since_resume,
    )
    assert overdue_candidates(timezone.now()).filter(slug="back").exists() is overdue
    assert (">overdue<" in row_html(staff_client.get("/"), "back")) is overdue


def test_a_just_resumed_source_leads_the_healthy_ones_instead_of_trailing_them(staff_client, api):
    from django.utils import timezone

    from sources.models import PauseOrigin
    from sources.services import pausing

    for slug in ("a-shop", "b-shop", "c-shop"):
        api.post_run(run_report(slug, 1))
    Source.objects.update(health_since=timezone.now() - timedelta(days=5))
    pausing.pause_source(Source.objects.get(slug="c-shop"), origin=PauseOrigin.UI, actor="user:ops", reason="x")
    pausing.resume_source(Source.objects.get(slug="c-shop"), origin=PauseOrigin.UI, actor="user:ops")
    page = staff_client.get("/").content.decode()
    rows = [page.index(f'data-slug="{slug}"') for slug in ("c-shop", "a-shop", "b-shop")]
    assert rows == sorted(rows)


def test_the_overview_says_who_acknowledged_a_failing_source_and_forgets_it_after_recovery(staff_client, api):
    from sources.alerts import acks

    api.post_run(run_report("shop", 3, declared_total=1000, collected=1000))
    api.post_run(run_report("shop", 2, declared_total=1000, collected=100))
    acks.acknowledge(source=Source.objects.get(slug="shop"), by="ops-lead", note="site redesign, on it")
    page = staff_client.get("/").content.decode()
    assert "acknowledged by ops-lead" in page and "site redesign, on it" in page
    api.post_run(run_report("shop", 1, declared_total=1000, collected=1000))
    assert "acknowledged by" not in staff_client.get("/").content.decode()


def test_the_overview_reads_only_the_present_problems_acknowledgements(staff_client, api):
    # Every acknowledgement the listed sources were ever given was read, years of them for a source
    # that fails every week; only the present problem's are shown.
    from sources.alerts import acks
    from sources.models import Acknowledgement

    api.post_run(run_report("shop", 3, declared_total=1000, collected=1000))
    api.post_run(run_report("shop", 2, declared_total=1000, collected=100))
    source = Source.objects.get(slug="shop")
    Acknowledgement.objects.bulk_create(
        Acknowledgement(source=source, by=f"old-{n}", health_since=source.health_since - timedelta(days=7 * n))
        for n in range(1, 40)
    )
    acks.acknowledge(source=source, by="ops-lead", note="on it")
    with CaptureQueriesContext(connection) as queries:
        page = staff_client.get("/").content.decode()
    assert "acknowledged by ops-lead" in page and "old-" not in page
    [read] = [
        q["sql"] for q in queries.captured_queries if "acknowledgement" in q["sql"].lower() and "EXISTS" not in q["sql"]
    ]
    assert "health_since" in read.split("WHERE", 1)[1]

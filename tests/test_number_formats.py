"""One way to write a number or a time on every page."""

from datetime import UTC, datetime, timedelta, timezone

from sources.models import Run
from sources.templatetags.dashboard import (
    ago,
    count,
    elapsed_since,
    finding_value,
    percent,
    signed_percent,
    unbroken,
    utc,
)
from tests.conftest import run_report


def test_counts_have_thousands_separators():
    assert count(37352) == "37,352"
    assert count(None) == "—"
    assert finding_value(9000, "drop") == "9,000"


def test_every_share_has_one_decimal():
    assert percent(0.925) == "92.5%"
    assert percent(0.99) == "99.0%"
    assert signed_percent(-0.0004) == "0.0%"
    assert signed_percent(-0.0833) == "-8.3%"
    assert finding_value(0.895, "field_coverage") == "89.5%"


def test_times_say_utc_whatever_zone_they_come_in():
    moment = datetime(2026, 11, 30, 10, 5, 7, tzinfo=timezone(timedelta(hours=2)))
    assert utc(moment) == "2026-11-30 08:05 UTC"
    assert utc(moment, "seconds") == "2026-11-30 08:05:07 UTC"
    assert utc(None) == ""


def test_times_since_are_rounded_down_to_one_unit():
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    assert [ago(now - timedelta(seconds=s), now) for s in (0, 59, 60, 3599, 3600)] == [
        "just now",
        "just now",
        "1 min ago",
        "59 min ago",
        "1 h ago",
    ]
    assert elapsed_since(now - timedelta(hours=47, minutes=59), now) == "47 h"
    assert elapsed_since(now - timedelta(hours=48), now) == "2 days"
    assert elapsed_since(now - timedelta(seconds=5), now) == "under a minute"
    # A report from a clock a little ahead is not "in the future" on the page.
    assert ago(now + timedelta(seconds=30), now) == "just now"
    assert ago(None, now) == elapsed_since(now, None) == ""


def test_the_pages_use_them(staff_client, api):
    api.post_run(run_report("shop", 2, collected=37403, declared_total=37403))
    api.post_run(run_report("shop", 1, collected=33600, declared_total=37403))  # a flip to failing
    overview = staff_client.get("/").content.decode()
    assert "33,600 / 37,403" in overview and "89.8%" in overview
    source = staff_client.get("/sources/shop/").content.decode()
    assert "33,600" in source and " UTC" in source
    alerts = staff_client.get("/alerts/").content.decode()
    assert datetime.now(UTC).strftime("%Y-%m-%d") in alerts and " UTC</td>" in alerts


def test_a_share_never_rounds_to_all_or_nothing():
    from sources.templatetags.dashboard import percent

    assert percent(1193 / 1194) == "99.9%"
    assert percent(1.0) == "100.0%"
    assert percent(1 / 20_000) == "0.1%" and percent(0) == "0.0%"
    assert percent(0.973) == "97.3%"


def test_durations_have_one_format():
    from datetime import timedelta

    from sources.templatetags.dashboard import duration

    assert duration(timedelta(hours=4)) == "4 h"
    assert duration(timedelta(hours=3, minutes=20)) == "3 h 20 min"
    assert duration(timedelta(days=2, hours=4, minutes=5)) == "2 days 4 h"
    assert duration(timedelta(days=1, minutes=20)) == "1 day"
    assert duration(timedelta(minutes=90)) == "1 h 30 min"
    assert duration(timedelta(seconds=20)) == "20 s"


def test_the_run_page_writes_every_count_with_separators(api, staff_client):
    from tests.conftest import report

    api.post_run(
        report(
            collected=9000,
            declared_total=12000,
            written=9000,
            snapshot={"action": "replaced", "rows": 9000},
            pages={"expected": 1200, "fetched": 1100, "lost": 100},
        )
    )
    from sources.models import Run

    page = staff_client.get(f"/runs/{Run.objects.get().pk}/").content.decode()
    assert "9000" not in page.split("<pre")[0] and "12000" not in page.split("<pre")[0]
    assert "(9,000 rows)" in page and "expected 1,200, fetched 1,100, lost 100" in page


def test_the_admin_writes_times_as_the_pages_do_with_the_zone(api, admin_client):
    api.post_run(run_report("shop", 2))
    run = Run.objects.get()
    page = admin_client.get("/admin/sources/run/").content.decode()
    assert f"{run.started_at:%Y-%m-%d %H:%M} UTC" in page
    # Not Django's English default, which names no zone: "Nov. 29, 2026, 10 p.m.".
    assert f"{run.started_at:%b}." not in page and " a.m." not in page and " p.m." not in page


def test_a_date_or_a_range_in_a_sentence_stays_on_one_line_and_the_rest_is_escaped():
    shown = unbroken("Tuesdays, 8 runs since 2026-10-06 <b>: 1,090-1,260")
    assert shown == (
        'Tuesdays, 8 runs since <span class="nowrap">2026-10-06</span> &lt;b&gt;: '
        '<span class="nowrap">1,090-1,260</span>'
    )
    assert unbroken("(56 runs: 492-550), 3-4") == (
        '(56 runs: <span class="nowrap">492-550</span>), <span class="nowrap">3-4</span>'
    )
    # A word with a hyphen is left to break: only numbers are kept whole.
    assert unbroken("four-a-day, day-14") == "four-a-day, day-14"


def test_a_layout_finding_expects_some_records_not_one():
    assert finding_value(1, "layout") == "≥ 1" and finding_value(0, "layout") == "0"

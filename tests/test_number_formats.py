"""One way to write a number or a time on every page (issue 13, item 3)."""

from datetime import UTC, datetime, timedelta, timezone

from sources.templatetags.dashboard import count, finding_value, percent, signed_percent, utc
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


def test_the_pages_use_them(staff_client, api):
    api.post_run(run_report("shop", 2, collected=37403, declared_total=37403))
    api.post_run(run_report("shop", 1, collected=33600, declared_total=37403))  # a flip to failing
    overview = staff_client.get("/").content.decode()
    assert "33,600 / 37,403" in overview and "89.8%" in overview
    source = staff_client.get("/sources/shop/").content.decode()
    assert "33,600" in source and " UTC" in source
    alerts = staff_client.get("/alerts/").content.decode()
    assert datetime.now(UTC).strftime("%Y-%m-%d") in alerts and " UTC</td>" in alerts

"""Rule settings per source: staff edit them on the source page or in the admin, typed as an operator
would; bad input names its line and saves nothing; viewers read them and cannot post."""

import html
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django import forms
from django.db import connection

from completeness.durations import human_duration
from sources.models import Source
from sources.pages.forms import SourceSettingsForm, format_duration, parse_duration, parse_field_minimums, parse_share
from sources.services.rule_settings import update_rule_settings
from tests.conftest import run_report

VALID = {
    "min_completeness": "98%",
    "drop_threshold": "0.3",
    "field_drop": "5%",
    "field_minimums": "price = 95%\nphone: 0.5\n\n# photos are optional\n",
    "trend_days": "14",
    "trend_min_runs": "4",
    "learn_days": "42",
    "learn_min_runs": "12",
    "min_margin": "8%",
    "expected_interval": "6h",
    "grace": "1h 30m",
}


@pytest.fixture
def shop(api):
    api.post_run(run_report("shop", 1, fields={"price": 990, "phone": 620}))
    return Source.objects.get(slug="shop")


@pytest.mark.parametrize(
    "text, share",
    [
        ("95%", 0.95),
        ("95 %", 0.95),
        ("0.95", 0.95),
        (".95", 0.95),
        ("99.5%", 0.995),
        ("0", 0.0),
        ("100%", 1.0),
        ("1%", 0.01),
    ],
)
def test_a_share_is_typed_as_a_percentage_or_a_fraction(text, share):
    assert parse_share(text) == pytest.approx(share)


@pytest.mark.parametrize(
    "text, says",
    [
        ("95", "write 95% or 0.95"),
        ("1", "could mean 100% or 1%: write 100% or 1%"),
        ("1.0", "could mean 100% or 1%"),
        ("abc", "not a number"),
        ("nan", "not a number"),
        ("101%", "between 0% and 100%"),
        ("-5%", "between 0% and 100%"),
    ],
)
def test_a_share_out_of_range_or_ambiguous_is_refused_with_what_to_write(text, says):
    with pytest.raises(ValueError, match=says):
        parse_share(text)


@pytest.mark.parametrize("value", ["60%", "0.6", "200%"])
def test_min_margin_above_its_bound_is_refused_in_percent_on_the_page_and_in_the_admin(
    shop, staff, staff_client, value
):
    page = staff_client.post("/sources/shop/settings", {**VALID, "min_margin": value}).content.decode()
    assert f"“{value}” must lie between 0% and 50%" in page and "0.5" not in page.split("min_margin")[-1][:400]
    assert Source.objects.get(slug="shop").min_margin == 0.05


def test_field_minimums_are_one_line_per_field():
    text = "price = 95%\nphone: 0.5\n  title=100%  # every record has one\n\n# a comment\nmeta:rooms = 80%"
    assert parse_field_minimums(text) == {"price": 0.95, "phone": 0.5, "title": 1.0, "meta:rooms": 0.8}


def test_every_bad_line_is_named_by_its_number():
    with pytest.raises(forms.ValidationError) as caught:
        parse_field_minimums("price = 95%\nphone 50%\nrooms = 80\n= 5%\nprice = 0.9\nbeds =")
    messages = caught.value.messages
    assert messages == [
        "line 2 “phone 50%”: write it as field = 95%",
        "line 3 “rooms = 80”: 80 is more than 1: write 80% or 0.8",
        "line 4 “= 5%”: the field name must be 1-100 characters",
        "line 5: price already has a minimum on line 1",
        "line 6 “beds =”: no minimum after the field name",
    ]


def test_staff_saves_every_setting_from_the_source_page(shop, staff_client):
    response = staff_client.post("/sources/shop/settings", VALID)
    assert response.status_code == 302 and response["Location"].endswith("/sources/shop/#settings")
    source = Source.objects.get(slug="shop")
    assert source.min_completeness == pytest.approx(0.98) and source.drop_threshold == pytest.approx(0.3)
    assert source.field_drop == pytest.approx(0.05)
    assert source.field_minimums == {"price": 0.95, "phone": 0.5}
    assert source.expected_interval == timedelta(hours=6) and source.grace == timedelta(minutes=90)
    assert (source.trend_days, source.trend_min_runs) == (14, 4)
    assert (source.learn_days, source.learn_min_runs) == (42, 12) and source.min_margin == pytest.approx(0.08)
    page = staff_client.get(response["Location"]).content.decode()
    assert "Settings saved" in page and "field_drop 10% → 5%" in page


def test_the_form_shows_the_settings_as_they_were_typed_back(shop, staff_client):
    staff_client.post("/sources/shop/settings", VALID)
    page = staff_client.get("/sources/shop/").content.decode()
    assert "phone = 50%\nprice = 95%" in page
    assert 'value="98%"' in page and 'value="14"' in page


def test_settings_left_as_the_page_shows_them_keep_their_stored_precision(shop, staff_client):
    """The page rounds shares to four digits; the settings API takes any. Saving the form to change an
    owner wrote 99.996% back as 100%, and every run short of all records was incomplete."""
    update_rule_settings(shop, min_completeness=0.99996, min_margin=0.123456789, field_minimums={"price": 0.123456789})
    shown = SourceSettingsForm.of(Source.objects.get(slug="shop"))
    posted = {name: field.prepare_value(shown.initial[name]) or "" for name, field in shown.fields.items()}
    assert posted["min_completeness"] == "100%"  # as the page shows it
    response = staff_client.post("/sources/shop/settings", {**posted, "owner": "ana"})
    source = Source.objects.get(slug="shop")
    assert (source.min_completeness, source.min_margin) == (0.99996, 0.123456789)
    assert source.field_minimums == {"price": 0.123456789} and source.owner == "ana"
    assert (
        "Settings saved, from the next report on: owner none → ana."
        in staff_client.get(response["Location"]).content.decode()
    )
    # Typed over, a share is what was typed.
    staff_client.post("/sources/shop/settings", {**posted, "owner": "ana", "min_completeness": "99%"})
    assert Source.objects.get(slug="shop").min_completeness == 0.99


def test_the_next_report_is_judged_by_the_new_minimum(api, shop, staff_client):
    staff_client.post("/sources/shop/settings", {**VALID, "field_minimums": "phone = 70%"})
    body = api.post_run(run_report("shop", 0, fields={"price": 990, "phone": 650})).json()
    assert body["verdict"] == "incomplete"
    assert body["findings"][0]["message"].startswith(
        "phone filled in 65.0% of 1,000 records, floor 70.0% (operator minimum)"
    )


def test_one_bad_value_saves_nothing_and_the_page_shows_every_error(shop, staff_client):
    response = staff_client.post(
        "/sources/shop/settings",
        {
            **VALID,
            "field_drop": "12",
            "field_minimums": "price = 95%\nphone fifty",
            "trend_days": "0",
        },
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Settings not saved" in page
    assert "12 is more than 1: write 12% or 0.12" in page
    assert "line 2 “phone fifty”: write it as field = 95%" in page
    assert "Ensure this value is greater than or equal to 1." in page
    # What was typed stays in the form, so one mistake does not cost the rest.
    assert "price = 95%\nphone fifty" in page and 'value="98%"' in page
    source = Source.objects.get(slug="shop")
    assert (source.min_completeness, source.field_drop, source.field_minimums, source.trend_days) == (
        0.99,
        0.10,
        {},
        30,
    )


def test_the_page_with_errors_still_draws_its_charts(shop, staff_client):
    page = staff_client.post("/sources/shop/settings", {**VALID, "trend_min_runs": "x"}).content.decode()
    assert 'data-target="chart-coverage"' in page and 'data-rule="trend"' in page


def test_a_viewer_sees_the_settings_but_gets_403_on_post(shop, viewer_client):
    page = viewer_client.get("/sources/shop/").content.decode()
    assert 'id="settings"' in page and 'action="/sources/shop/settings' not in page
    assert viewer_client.post("/sources/shop/settings", VALID).status_code == 403
    assert Source.objects.get(slug="shop").field_minimums == {}


def test_settings_of_an_unknown_source_are_404(staff_client):
    assert staff_client.post("/sources/nope/settings", VALID).status_code == 404


def test_links_from_a_page_with_errors_lead_back_to_the_source_page(shop, staff_client):
    # The page with errors is shown at /settings: its history's "?page=2" and a reload come here.
    response = staff_client.get("/sources/shop/settings?page=2")
    assert response.status_code == 302 and response["Location"] == "/sources/shop/?page=2"
    assert staff_client.get("/sources/shop/settings")["Location"] == "/sources/shop/"


def test_both_new_rules_are_in_the_rules_table_with_mode_and_cost(api, staff_client):
    for n, collected in enumerate([1000, 960, 922, 885, 849, 815, 783, 751, 721, 693]):
        price = collected // 2 if n == 9 else collected * 99 // 100
        assert api.post_run(run_report("slow", 20 - n, collected=collected, fields={"price": price})).status_code == 201
    page = staff_client.get("/sources/slow/").content.decode()

    def cell(rule: str) -> str:
        start = page.index(f'data-rule="{rule}"')
        return page[start : page.index("</tr>", start)]

    assert "enforce" in cell("field_coverage") and "1 of 10" in cell("field_coverage")
    assert "enforce" in cell("trend") and "2 of 10" in cell("trend")  # 721 and 693, as in example s09


def test_the_admin_edits_the_same_settings_with_the_same_text(shop, staff, client):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    page = client.get(f"/admin/sources/source/{shop.pk}/change/").content.decode()
    for name in (
        "field_drop",
        "field_minimums",
        "trend_days",
        "trend_min_runs",
        "learn_days",
        "learn_min_runs",
        "min_margin",
    ):
        assert f'name="{name}"' in page, name
    # What ingest writes, the learned normal included, is shown and not editable.
    for name in ("health", "baseline_collected", "trend_ceiling", "paused", "normal_state", "created_at_0"):
        assert f'name="{name}"' not in page, name
    form = {
        "slug": "shop",
        "name": "Shop",
        "region": "",
        "min_completeness": "99%",
        "drop_threshold": "25%",
        "field_drop": "0.08",
        "field_minimums": "price = 97.5%",
        "trend_days": "21",
        "trend_min_runs": "3",
        "learn_days": "56",
        "learn_min_runs": "10",
        "min_margin": "6%",
        "rule_modes": "",
        "grace": "01:00:00",
    }
    response = client.post(f"/admin/sources/source/{shop.pk}/change/", form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    source = Source.objects.get(slug="shop")
    assert source.field_drop == pytest.approx(0.08) and source.field_minimums == {"price": 0.975}
    assert source.trend_days == 21 and source.min_margin == pytest.approx(0.06)
    bad = client.post(f"/admin/sources/source/{shop.pk}/change/", {**form, "field_minimums": "price 97"})
    assert bad.status_code == 200 and "line 1 “price 97”: write it as field = 95%" in bad.content.decode()
    assert Source.objects.get(slug="shop").field_minimums == {"price": 0.975}
    # Intervals typed as on the source page, and min_margin's bound in percent, as there.
    typed = client.post(f"/admin/sources/source/{shop.pk}/change/", {**form, "expected_interval": "1d", "grace": "2h"})
    assert typed.status_code == 302, typed.context["adminform"].form.errors
    source = Source.objects.get(slug="shop")
    assert (source.expected_interval, source.grace) == (timedelta(days=1), timedelta(hours=2))
    assert 'value="1d"' in client.get(f"/admin/sources/source/{shop.pk}/change/").content.decode()
    wide = client.post(f"/admin/sources/source/{shop.pk}/change/", {**form, "min_margin": "60%"})
    assert "“60%” must lie between 0% and 50%" in wide.content.decode()


# The admin's source form as a browser posts it, every setting at its default.
ADMIN_FORM = {
    "slug": "shop",
    "name": "",
    "region": "",
    "min_completeness": "99%",
    "drop_threshold": "25%",
    "field_drop": "10%",
    "field_minimums": "",
    "trend_days": "30",
    "trend_min_runs": "3",
    "learn_days": "56",
    "learn_min_runs": "10",
    "min_margin": "5%",
    "grace": "01:00:00",
}


def test_the_admin_takes_rule_modes_as_lines_and_refuses_what_ingest_could_not_judge_by(api, shop, staff, client):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    form = ADMIN_FORM
    url = f"/admin/sources/source/{shop.pk}/change/"
    saved = client.post(url, {**form, "rule_modes": "delivery = enforce\nTrend = Observe  # noisy source"})
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    assert Source.objects.get(slug="shop").rule_modes == {"delivery": "enforce", "trend": "observe"}
    assert "delivery = enforce\ntrend = observe" in client.get(url).content.decode()
    # Each of these was stored as it was typed, and every report of the source then answered 500.
    for typed, error in (
        ("drop = loud", "line 1 “drop = loud”: no mode 'loud' (enforce or observe)"),
        (
            "dorp = observe",
            "line 1 “dorp = observe”: no rule 'dorp' (rules: below_expected, breaker_stopped, crawler_reported,",
        ),
        ("snapshot_overwritten = observe", "'snapshot_overwritten' is data loss and always enforced"),
        ("trend = observe\nTREND = enforce", "line 2: trend already has a mode on line 1"),
        ('{"drop": "observe"}', "no rule '{\"drop\"' (rules: below_expected"),  # the old JSON
    ):
        refused = client.post(url, {**form, "rule_modes": typed})
        assert refused.status_code == 200 and error in html.unescape(refused.content.decode()), typed
    assert Source.objects.get(slug="shop").rule_modes == {"delivery": "enforce", "trend": "observe"}
    assert api.post_run(run_report("shop", 0, collected=400)).status_code == 201


def test_settings_an_earlier_admin_stored_unreadable_are_dropped_and_the_source_reports_again(api, shop):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("sources.migrations.0022_readable_settings")
    Source.objects.filter(pk=shop.pk).update(
        rule_modes={"drop": "loud", "trend": "observe", "dorp": "observe"},
        field_minimums={"price": "high", "phone": 0.5, "title": 95, "stock": True},
    )
    other = Source.objects.create(slug="listed", rule_modes=["drop"], field_minimums="price")
    untouched = Source.objects.create(slug="fine", rule_modes={"trend": "observe"}, field_minimums={"price": 1})
    migration.drop_unreadable_settings(apps, SimpleNamespace(connection=connection))  # as migrate's schema editor
    shop.refresh_from_db()
    assert shop.rule_modes == {"trend": "observe", "dorp": "observe"} and shop.field_minimums == {"phone": 0.5}
    assert Source.objects.values("rule_modes", "field_minimums").get(pk=other.pk) == {
        "rule_modes": {},
        "field_minimums": {},
    }
    assert Source.objects.values("rule_modes", "field_minimums").get(pk=untouched.pk) == {
        "rule_modes": {"trend": "observe"},
        "field_minimums": {"price": 1},
    }
    assert api.post_run(run_report("shop", 0, collected=400, fields={"price": 10, "phone": 300})).status_code == 201


def test_saving_the_admin_form_does_not_roll_back_a_run_judged_while_it_was_open(api, shop, staff, client):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    form = {**ADMIN_FORM, "trend_min_runs": "5", "rule_modes": ""}
    # The operator has the form open; a report arrives, is judged, and moves the source's state.
    api.post_run(run_report("shop", 0, collected=400, fields={"price": 200}))
    before = Source.objects.values("health", "last_verdict", "baseline_collected", "last_run_id").get(slug="shop")
    assert before["health"] == "failing"
    assert client.post(f"/admin/sources/source/{shop.pk}/change/", form).status_code == 302
    after = Source.objects.values("health", "last_verdict", "baseline_collected", "last_run_id").get(slug="shop")
    assert after == before and Source.objects.get(slug="shop").trend_min_runs == 5


@pytest.mark.parametrize(
    "text, value",
    [
        ("6h", timedelta(hours=6)),
        ("1d 12h", timedelta(days=1, hours=12)),
        ("90m", timedelta(minutes=90)),
        ("0m", timedelta(0)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("", None),
        # As the pages and messages write a duration back.
        ("6 hours", timedelta(hours=6)),
        ("2 days 4 h", timedelta(days=2, hours=4)),
        ("1 day", timedelta(days=1)),
        ("3 h 20 min", timedelta(hours=3, minutes=20)),
        ("45 s", timedelta(seconds=45)),
    ],
)
def test_an_interval_is_typed_as_an_operator_writes_a_schedule(text, value):
    assert parse_duration(text) == value
    assert value is None or parse_duration(format_duration(value)) == value
    assert value is None or parse_duration(human_duration(value.total_seconds())) == value


@pytest.mark.parametrize("text", ["6", "6 months", "6 hrs", "1.5h", "h", "6hx"])
def test_an_interval_without_a_unit_or_with_another_is_refused(text):
    with pytest.raises(forms.ValidationError, match="write it as e.g. 6h") as refused:
        parse_duration(text)
    # Quoted as the form's other fields quote what was typed.
    assert refused.value.messages[0].startswith(f"“{text.strip().lower()}”: ")


def test_an_interval_under_a_minute_is_refused_and_nothing_is_saved(shop, staff_client):
    response = staff_client.post("/sources/shop/settings", {**VALID, "expected_interval": "30s"})
    assert response.status_code == 200 and b"Settings not saved" in response.content
    source = Source.objects.get(slug="shop")
    assert source.expected_interval is None and source.min_completeness == pytest.approx(0.99)


def test_an_empty_interval_removes_the_overdue_clock(shop, staff_client):
    Source.objects.filter(slug="shop").update(expected_interval=timedelta(hours=1))
    assert staff_client.post("/sources/shop/settings", {**VALID, "expected_interval": ""}).status_code == 302
    assert Source.objects.get(slug="shop").expected_interval is None


@pytest.mark.parametrize(
    "name,value", [("learn_days", "14"), ("learn_days", "367"), ("learn_min_runs", "4"), ("min_margin", "51%")]
)
def test_the_expectation_settings_are_bounded_and_a_bad_one_saves_nothing(shop, staff_client, name, value):
    response = staff_client.post("/sources/shop/settings", {**VALID, name: value})
    assert response.status_code == 200
    assert "Settings not saved" in response.content.decode()
    source = Source.objects.get(slug="shop")
    assert (source.learn_days, source.learn_min_runs, source.min_margin) == (56, 10, 0.05)
    assert source.min_completeness == 0.99  # the valid values beside it were not saved either


@pytest.mark.parametrize(
    "name, value, says",
    [
        ("expected_interval", "30s", "“30s” must lie between 1m and 366d"),
        ("expected_interval", "400d", "“400d” must lie between 1m and 366d"),
        ("grace", "31d", "“31d” must lie between 0s and 30d"),
        # Past what a timedelta holds: both answered 500.
        ("expected_interval", "99999999999d", "“99999999999d” must lie between 1m and 366d"),
        ("grace", "10000000000000h", "“10000000000000h” must lie between 0s and 30d"),
    ],
)
def test_an_interval_out_of_bounds_is_refused_in_the_form_s_own_units_on_the_page_and_in_the_admin(
    shop, staff, staff_client, client, name, value, says
):
    """Django's own message said "Ensure this value is greater than or equal to 0:01:00." of a field
    typed as 6h or 90m."""
    page = html.unescape(staff_client.post("/sources/shop/settings", {**VALID, name: value}).content.decode())
    assert says in page and "0:01:00" not in page and "30 days, 0:00:00" not in page
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    form = {**ADMIN_FORM, "name": "Shop", "rule_modes": "", "grace": "1h", name: value}
    admin = html.unescape(client.post(f"/admin/sources/source/{shop.pk}/change/", form).content.decode())
    assert says in admin and "0:01:00" not in admin
    source = Source.objects.get(slug="shop")
    assert (source.expected_interval, source.grace) == (None, timedelta(hours=1))


@pytest.mark.parametrize("url", ["ftp://example.com/runbook", "gopher://example.com/runbook"])
def test_a_runbook_link_that_is_not_http_says_so_on_the_page(shop, staff_client, url):
    """Django's own URL check passes ftp://, and the http(s) one beside it said only "Enter a valid URL."."""
    page = html.unescape(staff_client.post("/sources/shop/settings", {**VALID, "runbook_url": url}).content.decode())
    assert "Enter a URL that starts with http:// or https:// and names a host." in page
    assert Source.objects.get(slug="shop").runbook_url == ""


def test_a_runbook_on_an_intranet_host_is_taken_on_the_page(shop, staff_client):
    staff_client.post("/sources/shop/settings", {**VALID, "runbook_url": "https://wiki/runbooks/shop"})
    assert Source.objects.get(slug="shop").runbook_url == "https://wiki/runbooks/shop"

"""Severity and routing: a channel hears alerts of its minimum severity and above, about the sources it
picks by slug, tag, owner or team; a recovery goes to the channels that heard the problem; the first
alert names the owner, the runbook, the next step and where to acknowledge. Real receivers on 127.0.0.1."""

from io import StringIO

import pytest
from django.core.management import call_command

from completeness.alerts.severity import Severity, Subscription, severity_of
from sources.alerts import channels
from sources.models import Channel, Notification, Run, Source
from tests.alerts.conftest import deliver_all
from tests.alerts.sinks import HttpSink, Reply
from tests.conftest import report

pytestmark = pytest.mark.django_db

PD_KEY = "0123456789abcdef0123456789abcdef"
RUNBOOK = "https://runbooks.example.com/crawlers/shop"


@pytest.fixture
def pagerduty(db, settings):
    """A PagerDuty channel that pages for data loss only."""
    with HttpSink() as sink:
        settings.ALERTS_PAGERDUTY_EVENTS_URL = sink.url("/v2/enqueue")
        channels.create_channel(kind="pagerduty", target=PD_KEY, min_severity="data_loss")
        yield sink


@pytest.fixture
def chat(db, settings, http_sink):
    settings.ALERTS_GROUP_SECONDS = 0
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    return http_sink


@pytest.fixture
def shop(db):
    return Source.objects.create(slug="shop", owner="ada", team="cars", runbook_url=RUNBOOK)


def post(api, n: int, slug: str = "shop", **fields) -> None:
    body = report(
        source=slug,
        run_id=f"{slug}-{n}",
        started_at=f"2026-09-{n:02d}T03:00:00Z",
        finished_at=f"2026-09-{n:02d}T04:00:00Z",
        **fields,
    )
    answer = api.post_run(body)
    assert answer.status_code == 201, answer.content
    deliver_all()  # as a worker would, before the next report


def actions(sink: HttpSink) -> list[tuple[str, str]]:
    return [(r.json()["event_action"], r.json().get("payload", {}).get("severity", "")) for r in sink.received()]


def test_a_one_percent_shortfall_does_not_page_a_data_loss_channel_but_reaches_chat(api, shop, pagerduty, chat):
    post(api, 1, declared_total=1000, collected=1000)
    post(api, 2, declared_total=1000, collected=985)  # 98.5%: under the 99% minimum
    post(api, 3, declared_total=1000, collected=1000)
    deliver_all()
    assert pagerduty.received() == []  # neither the failure nor its recovery
    heads = [r.json()["blocks"][0]["text"]["text"] for r in chat.received("/slack")]
    assert heads[0] == "shop is failing silently (was ok)" and heads[1].startswith("shop is ok again (was failing)")
    assert len(heads) == 2


def test_a_data_loss_pages_the_data_loss_channel_and_its_recovery_resolves_it(api, shop, pagerduty, chat):
    post(api, 1, collected=9000, snapshot={"action": "replaced", "rows": 9000})
    post(api, 2, collected=1200, snapshot={"action": "replaced", "rows": 1200})  # a partial run replaced it
    post(api, 3, collected=9000, snapshot={"action": "replaced", "rows": 9000})
    deliver_all()
    assert actions(pagerduty) == [("trigger", "critical"), ("resolve", "")]
    trigger = pagerduty.received()[0].json()
    assert trigger["payload"]["custom_details"]["severity"] == "data_loss"
    assert len(chat.received("/slack")) == 2  # chat hears everything, data loss included


def test_a_data_loss_while_already_failing_pages_and_the_recovery_closes_it(api, shop, pagerduty):
    post(api, 1, collected=9000, snapshot={"action": "replaced", "rows": 9000})
    post(api, 2, collected=1200, snapshot={"action": "kept_previous", "rows": 9000})  # failing, nothing lost
    deliver_all()
    assert pagerduty.received() == []
    post(api, 3, collected=1100, snapshot={"action": "replaced", "rows": 1100})  # now data is lost
    post(api, 4, collected=9000, snapshot={"action": "replaced", "rows": 9000})
    deliver_all()
    assert actions(pagerduty) == [("trigger", "critical"), ("resolve", "")]


def test_the_first_alert_names_the_owner_the_runbook_the_next_step_and_where_to_acknowledge(api, shop, chat):
    post(api, 1, declared_total=1000, collected=1000)
    post(api, 2, declared_total=1000, collected=400)
    deliver_all()
    [alert] = chat.received("/slack")
    text = alert.json()["text"]
    assert "Owner: ada (team cars)" in text
    assert f"Runbook: {RUNBOOK}" in text
    assert f"Next step: Follow the runbook ({RUNBOOK}). Open the run this alert links: its findings" in text
    run = Run.objects.get(run_id="shop-2")
    assert f"verdict incomplete, crawler exit code 0) http://127.0.0.1:8000/runs/{run.pk}/" in text
    assert (
        "Acknowledge: http://127.0.0.1:8000/alerts/?ack=shop#ack-shop (or POST /api/v1/sources/shop/acknowledge)"
        in text
    )
    post(api, 3, declared_total=1000, collected=1000)
    deliver_all()
    resolved = chat.received("/slack")[-1].json()["text"]
    assert "Owner:" not in resolved and "Next step" not in resolved  # a recovery needs nobody


def test_a_source_with_no_owner_says_whom_to_name(api, chat):
    post(api, 1, slug="feed", declared_total=1000, collected=1000)
    post(api, 2, slug="feed", declared_total=1000, collected=400)
    deliver_all()
    text = chat.received("/slack")[0].json()["text"]
    assert "Owner: nobody named: set the source's owner or team" in text and "Runbook:" not in text


def test_the_next_step_of_a_run_its_crawler_called_short_is_no_new_baseline(api, shop, chat):
    # A timeout or a breaker stop: the crawler exited 3, the site had not shrunk.
    post(api, 1, declared_total=1000, collected=1000)
    post(api, 2, declared_total=1000, collected=400, exit_code=3)
    deliver_all()
    text = chat.received("/slack")[0].json()["text"]
    assert "The crawler itself reported the run short" in text and "a run cut short is no new baseline" in text
    assert "if the site really shrank" not in text


def test_pagerduty_carries_the_runbook_and_acknowledge_links(api, shop, settings):
    with HttpSink() as sink:
        settings.ALERTS_PAGERDUTY_EVENTS_URL = sink.url("/v2/enqueue")
        channels.create_channel(kind="pagerduty", target=PD_KEY)
        post(api, 1, declared_total=1000, collected=1000)
        post(api, 2, declared_total=1000, collected=400)
        deliver_all()
        [trigger] = sink.received()
    body = trigger.json()
    assert body["payload"]["severity"] == "error"
    links = {link["text"]: link["href"] for link in body["links"]}
    assert links["Runbook"] == RUNBOOK and links["Acknowledge"] == "http://127.0.0.1:8000/alerts/?ack=shop#ack-shop"
    assert body["payload"]["custom_details"]["oncall"]["owner"] == "ada"


def test_a_team_channel_hears_its_team_and_not_another(api, shop, settings):
    settings.ALERTS_GROUP_SECONDS = 0
    Source.objects.create(slug="boots", team="shoes")
    with HttpSink() as sink:
        channels.create_channel(kind="webhook", target=sink.url("/cars"), teams="cars")
        channels.create_channel(kind="webhook", target=sink.url("/ada"), owners="ada, bob")
        for slug in ("shop", "boots"):
            post(api, 1, slug=slug, declared_total=1000, collected=1000)
            post(api, 2, slug=slug, declared_total=1000, collected=400)
        deliver_all()
        assert [r.json()["source"]["slug"] for r in sink.received("/cars")] == ["shop"]
        assert [r.json()["source"]["slug"] for r in sink.received("/ada")] == ["shop"]
    cars = Channel.objects.get(teams="cars")
    assert not cars.all_sources and cars.scope == "team cars"


def test_an_overdue_source_does_not_reach_a_failing_channel_but_its_failure_does(db, shop, settings):
    with HttpSink() as sink:
        channels.create_channel(kind="webhook", target=sink.url("/f"), min_severity="failing")
        from sources.alerts import outbox
        from sources.services.health import change_health_and_notify

        change_health_and_notify(shop, "overdue", cause="clock")
        assert Notification.objects.count() == 0
        change_health_and_notify(shop, "failing", cause="run")
        change_health_and_notify(shop, "ok", cause="run")
        assert list(Notification.objects.order_by("pk").values_list("kind", flat=True)) == ["failing", "resolved"]
        assert outbox.channel_ids_for(shop, outbox.ALERT_KINDS, kind="overdue", severity="overdue") == []


def test_a_broken_channel_is_not_announced_on_a_data_loss_channel(db, shop, pagerduty, chat):
    hook = channels.create_channel(kind="webhook", target=chat.url("/gone"))
    chat.reply(Reply(404))
    channels.send_test_message(hook)
    deliver_all()
    deliver_all()  # the announcement the refusal wrote
    assert [r.path for r in chat.received()] == ["/gone", "/slack"]  # slack hears it, PagerDuty does not
    assert pagerduty.received() == []


def test_severities_rank_data_loss_over_failing_over_overdue_over_information():
    def event(kind, rules=(), health=None):
        findings = [{"rule": rule, "message": "m", "expected": 1, "actual": 0} for rule in rules]
        return {"kind": kind, "findings": findings, "problem": {"health": health} if health else None}

    assert severity_of(event("failing", ["snapshot_overwritten"])) == Severity.DATA_LOSS
    assert severity_of(event("snapshot_overwritten")) == Severity.DATA_LOSS
    assert severity_of(event("failing", ["drop"])) == Severity.FAILING
    assert severity_of(event("overdue")) == Severity.OVERDUE
    assert severity_of(event("reminder", health="overdue")) == Severity.OVERDUE
    assert severity_of(event("reminder", ["drop"], health="failing")) == Severity.FAILING
    for kind in ("resolved", "channel_broken", "channel_healed", "test"):
        assert severity_of(event(kind)) == Severity.INFO
    pager = Subscription(1, "failing", listed=True)
    assert pager.hears("data_loss") and pager.hears("failing")
    assert not pager.hears("overdue") and not pager.hears("info")


def test_the_minimum_severity_and_owner_team_filter_are_set_by_command_form_and_admin(db, admin_client):
    out = StringIO()
    call_command(
        "add_channel", "webhook", "https://hooks.example/a", "--min-severity", "data_loss", "--team", "cars", stdout=out
    )
    assert "for team cars, hearing data loss only" in out.getvalue()
    made = Channel.objects.get(target="https://hooks.example/a")
    assert (made.min_severity, made.teams, made.all_sources) == ("data_loss", "cars", False)
    with pytest.raises(Exception, match="invalid choice"):
        call_command("add_channel", "webhook", "https://hooks.example/b", "--min-severity", "loud", stderr=StringIO())

    client = admin_client
    form = {"kind": "email", "target": "ops@example.com", "method": "GET", "min_severity": "failing"}
    assert client.post("/alerts/channels/", {**form, "owners": "bob, ada,ada"}).status_code == 302
    made = Channel.objects.get(kind="email")
    assert (made.min_severity, made.owners) == ("failing", "ada, bob")
    listing = client.get("/alerts/channels/").content.decode()
    assert "failing and data loss" in listing and "owner ada, owner bob" in listing

    admin = {"name": "", "kind": "slack", "target": "https://hooks.example/c", "method": "GET"}
    response = client.post("/admin/sources/channel/add/", {**admin, "min_severity": "overdue", "teams": "shoes"})
    assert response.status_code == 302
    made = Channel.objects.get(target="https://hooks.example/c")
    assert (made.min_severity, made.teams) == ("overdue", "shoes")
    bad = client.post("/admin/sources/channel/add/", {**admin, "min_severity": "loud"})
    assert bad.status_code == 200 and b"loud is not one of the available choices" in bad.content


def test_a_channel_for_an_owner_or_team_no_source_has_is_made_and_says_so(admin_client):
    # "--owner ghost" (a typo of an owner's name) made a channel that covers nothing, silently.
    from sources.models import Source

    Source.objects.create(slug="shop", owner="ada", team="cars")
    out = StringIO()
    call_command("add_channel", "webhook", "https://hooks.example/a", "--owner", "ada", "--owner", "ghost", stdout=out)
    assert "Note: no source has owner ghost yet; this channel covers their sources once one does." in out.getvalue()
    out = StringIO()
    call_command("add_channel", "webhook", "https://hooks.example/b", "--team", "cars", stdout=out)
    assert "Note:" not in out.getvalue()
    form = {"kind": "email", "target": "ops@example.com", "method": "GET", "min_severity": "info", "teams": "bikes"}
    page = admin_client.post("/alerts/channels/", form, follow=True).content.decode()
    assert "No source has team bikes yet: this channel covers their sources once one does." in page
    admin = {"name": "", "kind": "slack", "target": "https://hooks.example/c", "method": "GET", "owners": "bob"}
    page = admin_client.post("/admin/sources/channel/add/", admin, follow=True).content.decode()
    assert "No source has owner bob yet" in page

"""Nobody is told: the overview and /alerts/ say which failing sources no channel
covers; the API docs page has a viewport."""

from sources.models import Channel, Source, Tag
from tests.conftest import run_report


def _failing(api, slug, **last):
    for n in (5, 4, 3):
        api.post_run(run_report(slug, n, collected=9000, declared_total=9000))
    api.post_run(run_report(slug, 1, collected=1200, declared_total=9000, **last))


def _unwarned(client) -> str:
    page = client.get("/").content.decode()
    if 'id="unwarned"' not in page:
        return ""
    return page[page.index('id="unwarned"') : page.index("</p>", page.index('id="unwarned"'))]


def test_the_overview_and_alerts_warn_while_no_channel_covers_a_failing_source(api, staff_client):
    _failing(api, "shop")
    api.post_run(run_report("fine", 1))
    for path in ("/", "/alerts/"):
        page = staff_client.get(path).content.decode()
        warning = page[page.index('id="unwarned"') : page.index("</p>", page.index('id="unwarned"'))]
        assert "1 failing or overdue source no alert channel covers" in warning and "/sources/shop/" in warning
        assert "/sources/fine/" not in warning


def test_a_channel_by_tag_covers_it_and_a_heartbeat_does_not(api, staff_client):
    _failing(api, "shop")
    heartbeat = Channel.objects.create(kind=Channel.Kind.HEARTBEAT, target="https://hb.example.com/x", all_sources=True)
    assert 'id="unwarned"' in staff_client.get("/").content.decode()
    heartbeat.delete()
    tag = Tag.objects.create(name="cars")
    Source.objects.get(slug="shop").tags.add(tag)
    channel = Channel.objects.create(kind=Channel.Kind.WEBHOOK, target="https://hooks.example.com/x", all_sources=False)
    channel.tags.add(tag)
    assert 'id="unwarned"' not in staff_client.get("/").content.decode()
    assert 'id="unwarned"' not in staff_client.get("/alerts/").content.decode()


def test_a_pager_for_data_loss_only_tells_nobody_of_a_failure_that_lost_none_or_of_an_overdue(api, staff_client):
    _failing(api, "lossy", snapshot={"action": "replaced", "rows": 1200})
    _failing(api, "short")
    api.post_run(run_report("silent-crawler", 3))
    Source.objects.filter(slug="silent-crawler").update(health="overdue")
    Channel.objects.create(kind=Channel.Kind.WEBHOOK, target="https://pager.example.com/x", min_severity="data_loss")
    warning = _unwarned(staff_client)
    assert "2 failing or overdue sources no alert channel covers" in warning, warning
    assert "/sources/short/" in warning and "/sources/silent-crawler/" in warning
    assert "/sources/lossy/" not in warning
    # A channel that hears failures too: only the overdue source is left untold.
    Channel.objects.create(kind=Channel.Kind.EMAIL, target="ops@example.com", min_severity="failing")
    warning = _unwarned(staff_client)
    assert "1 failing or overdue source no alert channel covers" in warning and "/sources/silent-crawler/" in warning
    Channel.objects.create(
        kind=Channel.Kind.SLACK, target="https://hooks.slack.com/services/T/B/x", min_severity="overdue"
    )
    assert _unwarned(staff_client) == ""


def test_the_api_docs_page_has_a_viewport(staff_client):
    page = staff_client.get("/api/v1/docs").content.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page


def test_a_channel_by_team_covers_it_and_one_for_another_team_does_not(api, staff_client):
    _failing(api, "shop")
    Source.objects.filter(slug="shop").update(team="cars")
    Channel.objects.create(
        kind=Channel.Kind.WEBHOOK, target="https://hooks.example.com/s", teams="shoes", all_sources=False
    )
    assert 'id="unwarned"' in staff_client.get("/").content.decode()
    Channel.objects.create(
        kind=Channel.Kind.WEBHOOK, target="https://hooks.example.com/c", teams="cars", all_sources=False
    )
    assert 'id="unwarned"' not in staff_client.get("/").content.decode()

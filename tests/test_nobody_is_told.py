"""Nobody is told: the overview and /alerts/ say which failing sources no channel
covers; the API docs page has a viewport."""

from sources.models import Channel, Source, Tag
from tests.conftest import run_report


def _failing(api, slug):
    for n in (5, 4, 3):
        api.post_run(run_report(slug, n, collected=9000, declared_total=9000))
    api.post_run(run_report(slug, 1, collected=1200, declared_total=9000))


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

"""Getting around: channels linked, a favicon, a usable channel form."""

from sources.models import Source, Tag


def test_every_page_links_the_alert_channels_and_a_favicon(staff_client):
    page = staff_client.get("/").content.decode()
    assert 'href="/alerts/channels/"' in page
    assert 'href="/api/v1/docs"' in page  # the API document was reachable from no page
    assert 'rel="icon" href="/static/completeness/favicon.svg"' in page


def test_an_operator_who_is_not_staff_is_not_sent_to_a_bare_403(viewer_client):
    """The header linked the channels page to everyone, and a viewer's click got "403 Forbidden" alone."""
    page = viewer_client.get("/").content.decode()
    assert 'href="/alerts/channels/"' not in page and 'href="/admin/"' not in page
    refused = viewer_client.get("/alerts/channels/")
    assert refused.status_code == 403
    text = refused.content.decode()
    assert "Staff only" in text and "Ask a staff member" in text and 'href="/alerts/"' in text


def test_favicon_ico_is_no_404_even_logged_out(client, db):
    response = client.get("/favicon.ico", follow=True)
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body.startswith(b"<svg")


def test_the_channel_form_lists_sources_and_tags_as_checkboxes(staff_client):
    for n in range(60):
        Source.objects.create(slug=f"shop-{n:02}")
    Tag.objects.create(name="eu")
    page = staff_client.get("/alerts/channels/").content.decode()
    assert page.count('type="checkbox" name="sources"') == 60
    assert 'type="checkbox" name="tags" value="eu"' in page
    assert "<select multiple" not in page and 'name="sources" multiple' not in page

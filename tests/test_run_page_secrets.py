"""Credentials a crawler quotes in its report (a lost URL's userinfo or token, a proxy URL or key in
meta, a batch error naming its connection string) are shown to staff only: a logged-in operator who is
not staff reads the run page and the runs API without them, and still sees the host and path that help
diagnose."""

import gzip

import pytest

from completeness.alerts.redact import redact_finding, redact_named, redact_text, redact_url
from tests.conftest import run_report

LOST_URL = "https://user:s3cret@shop.example/list?page=3&token=abc123"
SESSION_URL = "https://shop.example/s/8f14e45fceea167a5a36dedd4bea2543/category/shoes"
BATCH_ERROR = "could not connect: postgres://writer:dbpass99@db.internal:5432/shop?sslkey=topsecretkey"
# A feed's batch named by its URI, login and all (Scrapy's FTP and S3 feed URIs carry one).
FEED_BATCH = "ftp://feeds:ftppass77@ftp.shop.example/exports/items.csv"
META = {
    "proxy": "http://bob:hunter2@10.0.0.1:8080",
    "api_key": "key=XYZ",
    "auth": "Bearer eyJhbGciOiJIUzI1NiJ9",
    "crawler": "kit 1.2",
}
SECRETS = [
    "s3cret",
    "abc123",
    "8f14e45fceea167a5a36dedd4bea2543",
    "hunter2",
    "XYZ",
    "eyJhbGciOiJIUzI1NiJ9",
    "dbpass99",
    "topsecretkey",
    "ftppass77",
]


@pytest.fixture
def run_id(api):
    body = run_report(
        "shop",
        1,
        collected=900,
        written=800,
        pages={"expected": 40, "fetched": 38, "lost": 2, "lost_urls": [LOST_URL, SESSION_URL]},
        failed_batches=[
            {"name": "prices-eu", "rows": 100, "error": BATCH_ERROR},
            {"name": FEED_BATCH, "rows": 50, "error": "timed out"},
        ],
        meta=META,
    )
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    return response.json()["run"]


def test_a_non_staff_operator_finds_no_secret_on_the_run_page(run_id, viewer_client):
    page = viewer_client.get(f"/runs/{run_id}/").content.decode()
    for secret in SECRETS:
        assert secret not in page, secret


def test_a_non_staff_operator_still_sees_the_host_and_path_of_a_lost_page(run_id, viewer_client):
    page = viewer_client.get(f"/runs/{run_id}/").content.decode()
    assert "https://shop.example/list?page=3&amp;token=…" in page
    assert "https://shop.example/s/…/category/shoes" in page
    assert "http://10.0.0.1:8080" in page  # the proxy's address, without its user and password
    assert "kit 1.2" in page and "prices-eu" in page and "could not connect" in page


def test_staff_see_what_the_crawler_sent(run_id, staff_client):
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    for secret in SECRETS:
        assert secret in page, secret


def test_the_runs_api_shows_a_non_staff_session_no_secret(run_id, api, viewer_client):
    for path in ("/sources/shop/runs", "/sources/shop", "/sources"):
        response = api.get(path, token="")
        assert response.status_code == 200, response.content
        for secret in SECRETS:
            assert secret not in response.content.decode(), (path, secret)
    assert "https://shop.example/list" in api.get("/sources/shop/runs", token="").content.decode()


def test_the_runs_api_shows_staff_sessions_and_tokens_the_lost_urls_whole(run_id, api, staff_client):
    assert "s3cret" in api.get("/sources/shop/runs", token="").content.decode()
    assert "s3cret" in api.get("/sources/shop/runs").content.decode()


def test_a_non_staff_operator_finds_no_secret_in_the_source_page_history(run_id, viewer_client):
    page = viewer_client.get("/sources/shop/").content.decode()
    for secret in SECRETS:
        assert secret not in page, secret


def test_pages_sent_compressed_hold_no_secret_even_for_staff(run_id, staff_client):
    """BREACH: a compressed answer's size must not tell an attacker who can add text
    to it anything secret. The overview and the source page are compressed and redact for everyone;
    the run page, which shows staff the report whole, is not compressed."""
    for path in ("/", "/sources/shop/", "/sources/shop/?q=s3cret"):
        response = staff_client.get(path, HTTP_ACCEPT_ENCODING="gzip")
        assert response["Content-Encoding"] == "gzip", path
        page = gzip.decompress(response.content).decode()
        for secret in SECRETS:
            assert secret not in page.replace("q=s3cret", ""), (path, secret)
    run_page = staff_client.get(f"/runs/{run_id}/", HTTP_ACCEPT_ENCODING="gzip")
    assert not run_page.has_header("Content-Encoding") and "s3cret" in run_page.content.decode()


def test_a_pause_reason_quoting_a_credential_is_shown_without_it_on_the_overview(api, staff_client):
    # The overview is compressed (BREACH) and names why each source is paused, to everyone.
    api.post_run(run_report("shop", 2))
    api.post_run(run_report("shop", 1, paused=True, pause_reason=f"migrating, see {LOST_URL}"))
    page = staff_client.get("/").content.decode()
    assert "paused: migrating, see https://shop.example/list?page=3&amp;token=…" in page
    assert "s3cret" not in page and "abc123" not in page


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (LOST_URL, "https://shop.example/list?page=3&token=…"),
        (SESSION_URL, "https://shop.example/s/…/category/shoes"),
        ("https://shop.example:8443/p/123e4567-e89b-12d3-a456-426614174000#frag", "https://shop.example:8443/p/…#…"),
        ("https://shop.example/token/abc123/list", "https://shop.example/token/…/list"),
        ("https://shop.example/list;jsessionid=ABC123/2", "https://shop.example/list;jsessionid=…/2"),
        ("https://shop.example/product-12345-blue-shirt", "https://shop.example/product-12345-blue-shirt"),
        ("socks5://bob:pw@proxy.example:1080", "socks5://…"),
        ("https://[::1", "…"),
        # A paging number is shown, so lost listing pages read apart; any other value stays hidden.
        ("https://shop.example/list?p=12&offset=200&sort=price", "https://shop.example/list?p=12&offset=200&sort=…"),
        ("https://shop.example/list?page=abc&code=123456&Page=4", "https://shop.example/list?page=…&code=…&Page=4"),
        ("https://shop.example/list?page=1234567890", "https://shop.example/list?page=…"),
        ("https://shop.example/list?page=\u0663", "https://shop.example/list?page=…"),
    ],
)
def test_a_url_keeps_its_host_and_path_and_loses_what_may_be_a_secret(url, shown):
    assert redact_url(url) == shown


def test_text_quoting_urls_and_credentials_keeps_its_words():
    text = f"2 lost: {LOST_URL}, {SESSION_URL}; see redis://:pw@cache:6379. key=XYZ, Bearer abcdefghij"
    assert redact_text(text) == (
        "2 lost: https://shop.example/list?page=3&token=…, https://shop.example/s/…/category/shoes; "
        "see redis://…. key=…, Bearer …"
    )
    assert redact_finding({"rule": "lost_pages", "message": LOST_URL})["message"] == redact_url(LOST_URL)


def test_a_meta_entry_named_like_a_credential_is_hidden_whole():
    assert redact_named("api_key", "XYZ") == "…"
    assert redact_named("X-Auth-Token", "plain") == "…"
    assert redact_named("author", "ann") == "ann"
    assert redact_named("proxy", META["proxy"]) == "http://10.0.0.1:8080"
    assert redact_named("pages", 40) == 40


PAUSE_REASON = "proxy migration, see https://ops:pausepw77@proxies.example/move?token=pausetok88"


@pytest.fixture
def paused_by_crawler(api):
    response = api.post_run(run_report("shop", 1, paused=True, pause_reason=PAUSE_REASON))
    assert response.status_code == 201, response.content


def test_a_crawler_pause_reason_is_shown_without_its_credentials_on_the_source_page(paused_by_crawler, staff_client):
    """The run page hides them from operators; the source page shows the same reason in its headline,
    its pause panel and its pause history, and is compressed, so it hides them from everyone (BREACH)."""
    response = staff_client.get("/sources/shop/", HTTP_ACCEPT_ENCODING="gzip")
    page = gzip.decompress(response.content).decode()
    assert "pausepw77" not in page and "pausetok88" not in page
    assert "https://proxies.example/move?token=…" in page  # the host and path still say where to look


def test_the_sources_api_shows_a_non_staff_session_a_pause_reason_without_its_credentials(
    paused_by_crawler, api, viewer_client
):
    for path in ("/sources/shop", "/sources?health=paused"):
        text = api.get(path, token="").content.decode()
        assert "proxies.example/move" in text, path
        assert "pausepw77" not in text and "pausetok88" not in text, path


def test_tokens_and_staff_read_a_pause_reason_whole(paused_by_crawler, api, staff_client):
    assert api.get("/sources/shop").json()["pause"]["reason"] == PAUSE_REASON
    assert api.get("/sources/shop", token="").json()["pause"]["reason"] == PAUSE_REASON

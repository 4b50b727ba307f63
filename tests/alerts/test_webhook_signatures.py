"""Standard Webhooks signatures (completeness/alerts/signing.py), checked as a receiver checks them.

A real HTTP server on 127.0.0.1 receives each delivery; the HMAC is computed here from the spec's
definition (standard-webhooks spec/standard-webhooks.md: "v1," + base64 HMAC-SHA256 of
"{webhook-id}.{webhook-timestamp}.{body}", a whsec_ secret being base64 after its prefix), never with
the function that signed it. The docs' receiver example is run on the same requests.
"""

import base64
import hashlib
import hmac
import os
import re
import time
from pathlib import Path

import pytest
from requests.structures import CaseInsensitiveDict

from sources.alerts import channels, delivery
from sources.models import Channel, Notification
from tests.alerts.conftest import deliver_all, post_day
from tests.alerts.sinks import Received, Reply

pytestmark = pytest.mark.django_db

GOOD = dict(declared_total=1000, collected=1000)
BAD = dict(declared_total=1000, collected=400)
STANDARD = ("webhook-id", "webhook-timestamp", "webhook-signature")
ALL_SIGNATURE_HEADERS = (*STANDARD, "x-completeness-signature")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"


def post(api, n: int, slug: str = "shop", **fields) -> None:
    post_day(api, slug, n, **fields)


def headers_of(request: Received) -> CaseInsensitiveDict:
    # HTTP header names are case-insensitive; a receiver's framework looks them up that way.
    return CaseInsensitiveDict(request.headers)


def verified_id(key: bytes, request: Received, *, sent_between: tuple[int, int]) -> str:
    """The webhook-id of a request whose signature is what the spec says it must be for `key`, and
    whose timestamp is whole seconds within the attempt; fails the test otherwise."""
    headers = headers_of(request)
    msg_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    assert re.fullmatch(r"[0-9]+", timestamp), timestamp
    assert sent_between[0] <= int(timestamp) <= sent_between[1]
    assert "." not in msg_id  # the spec: the id may hold no full stop, which delimits the signed parts
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + request.body
    expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    assert expected in headers["webhook-signature"].split(" ")
    return msg_id


def legacy(secret: str, request: Received) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    return headers_of(request)["X-Completeness-Signature"] == expected


def docs_verify():
    """The receiver's example of docs/alerts.md ("Verifying a webhook"), as a reader would paste it."""
    text = DOCS.read_text()
    section = text.split("### Verifying a webhook", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "docs/alerts.md: no python example under 'Verifying a webhook'"
    lines = [line for line in code.group(1).splitlines() if line.strip()]
    assert len(lines) <= 12, f"the docs promise a short example; it has {len(lines)} lines"
    namespace: dict = {}
    exec(compile(code.group(1), str(DOCS), "exec"), namespace)
    return namespace["verify"]


def now() -> int:
    return int(time.time())


def test_a_signed_delivery_verifies_as_the_spec_defines_it_and_an_unsigned_one_carries_no_signature(api, http_sink):
    channels.create_channel(kind="webhook", target=http_sink.url("/signed"), secret="s3cret")
    channels.create_channel(kind="webhook", target=http_sink.url("/plain"))
    post(api, 1, **GOOD)
    post(api, 2, **BAD)
    before = now()
    assert sorted(deliver_all()) == ["sent", "sent"]
    after = now()
    [signed] = http_sink.received("/signed")
    msg_id = verified_id(b"s3cret", signed, sent_between=(before, after))
    payload = signed.json()
    assert payload["kind"] == "failing" and msg_id == payload["id"]  # one id for body and headers
    # Kept for the receivers that check it: the same header, the same HMAC of the body, as before.
    assert legacy("s3cret", signed)
    verify = docs_verify()
    assert verify("s3cret", headers_of(signed), signed.body)
    # What the signature binds: another body, id or time does not verify, nor does another secret.
    assert not verify("s3cret", headers_of(signed), signed.body.replace(b"failing", b"resolved"))
    assert not verify("other", headers_of(signed), signed.body)
    # A header of any bytes is an answer, not a receiver's crash (hmac.compare_digest refuses non-ASCII str).
    assert not verify("s3cret", CaseInsensitiveDict({**headers_of(signed), "webhook-signature": "v1,é"}), signed.body)
    for name, value in (("webhook-id", "x" + msg_id[1:]), ("webhook-timestamp", str(int(before) - 1))):
        assert not verify("s3cret", CaseInsensitiveDict({**headers_of(signed), name: value}), signed.body)
    # A replay minutes later is refused by the example, signature valid or not.
    replayed = CaseInsensitiveDict(headers_of(signed))
    stale = str(before - 600)
    signed_again = f"{msg_id}.{stale}.".encode() + signed.body
    replayed["webhook-timestamp"] = stale
    replayed["webhook-signature"] = (
        "v1," + base64.b64encode(hmac.new(b"s3cret", signed_again, hashlib.sha256).digest()).decode()
    )
    assert not verify("s3cret", replayed, signed.body)

    # The healthy twin: a channel without a secret gets the same body and no signature of any kind.
    [plain] = http_sink.received("/plain")
    assert plain.body == signed.body
    assert not [name for name in ALL_SIGNATURE_HEADERS if name in headers_of(plain)]


def test_a_retry_keeps_the_id_and_is_signed_at_its_own_time_and_the_next_notification_has_a_new_id(
    api, http_sink, no_backoff
):
    channels.create_channel(kind="webhook", target=http_sink.url("/hook"), secret="s3cret")
    post(api, 1, **GOOD)
    http_sink.reply(Reply(500, b"hiccup"))
    post(api, 2, **BAD)
    first_at = now()
    assert deliver_all() == ["retrying"]
    first_done = now()
    # The retry lands in a later second than the first attempt, so its timestamp must move with it.
    time.sleep(1.02 - time.time() % 1)
    retry_at = now()
    assert deliver_all() == ["sent"]
    first, retry = http_sink.received("/hook")
    assert retry.body == first.body
    first_id = verified_id(b"s3cret", first, sent_between=(first_at, first_done))
    retry_id = verified_id(b"s3cret", retry, sent_between=(retry_at, now()))
    assert int(headers_of(retry)["webhook-timestamp"]) > int(headers_of(first)["webhook-timestamp"])
    assert retry_id == first_id  # a receiver that processed the first skips the retry
    assert headers_of(retry)["webhook-signature"] != headers_of(first)["webhook-signature"]

    post(api, 3, **GOOD)  # the recovery: another notification
    before = now()
    assert deliver_all() == ["sent"]
    recovery = http_sink.received("/hook")[-1]
    assert recovery.json()["kind"] == "resolved"
    assert verified_id(b"s3cret", recovery, sent_between=(before, now())) != first_id


def test_a_whsec_secret_signs_with_the_bytes_it_encodes_and_the_old_header_with_the_whole_string(db, http_sink):
    raw = os.urandom(24)
    secret = "whsec_" + base64.b64encode(raw).decode()
    channel = channels.create_channel(kind="webhook", target=http_sink.url("/hook"), secret=secret)
    notification = channels.send_test_message(channel)
    before = now()
    assert delivery.deliver(notification.pk) == "sent"
    [request] = http_sink.received()
    assert verified_id(raw, request, sent_between=(before, now())) == request.json()["id"]
    assert docs_verify()(secret, headers_of(request), request.body)
    assert legacy(secret, request)  # unchanged: its receivers computed it over the whole string


def test_every_message_a_webhook_hears_is_signed_a_storm_one_event_at_a_time(api, http_sink, settings):
    """Chat channels group a storm into one message; a webhook never is grouped (and gets no digest),
    so each source's event goes alone, each with its own id. A breakage notice is signed too."""
    settings.ALERTS_GROUP_SECONDS = 30
    channels.create_channel(kind="webhook", target=http_sink.url("/hook"), secret="s3cret")
    channels.create_channel(kind="slack", target=http_sink.url("/slack"))
    slugs = [f"shop-{n}" for n in range(4)]
    for slug in slugs:
        post(api, 1, slug, **GOOD)
    before = now()
    for slug in slugs:
        post(api, 2, slug, **BAD)
    deliver_all()
    hook = http_sink.received("/hook")
    assert sorted(r.json()["source"]["slug"] for r in hook) == slugs
    ids = [verified_id(b"s3cret", r, sent_between=(before, now())) for r in hook]
    assert ids == [r.json()["id"] for r in hook] and len(set(ids)) == len(slugs)

    http_sink.reply(Reply(404, b"no such hook"))
    slack = Channel.objects.get(kind="slack")
    slack.next_send_at = None
    slack.save(update_fields=["next_send_at"])
    channels.send_test_message(slack)
    deliver_all()  # the Slack hook is gone: the channel is broken, and the webhook is told
    deliver_all()
    [notice] = [r for r in http_sink.received("/hook") if r.json()["kind"] == "channel_broken"]
    assert verified_id(b"s3cret", notice, sent_between=(before, now())) == notice.json()["id"]


def test_an_event_written_before_ids_existed_gets_a_stable_id_of_its_own(db, http_sink, no_backoff):
    """Events written before November 2026 carry no "id"; one may still be retried or sent again."""
    channel = channels.create_channel(kind="webhook", target=http_sink.url("/hook"), secret="s3cret")
    old = [
        Notification.objects.create(channel=channel, kind="test", event={"kind": "test", "at": at, "cause": "old"})
        for at in ("2026-09-15T03:00:00+00:00", "2026-09-15T03:05:00+00:00")
    ]
    http_sink.reply(Reply(500))
    before = now()
    assert delivery.deliver(old[0].pk) == "retrying"
    assert delivery.deliver(old[0].pk) == "sent"
    assert delivery.deliver(old[1].pk) == "sent"
    first, retry, other = (verified_id(b"s3cret", r, sent_between=(before, now())) for r in http_sink.received())
    assert first == retry and other != first


@pytest.mark.parametrize("secret", ["whsec_not base64!", "whsec_", "whsec_c2VjcmV0"[:-1]])
def test_a_whsec_secret_that_is_not_base64_is_refused_naming_the_secret(staff_client, secret):
    form = {"kind": "webhook", "target": "https://example.com/hook", "secret": secret, "method": "GET"}
    response = staff_client.post("/alerts/channels/", form)
    assert response.status_code == 200
    assert "base64 after the prefix" in response.content.decode()
    assert not Channel.objects.exists()


@pytest.mark.parametrize("secret", ["s3cret", "whsec", "WHSEC_anything", "whsec_c2VjcmV0"])
def test_other_secrets_and_whole_whsec_ones_are_accepted(staff_client, secret):
    form = {"kind": "webhook", "target": "https://example.com/hook", "secret": secret, "method": "GET"}
    assert staff_client.post("/alerts/channels/", form).status_code == 302
    assert Channel.objects.get().secret == secret


def test_a_broken_whsec_secret_stored_before_the_check_still_signs_with_its_own_bytes(db, http_sink, admin_client):
    # Saved before whsec_ secrets were checked: its deliveries go on, keyed as any other secret is.
    broken = "whsec_not base64"
    channel = Channel.objects.create(kind="webhook", target=http_sink.url("/hook"), secret=broken)
    notification = channels.send_test_message(channel)
    before = now()
    assert delivery.deliver(notification.pk) == "sent"
    [request] = http_sink.received()
    verified_id(broken.encode(), request, sent_between=(before, now()))
    assert legacy(broken, request)
    # Edited in the admin (secret left empty: kept), it asks for a secret that can be read.
    form = {"name": "ops", "kind": "webhook", "target": "", "secret": "", "method": "GET", "all_sources": "on"}
    response = admin_client.post(f"/admin/sources/channel/{channel.pk}/change/", form)
    assert response.status_code == 200 and "base64 after the prefix" in response.content.decode()
    response = admin_client.post(f"/admin/sources/channel/{channel.pk}/change/", {**form, "secret": "s3cret"})
    assert response.status_code == 302
    channel.refresh_from_db()
    assert channel.secret == "s3cret" and channel.name == "ops"

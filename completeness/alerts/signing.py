"""Webhook signatures as Standard Webhooks 1.0.0 makes them (https://www.standardwebhooks.com/), so a
receiver can refuse a replayed delivery and tell a retry from a new notification by its headers.

    webhook-id:        the event's id: the same on every retry of one notification, new for the next
    webhook-timestamp: when this attempt was made, whole seconds since 1970 (a receiver refuses old ones)
    webhook-signature: "v1," + base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}"

The key (docs/decisions.md, "Webhook signatures"): a secret written as the spec serialises one,
"whsec_" and base64, signs with the bytes it encodes, as every Standard Webhooks library reads it;
any other secret signs with its own UTF-8 bytes, as the X-Completeness-Signature header always has,
so a channel made before these headers keeps its secret and its receiver needs nothing new.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from typing import Any

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SECRET_PREFIX = "whsec_"
# The signed content is "{id}.{timestamp}.{body}": an id with a "." in it could make two different
# (id, body) pairs sign the same bytes. Events' ids are UUIDs; anything else falls back (message_id).
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def _decoded(secret: str) -> bytes | None:
    """The bytes a "whsec_" secret encodes, or None when the rest is not base64 or encodes nothing."""
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        return None
    return key or None


def secret_problem(secret: str) -> str | None:
    """What is wrong with a secret that says it is a Standard Webhooks one ("whsec_..."), for the
    channel form; None for any other secret, which is used as it is written."""
    if secret.startswith(SECRET_PREFIX) and _decoded(secret) is None:
        return (
            f"a secret starting with {SECRET_PREFIX} is read as Standard Webhooks does:"
            f" base64 after the prefix, and this is not (or is empty); paste it whole, padding included"
        )
    return None


def key(secret: str) -> bytes:
    """The HMAC key of the standard signature. A "whsec_" secret whose rest is not base64 is refused
    when a channel is saved; one stored before that check signs with its own bytes, as any other."""
    if secret.startswith(SECRET_PREFIX):
        decoded = _decoded(secret)
        if decoded is not None:
            return decoded
    return secret.encode()


def message_id(event: dict[str, Any], body: bytes) -> str:
    """The event's id, which the body carries too and every retry repeats. Events written before ids
    existed (November 2026) have none: theirs is a digest of the body, which is frozen in the outbox
    row, so it too is the same on every retry and differs between notifications."""
    found = event.get("id")
    if isinstance(found, str) and _SAFE_ID.fullmatch(found):
        return found
    return "sha256-" + hashlib.sha256(body).hexdigest()[:32]


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key(secret), signed, hashlib.sha256).digest()).decode()


def headers(secret: str, event: dict[str, Any], body: bytes, timestamp: int) -> dict[str, str]:
    """The three headers of one attempt to deliver `body` (the event as webhook_body wrote it)."""
    msg_id = message_id(event, body)
    return {
        ID_HEADER: msg_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, msg_id, timestamp, body),
    }

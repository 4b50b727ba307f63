"""API tokens: shown once, stored as a hash, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from sources import rows
from sources.models import ApiToken, Source

PREFIX = "cmpl"
TOKEN_SHAPE = re.compile(rf"{PREFIX}_(?P<key_id>[0-9a-f]{{12}})_[A-Za-z0-9_-]{{20,100}}")
# Writing last_used_at on every report would add a write per request for a value read by humans.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# What a request needs of its token; the rest stays deferred.
TOKEN_FIELDS = ("id", "name", "key_hash", "all_sources", "last_used_at")


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def create_token(name: str, source_slugs: list[str] | None = None) -> tuple[ApiToken, str]:
    """Create a token for the named sources (registering any not yet known), or for all sources."""
    key_id = secrets.token_hex(6)
    raw = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(name=name, key_id=key_id, key_hash=_digest(raw), all_sources=not source_slugs)
    if source_slugs:
        sources = [Source.objects.get_or_create(slug=slug)[0] for slug in source_slugs]
        token.sources.set(sources)
    return token, raw


def authenticate(raw: str) -> ApiToken | None:
    shape = TOKEN_SHAPE.fullmatch(raw)
    if shape is None:
        return None
    # Runs for every request: read through sources.rows, whose statements are built once.
    found = rows.fetch_one(ApiToken, "WHERE key_id = %s AND revoked_at IS NULL", [shape["key_id"]], fields=TOKEN_FIELDS)
    token = found[0] if found else None
    if token is None or not hmac.compare_digest(token.key_hash, _digest(raw)):
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def may_access(token: ApiToken, source: Source) -> bool:
    return token.all_sources or token.sources.filter(pk=source.pk).exists()

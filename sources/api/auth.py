"""Who is posting: the bearer token of an API request, checked on every request."""

from __future__ import annotations

import hmac

from django.utils import timezone

from sources.ingest import rows
from sources.models import ApiToken
from sources.services.tokens import LAST_USED_RESOLUTION, TOKEN_SHAPE, digest

# What a request needs of its token; the rest stays deferred.
TOKEN_FIELDS = ("id", "name", "key_hash", "all_sources", "may_configure", "last_used_at")


def authenticate(raw: str) -> ApiToken | None:
    shape = TOKEN_SHAPE.fullmatch(raw)
    if shape is None:
        return None
    # Every report runs this first: read through the ingest path's statements built once (rows).
    found = rows.fetch_one(ApiToken, "WHERE key_id = %s AND revoked_at IS NULL", [shape["key_id"]], fields=TOKEN_FIELDS)
    token = found[0] if found else None
    if token is None or not hmac.compare_digest(token.key_hash, digest(raw)):
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token

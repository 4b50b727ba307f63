"""API tokens: shown once, stored as a hash, compared in constant time."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta

from django.db import transaction

from sources.models import ApiToken, Source

PREFIX = "cmpl"
TOKEN_SHAPE = re.compile(rf"{PREFIX}_(?P<key_id>[0-9a-f]{{12}})_[A-Za-z0-9_-]{{20,100}}")
# Writing last_used_at on every report would add a write per request for a value read by humans.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_key(token: ApiToken) -> str:
    """Give an unsaved token its key: the raw token is returned, to be shown once; the token keeps only
    its public key id and a hash of the whole."""
    token.key_id = secrets.token_hex(6)
    raw = f"{PREFIX}_{token.key_id}_{secrets.token_urlsafe(32)}"
    token.key_hash = digest(raw)
    return raw


@transaction.atomic
def create_token(
    name: str, source_slugs: list[str] | None = None, *, may_configure: bool = False
) -> tuple[ApiToken, str]:
    """Create a token for the named sources (registering any not yet known), or for all sources; it
    changes settings and plans windows only when `may_configure` says so."""
    token = ApiToken(name=name, all_sources=not source_slugs, may_configure=may_configure)
    raw = new_key(token)
    token.save()
    if source_slugs:
        sources = [Source.objects.get_or_create(slug=slug)[0] for slug in source_slugs]
        token.sources.set(sources)
    return token, raw


def may_access(token: ApiToken, source: Source) -> bool:
    return token.all_sources or token.sources.filter(pk=source.pk).exists()

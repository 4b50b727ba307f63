"""Stub pages: a 200 that is no real page (a failing site's "busy" page).

The kit cannot know what a real page of a site looks like, so detection is
off until the project says, per kind of request (listing or record):

- a marker every real page has: a CSS selector, an XPath (starting with
  "/" or "("), or bytes to find in the body;
- and/or a minimum body size in bytes.

Markers beat sizes: a healthy site's item pages of ~560 bytes fail a
1024-byte minimum, but every one of them has its price element. Set them in
settings (COMPLETENESS_STUB_MARKERS, COMPLETENESS_MIN_BODY_BYTES: a number
for both kinds or a {kind: bytes} dict) or as the spider's
`completeness_markers` attribute, which wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scrapy.http import TextResponse

from .kinds import LISTING, RECORD

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

JUDGED_KINDS = (LISTING, RECORD)


def _per_kind(value: Any, name: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        unknown = set(value) - set(JUDGED_KINDS)
        if unknown:
            raise ValueError(f"{name}: unknown request kinds {sorted(unknown)}; use {', '.join(JUDGED_KINDS)}")
        return dict(value)
    return dict.fromkeys(JUDGED_KINDS, value)


class StubRules:
    def __init__(self, markers: Mapping[str, Any] | None = None, min_bytes: Any = 0) -> None:
        self.markers = _per_kind(markers, "stub markers")
        self.min_bytes = {kind: int(value) for kind, value in _per_kind(min_bytes, "minimum body bytes").items()}

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> StubRules:
        min_bytes = settings.get("COMPLETENESS_MIN_BODY_BYTES", 0)
        if isinstance(min_bytes, str) and min_bytes.strip().startswith("{"):
            min_bytes = settings.getdict("COMPLETENESS_MIN_BODY_BYTES")
        return cls(settings.getdict("COMPLETENESS_STUB_MARKERS") or None, min_bytes or 0)

    def with_spider(self, spider: Any) -> StubRules:
        own = getattr(spider, "completeness_markers", None)
        if not own:
            return self
        rules = StubRules(None, 0)
        rules.markers = {**self.markers, **_per_kind(own, "completeness_markers")}
        rules.min_bytes = dict(self.min_bytes)
        return rules

    @property
    def enabled(self) -> bool:
        return bool(self.markers) or any(self.min_bytes.values())

    def why_stub(self, response: Response, kind: str | None) -> str | None:
        """Why this 200 of a listing or record is a stub, or None for a real page.

        kind None: its callback has not shown yet what it yields. Judged by one kind's rules, a
        healthy page of the other kind would be a stub, never reach its callback and so never
        show its kind (every page of an untagged pager failed the record's marker)."""
        if kind is None:
            reasons = [self.why_stub(response, judged) for judged in JUDGED_KINDS]
            return None if None in reasons else "; ".join(r for r in reasons if r)
        if kind not in JUDGED_KINDS:
            return None
        minimum = self.min_bytes.get(kind, 0)
        if minimum and len(response.body) < minimum:
            return f"body under {minimum} bytes"
        marker = self.markers.get(kind)
        if marker and not _has_marker(response, marker):
            return f"no {marker!r} in the page"
        return None


def _has_marker(response: Response, marker: str | bytes) -> bool:
    if isinstance(marker, bytes):
        return marker in response.body
    if not isinstance(response, TextResponse):
        return False
    if marker.startswith(("/", "(")):
        return bool(response.xpath(marker))
    return bool(response.css(marker))

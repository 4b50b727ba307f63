"""What a request fetches: a listing page, a record, or something else.

Only a record can be removed at the source (404/410) or lost; only a listing
page can be a lost page. robots.txt (fetched by RobotsTxtMiddleware under
`ROBOTSTXT_OBEY`, the `startproject` default), sitemaps and assets are
neither: a missing robots.txt is no delisted car.

A spider says what a request is with meta["completeness_kind"] = "listing",
"record" or "other" (meta["completeness_page"] = True means "listing"). An
untagged request is a record unless it is recognisably something else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlparse

from scrapy.http.request import NO_CALLBACK

if TYPE_CHECKING:
    from scrapy.http import Request

LISTING, RECORD, OTHER = "listing", "record", "other"
KINDS = (LISTING, RECORD, OTHER)
KIND_KEY = "completeness_kind"
PAGE_KEY = "completeness_page"

_ASSET_SUFFIXES = (
    ".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico",
    ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm", ".mp3",
)
_SITEMAP_SUFFIXES = (".xml", ".xml.gz", ".txt")


def request_kind(request: Request) -> str:
    explicit = request.meta.get(KIND_KEY)
    if explicit in KINDS:
        return explicit
    if request.meta.get(PAGE_KEY):
        return LISTING
    # RobotsTxtMiddleware and the media pipelines fetch with NO_CALLBACK: never records.
    if request.callback is NO_CALLBACK:
        return OTHER
    if getattr(request.callback, "__name__", "") == "_parse_sitemap":  # SitemapSpider
        return OTHER
    path = urlparse(request.url).path.lower()
    if path.endswith("/robots.txt") or path.endswith(_ASSET_SUFFIXES):
        return OTHER
    if "sitemap" in path.rsplit("/", 1)[-1] and path.endswith(_SITEMAP_SUFFIXES):
        return OTHER
    return RECORD

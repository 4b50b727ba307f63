"""What a request fetches: a listing page, a record, or something else.

Only a record can be removed at the source (404/410) or lost; only a listing
page can be a lost page. robots.txt (fetched by RobotsTxtMiddleware under
`ROBOTSTXT_OBEY`, the `startproject` default), sitemaps and assets are
neither: a missing robots.txt is no delisted car.

A spider may say what a request is with meta["completeness_kind"] =
"listing", "record" or "other" (meta["completeness_page"] = True means
"listing"); a tag always wins. Untagged requests are learned from the crawl
itself (see `learning`): by what their callback yields. `request_kind` is
the answer without that knowledge: the tag, else "other" for what is
recognisably no page, else "record".
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
    ".css",
    ".js",
    ".mjs",
    ".map",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".webp",
    ".avif",
    ".svg",
    ".ico",
    ".woff",
    ".woff2",
    ".ttf",
    ".otf",
    ".eot",
    ".mp4",
    ".webm",
    ".mp3",
)
_SITEMAP_SUFFIXES = (".xml", ".xml.gz", ".txt")


def request_kind(request: Request) -> str:
    return fixed_kind(request) or RECORD


def fixed_kind(request: Request) -> str | None:
    """The kind a request has whatever its callback yields: its tag, or
    "other" for robots.txt, media downloads, sitemaps and assets; else None."""
    meta = request.meta
    explicit = meta.get(KIND_KEY)
    if explicit in KINDS:
        return explicit
    if meta.get(PAGE_KEY):
        return LISTING
    # RobotsTxtMiddleware and the media pipelines fetch with NO_CALLBACK: never records.
    callback = request.callback
    if callback is NO_CALLBACK:
        return OTHER
    if getattr(callback, "__name__", "") == "_parse_sitemap":  # SitemapSpider
        return OTHER
    if is_robots_txt(request):
        return OTHER
    path = urlparse(request.url).path.lower()
    if path.endswith(_ASSET_SUFFIXES):
        return OTHER
    if "sitemap" in path.rsplit("/", 1)[-1] and path.endswith(_SITEMAP_SUFFIXES):
        return OTHER
    return None


def is_robots_txt(request: Request) -> bool:
    """A request for a site's robots.txt (RobotsTxtMiddleware's, or a
    SitemapSpider's), also once redirected elsewhere."""
    urls = (request.url, *request.meta.get("redirect_urls", ())[:1])
    return any(urlparse(url).path.lower().endswith("/robots.txt") for url in urls)


def callback_key(request: Request) -> str:
    """What the kind of an untagged request is learned by: its callback's
    name, or its CrawlSpider rule (every rule's requests share one callback)."""
    callback = request.callback
    name = "parse" if callback is None else getattr(callback, "__name__", None) or type(callback).__name__
    if name == "_callback" and "rule" in request.meta:
        return f"rule:{request.meta['rule']}"
    return name

"""A flaky shop on 127.0.0.1 for the Scrapy kit's end-to-end tests; its
markup is its own (not the catalogue's nor the example's), so the spider
under test cannot lean on either.

No robots.txt (404, what RobotsTxtMiddleware fetches first under
`ROBOTSTXT_OBEY`), paginated listings whose first page states the total,
product pages, delisted products (404), products that always fail (503),
listing pages that always fail (500), an outage from the n-th served
request on (503 for everything), and a stretch of requests answered 200 with
a "busy" page larger than a real product page; counted in requests, not seconds, so a test
does not depend on the machine's speed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlparse

from local_site import LocalSite

FILLER = "<footer>" + "Free delivery on orders over 50. " * 12 + "</footer>"  # product pages: ~560 bytes
# Larger than a real product page: only a marker tells it from one.
BUSY = (
    "<html><body><h1>We are very busy right now</h1><p>Please come back later.</p>" + FILLER * 3 + "</body></html>"
).encode()


@dataclass
class ShopConfig:
    products: int = 40
    per_page: int = 8
    delisted: frozenset[int] = frozenset()
    broken_products: frozenset[int] = frozenset()
    broken_pages: frozenset[int] = frozenset()
    gone_pages: frozenset[int] = frozenset()  # linked from page 1, but 404
    outage_from: int | None = None  # number of the first served request answered 503
    busy_from: int | None = None  # ... answered 200 with the BUSY page, for busy_length requests
    busy_length: int = 0
    throttled_once: frozenset[int] = frozenset()  # products answered 429 + Retry-After the first time
    retry_after: str = "1"
    stall_seconds: float = 0.0  # every answer from now on waits this long (a crawl caught mid-download)
    served: int = 0
    log: list[tuple[int, str, int]] = field(default_factory=list)
    times: list[tuple[float, str, int]] = field(default_factory=list)
    _throttled: set[int] = field(default_factory=set)

    @property
    def pages(self) -> int:
        return -(-self.products // self.per_page)

    def brand(self, product: int) -> str:
        return "" if product % 4 == 0 else f"Brand {product % 3}"  # every fourth product has none


class ShopSite(LocalSite):
    def __init__(self, config: ShopConfig) -> None:
        super().__init__()
        self.config = config

    def headers(self, status: int, body: bytes) -> tuple[dict[str, str], bytes]:
        return ({"Retry-After": self.config.retry_after} if status == 429 else {}), body

    def answer(self, path: str) -> tuple[int, bytes]:
        with self._lock:
            self.config.served += 1
            status, body = self._route(path, self.config.served)
            self.config.log.append((self.config.served, path, status))
            self.config.times.append((time.monotonic(), path, status))
        if self.config.stall_seconds:
            time.sleep(self.config.stall_seconds)
        return status, body

    def _route(self, path: str, number: int) -> tuple[int, bytes]:
        config = self.config
        parsed = urlparse(path)
        if parsed.path == "/robots.txt":
            return 404, b"Not Found"
        if config.outage_from is not None and number >= config.outage_from:
            return 503, b"<h1>Maintenance</h1>"
        if config.busy_from is not None and config.busy_from <= number < config.busy_from + config.busy_length:
            return 200, BUSY
        if parsed.path == "/catalogue":
            page = int(parse_qs(parsed.query).get("page", ["1"])[0])
            if page in config.broken_pages:
                return 500, b"<h1>Oops</h1>"
            if page in config.gone_pages:
                return 404, b"<h1>No such page</h1>"
            if not 1 <= page <= config.pages:
                return 404, b"<h1>No such page</h1>"
            return 200, self._listing(page).encode()
        if parsed.path.startswith("/p/"):
            product = int(parsed.path.rsplit("/", 1)[1])
            if product in config.broken_products:
                return 503, b"<h1>Try again later</h1>"
            if product in config.throttled_once and product not in config._throttled:
                config._throttled.add(product)
                return 429, b"<h1>Slow down</h1>"
            if product in config.delisted or not 1 <= product <= config.products:
                return 404, b"<h1>This product is no longer available</h1>"
            return 200, (
                f'<article data-sku="{product}"><h2 itemprop="name">Product {product}</h2>'
                f'<span itemprop="price">{10 * product}.00</span>'
                f'<span itemprop="brand">{config.brand(product)}</span>{FILLER}</article>'
            ).encode()
        return 404, b"<h1>Not found</h1>"

    def _listing(self, page: int) -> str:
        config = self.config
        first = (page - 1) * config.per_page + 1
        products = range(first, min(config.products, first + config.per_page - 1) + 1)
        parts = ["<main>"]
        if page == 1:
            parts.append(f'<div class="results" data-total="{config.products}">{config.products} products</div>')
            parts.append(
                "<nav>"
                + "".join(f'<a rel="page" href="/catalogue?page={n}">{n}</a>' for n in range(2, config.pages + 1))
                + "</nav>"
            )
        parts.append(
            "<ul>" + "".join(f'<li class="product"><a href="/p/{n}">Product {n}</a></li>' for n in products) + "</ul>"
        )
        parts.append(FILLER + "</main>")
        return "".join(parts)

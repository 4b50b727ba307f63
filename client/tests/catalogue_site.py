"""A flaky catalogue site on 127.0.0.1 for the Scrapy end-to-end test.

Pagination (page 1 shows the declared total and links to every page), item
pages, items removed at the source (404), listing pages that always fail
(lost pages), and an outage that answers 200 with a stub page for a range of
served requests. The outage is counted in requests, not seconds, so the test
is deterministic whatever the machine's speed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlparse

from local_site import LocalSite

STUB = b"<html><body>Service busy</body></html>"
STUB_SERVED = -200  # how the request log marks a 200 that carried the stub
PADDING = "<!-- " + "catalogue " * 60 + "-->"  # real pages are well above the stub threshold


@dataclass
class CatalogueConfig:
    items: int = 150
    per_page: int = 10
    lost_pages: frozenset[int] = frozenset()  # always 500
    stub_pages: frozenset[int] = frozenset()  # always 200 with the stub body
    removed_items: frozenset[int] = frozenset()
    # Listing page -> the statuses it answers on its first serves, in order (then it answers as usual).
    page_statuses: dict[int, list[int]] = field(default_factory=dict)
    outage_start: int | None = None  # 1-based number of the first served request that gets a stub
    outage_length: int | None = None  # None: the outage never ends
    served: int = 0
    log: list[tuple[int, str, int]] = field(default_factory=list)

    @property
    def pages(self) -> int:
        return -(-self.items // self.per_page)

    def in_outage(self, number: int) -> bool:
        if self.outage_start is None or number < self.outage_start:
            return False
        return self.outage_length is None or number < self.outage_start + self.outage_length


class CatalogueSite(LocalSite):
    def __init__(self, config: CatalogueConfig) -> None:
        super().__init__()
        self.config = config

    def headers(self, status: int, body: bytes) -> tuple[dict[str, str], bytes]:
        # A redirect's body is its target.
        return ({"Location": body.decode()}, b"") if status == 301 else ({}, body)

    def answer(self, path: str) -> tuple[int, bytes]:
        with self._lock:
            self.config.served += 1
            number = self.config.served
            status, body = self._route(path, number)
            self.config.log.append((number, path, STUB_SERVED if body == STUB else status))
            return status, body

    def _route(self, path: str, number: int) -> tuple[int, bytes]:
        config = self.config
        parsed = urlparse(path)
        if config.in_outage(number):
            return 200, STUB
        if parsed.path == "/list":
            page = int(parse_qs(parsed.query).get("page", ["1"])[0])
            if page in config.lost_pages:
                return 500, b"<html><body>Internal error</body></html>"
            if page in config.stub_pages:
                return 200, STUB
            scripted = config.page_statuses.get(page)
            if scripted and (status := scripted.pop(0)) != 200:
                return status, b"<html><body>Internal error</body></html>"
            if not 1 <= page <= config.pages:
                return 404, b"no such page"
            first = (page - 1) * config.per_page + 1
            ids = range(first, min(config.items, first + config.per_page - 1) + 1)
            parts = ["<html><body>"]
            if page == 1:
                parts.append(f'<p>Showing all <span id="total">{config.items}</span> cars</p>')
                parts.extend(f'<a class="page" href="/list?page={n}">{n}</a>' for n in range(1, config.pages + 1))
            # Every fifth item is linked through a redirect, as tracking links are.
            parts.extend(f'<a class="item" href="{"/go/" if i % 5 == 0 else "/item/"}{i}">Car {i}</a>' for i in ids)
            parts.append(PADDING + "</body></html>")
            return 200, "\n".join(parts).encode()
        if parsed.path.startswith("/go/"):
            return 301, parsed.path.replace("/go/", "/item/", 1).encode()
        if parsed.path.startswith("/item/"):
            item = int(parsed.path.rsplit("/", 1)[1])
            if item in config.removed_items or not 1 <= item <= config.items:
                return 404, b"<html><body>Sold</body></html>"
            return 200, (
                f'<html><body><h1 class="title">Car {item}</h1>'
                f'<span class="price">{1000 + item}</span>{PADDING}</body></html>'
            ).encode()
        return 404, b"not found"

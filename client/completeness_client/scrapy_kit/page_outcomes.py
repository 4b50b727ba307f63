"""PageOutcomeMiddleware: final outcomes, after retries.

At priority 540 it sits between the engine and RetryMiddleware (550), so a
response reaches it only once retries are done with it. It counts listing
pages as fetched or lost, 404/410 of records as removed and other failures of
records as lost; robots.txt, sitemaps and assets count as neither (see
`kinds`). It also remembers which listing pages were scheduled: those never
fetched when the crawl ends (a breaker stop, an early close) are lost pages
too. A stub never reaches the spider, where an empty listing would read as
the end of it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured

from ..classes import NOT_FOUND_STATUSES
from .kinds import LISTING, RECORD, request_kind
from .state import CrawlState

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

SHORT_BODY_KEY = "_completeness_short_body"


class PageOutcomeMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.state = CrawlState.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageOutcomeMiddleware:
        if not crawler.settings.getbool("COMPLETENESS_ENABLED", True):
            raise NotConfigured
        middleware = cls(crawler)
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        return middleware

    def request_scheduled(self, request: Request, spider: Any = None) -> None:
        if request_kind(request) == LISTING:
            self.state.pages_scheduled.add(request.url)

    def process_response(self, request: Request, response: Response) -> Response:
        report = self.state.report
        kind = request_kind(request)
        short = request.meta.pop(SHORT_BODY_KEY, None)  # why the page is a stub
        if kind == LISTING:
            self._settled(request)
            if 200 <= response.status < 300 and not short:
                report.page_fetched()
            else:
                self._lost(request, f"HTTP {response.status}" + (f" stub: {short}" if short else ""))
        elif kind == RECORD:
            if response.status in NOT_FOUND_STATUSES:
                report.removed += 1
            elif short or response.status >= 400:
                report.record_lost()
        if short:
            raise IgnoreRequest(f"stub page ({short}): {request.url}")
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, IgnoreRequest):
            # Not an outcome: a listing page refused here (robots.txt, the
            # breaker's stop) stays scheduled-but-unfetched, a lost page.
            return None
        kind = request_kind(request)
        if kind == LISTING:
            self._settled(request)
            self._lost(request, type(exception).__name__)
        elif kind == RECORD:
            self.state.report.record_lost()
        return None

    def _settled(self, request: Request) -> None:
        # A redirected page arrives under its new URL; the URLs it came from are settled too.
        self.state.pages_settled.add(request.url)
        self.state.pages_settled.update(request.meta.get("redirect_urls", ()))

    def _lost(self, request: Request, why: str) -> None:
        logger.warning("listing page lost after retries (%s): %s", why, request.url)
        self.state.report.page_lost(request.url)

"""PageOutcomeMiddleware: final outcomes, after retries.

At priority 540 it sits between the engine and RetryMiddleware (550), so a
response reaches it only once retries are done with it. It counts listing
pages as fetched or lost, 404/410 of records as removed and other failures of
records as lost; robots.txt, sitemaps and assets count as neither (see
`kinds`). Which is which is learned from the callbacks (see `learning`), so
the outcomes are kept by callback and judged when the run's numbers are
asked for. Listing pages scheduled and never fetched when the crawl ends (a
breaker stop, an early close) are lost pages too. A stub never reaches the spider, where an empty listing would read as
the end of it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest, NotConfigured

from ..breaker import BreakerState
from ..classes import NOT_FOUND_STATUSES
from .learning import FAILED, GONE, ODD, OK, READ_GONE
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
        self._offsite: list[OffsiteMiddleware] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageOutcomeMiddleware:
        if not crawler.settings.getbool("COMPLETENESS_ENABLED", True):
            raise NotConfigured
        middleware = cls(crawler)
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(middleware.request_dropped, signal=signals.request_dropped)
        return middleware

    def request_scheduled(self, request: Request, spider: Any = None) -> None:
        if self._refused_offsite(request):
            return
        self.state.kinds.scheduled(request)

    def _refused_offsite(self, request: Request) -> bool:
        """Whether Scrapy's offsite filter refuses the request from this same signal (it raises
        IgnoreRequest in its own request_scheduled handler, and the request is never scheduled). A
        pager's link to another host of the site, outside allowed_domains, was a lost page on every
        run. Asked of the crawl's own filter, so a project's subclass with its own policy is heard."""
        if request.dont_filter or request.meta.get("allow_offsite"):
            return False
        if self._offsite is None:
            engine = getattr(self.crawler, "engine", None)
            downloader = getattr(engine, "downloader", None)
            middlewares = getattr(getattr(downloader, "middleware", None), "middlewares", ())
            self._offsite = [mw for mw in middlewares if isinstance(mw, OffsiteMiddleware)]
        spider = self.crawler.spider
        return spider is not None and any(not mw.should_follow(request, spider) for mw in self._offsite)

    def request_dropped(self, request: Request, spider: Any = None) -> None:
        self.state.kinds.dropped(request)

    def process_response(self, request: Request, response: Response) -> Response:
        short = request.meta.pop(SHORT_BODY_KEY, None)  # why the page is a stub
        status = response.status
        if 200 <= status < 300 and not short:
            self.state.kinds.settled(request, OK)
        else:
            if status in NOT_FOUND_STATUSES:
                outcome = READ_GONE if self._spider_reads(request, status) else GONE
            else:
                outcome = FAILED if short or status >= 400 else ODD
            self._failed(request, outcome, f"HTTP {status}" + (f" stub: {short}" if short else ""))
        if short:
            raise IgnoreRequest(f"stub page ({short}): {request.url}")
        return response

    def _spider_reads(self, request: Request, status: int) -> bool:
        """Whether the spider named this status as one it handles, as Scrapy's HttpErrorMiddleware
        asks (the request's meta first, then the spider, then HTTPERROR_ALLOWED_CODES): its callback
        gets the answer. Allowing every status (handle_httpstatus_all) names none."""
        if "handle_httpstatus_list" in request.meta:
            allowed = request.meta["handle_httpstatus_list"]
        else:
            allowed = getattr(self.crawler.spider, "handle_httpstatus_list", None)
            if allowed is None:
                allowed = self.crawler.settings.getlist("HTTPERROR_ALLOWED_CODES")
        try:
            return status in {int(code) for code in allowed}
        except (TypeError, ValueError):
            return False

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, IgnoreRequest):
            # Not an outcome: a listing page refused here (robots.txt, the
            # breaker's stop) stays scheduled-but-unfetched, a lost page. An
            # offsite one never gets this far (request_scheduled).
            return None
        self._failed(request, FAILED, type(exception).__name__)
        return None

    def _failed(self, request: Request, outcome: str, why: str) -> None:
        kinds = self.state.kinds
        key = kinds.settled(request, outcome, why)
        if outcome == FAILED and self.state.breaker.state is BreakerState.RUNNING:
            self.state.given_up.append((self.state.breaker.seq, request))
        if outcome not in (GONE, READ_GONE):
            logger.info("%s failed after retries (%s): %s", kinds.kind_of_key(key), why, request.url)

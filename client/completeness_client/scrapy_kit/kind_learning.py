"""KindLearningMiddleware: the spider middleware that feeds the crawl's KindLedger (learning.py)
with what each callback yields and which requests are start requests. Apart from the ledger, so that
the ledger's module imports no crawl state (state.py holds the ledger)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from .kinds import callback_key
from .state import CrawlState

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class KindLearningMiddleware:
    """Spider middleware next to the spider (priority 1000): sees what each
    callback yields before other middlewares filter it, and which requests
    are start requests."""

    def __init__(self, crawler: Crawler) -> None:
        self.ledger = CrawlState.of(crawler).kinds

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> KindLearningMiddleware:
        if not crawler.settings.getbool("COMPLETENESS_ENABLED", True):
            raise NotConfigured
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for output in start:
            if isinstance(output, Request):
                self.ledger.start_request(output)
            yield output

    def _observe(self, key: str, output: Any) -> None:
        if isinstance(output, Request):
            self.ledger.learned_request(key)
        elif output is not None:
            self.ledger.learned_item(key)

    def process_spider_output(self, response: Response, result: Iterable[Any], spider: Any = None) -> Iterable[Any]:
        key = callback_key(response.request) if response.request is not None else None
        for output in result:
            if key is not None:
                self._observe(key, output)
            yield output

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        key = callback_key(response.request) if response.request is not None else None
        async for output in result:
            if key is not None:
                self._observe(key, output)
            yield output

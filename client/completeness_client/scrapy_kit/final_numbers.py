"""This run's final numbers, whoever asks for them and whenever.

The snapshot guard may be called from the spider's `closed()`, an item
pipeline's `close_spider()`, the kit's feed step or the extension itself;
Scrapy runs these in an order of its own, and `closed()` used to run before
the extension copied the numbers in, so the guard judged zeros. Instead the
report pulls its numbers through this finalizer each time it is judged: from
Scrapy's stats and the spider's attributes, once the crawl is closing (the
close reason is known from the moment closing starts, before pipelines
close). Asked earlier, it refuses: the numbers of a running crawl are not a
run's numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .jobdir import add_stats
from .learning import Totals
from .stats_mapping import report_fields_from_stats

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..report import RunReport
    from .state import CrawlState

NOT_FINAL = "the crawl has not ended: its numbers are not final"
# Attributes a spider may set; an attribute present with None still counts as
# filled for declared_total ("the source announces no total").
SPIDER_NUMBERS = ("declared_total", "pages_expected", "collected", "removed")


def watch_close_reason(crawler: Crawler, state: CrawlState) -> None:
    """Note the close reason when closing starts. Scrapy passes it to the
    spider_closed signal only, after item pipelines have closed; every close
    (idle, CloseSpider, the breaker, shutdown) goes through this method."""
    engine = crawler.engine
    original = engine.close_spider_async

    async def close_spider_async(*, reason: str = "cancelled") -> None:
        if state.close_reason is None:
            state.close_reason = reason
        await original(reason=reason)

    engine.close_spider_async = close_spider_async


class Finalizer:
    def __init__(self, crawler: Crawler, state: CrawlState) -> None:
        self.crawler = crawler
        self.state = state

    def __call__(self) -> str | None:
        state = self.state
        if state.close_reason is None:
            return NOT_FINAL
        report = state.report
        self._apply_learned(report)
        stats = add_stats(self.crawler.stats.get_stats(), state.carried_stats)
        fields = report_fields_from_stats(stats)
        report.collected = fields["collected"]
        spider = self.crawler.spider
        for name in SPIDER_NUMBERS:
            value = getattr(spider, name, None)
            if value is not None or (name == "declared_total" and hasattr(spider, name)):
                setattr(report, name, value)
        if not report.declared_total_filled:
            # The crawl is over and nobody announced a total: the source announces none.
            report.declared_total = None
        report.requests.clear()
        report.requests.update(fields["requests"]["by_class"])
        for name, value in fields["counters"].items():
            report.counters[name] = value
        report.finish_reason = state.close_reason
        report.meta["finish_reason"] = state.close_reason
        if "elapsed_time_seconds" in fields["meta"]:
            report.meta["elapsed_time_seconds"] = fields["meta"]["elapsed_time_seconds"]
        report.meta.setdefault("crawler", "scrapy")
        if spider is not None:
            report.meta.setdefault("spider", spider.name)
        report.pacing = state.pacing.to_report()
        if state.pacing.retry_after_waits:
            report.counters["retry_after_waits"] = state.pacing.retry_after_waits
        if state.storage is not None:
            state.storage.apply(report, fields["collected"])
        return None

    def _apply_learned(self, report: RunReport) -> None:
        """Add the ledger's outcomes to the report's own (a spider may count
        some itself), replacing what an earlier call added: judged again,
        nothing counts twice."""
        new = self.state.kinds.totals()
        old = self.state.applied or Totals()
        report.pages_fetched += new.pages_fetched - old.pages_fetched
        report.removed += new.removed - old.removed
        report.records_lost += new.records_lost - old.records_lost
        for url in old.lost_urls:
            report.lost_urls.remove(url)
        report.lost_urls.extend(new.lost_urls)
        report.unfetched_page_urls = new.unfetched_urls
        for kind in ("listing", "record", "other"):
            if new.errors.get(kind) or old.errors.get(kind):
                report.counters[f"spider_exceptions_{kind}"] = new.errors.get(kind, 0)
        report.record_errors = new.errors.get("record", 0)
        self.state.applied = new

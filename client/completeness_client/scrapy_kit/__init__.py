"""Scrapy integration. Enable with:

    EXTENSIONS = {"completeness_client.scrapy_kit.CompletenessExtension": 500}
    DOWNLOADER_MIDDLEWARES = {
        "completeness_client.scrapy_kit.BreakerMiddleware": 560,
        "completeness_client.scrapy_kit.PageOutcomeMiddleware": 540,
    }
    COMPLETENESS_SOURCE = "my-source"

and run with `completeness-scrapy crawl SPIDER` to get the verdict's exit code.
"""

from .extension import CompletenessExtension, recorded_exit_codes
from .middleware import BREAKER_CLOSE_REASON, PAGE_KEY, BreakerMiddleware, PageOutcomeMiddleware
from .state import CrawlState
from .stats_mapping import report_fields_from_stats, request_classes_from_stats

EXTENSIONS = {"completeness_client.scrapy_kit.CompletenessExtension": 500}
DOWNLOADER_MIDDLEWARES = {
    "completeness_client.scrapy_kit.BreakerMiddleware": 560,
    "completeness_client.scrapy_kit.PageOutcomeMiddleware": 540,
}

__all__ = [
    "BREAKER_CLOSE_REASON", "BreakerMiddleware", "CompletenessExtension", "CrawlState",
    "DOWNLOADER_MIDDLEWARES", "EXTENSIONS", "PAGE_KEY", "PageOutcomeMiddleware",
    "recorded_exit_codes", "report_fields_from_stats", "request_classes_from_stats",
]

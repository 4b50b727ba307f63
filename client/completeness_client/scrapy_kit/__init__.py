"""Scrapy integration. Enable with:

    ADDONS = {"completeness_client.scrapy_kit.Addon": 0}
    COMPLETENESS_SOURCE = "my-source"

and run with `completeness-scrapy crawl SPIDER` to get the verdict's exit code.
"""

from .addon import Addon
from .extension import CompletenessExtension, recorded_exit_codes, recorded_results
from .kind_learning import KindLearningMiddleware
from .kinds import KIND_KEY, PAGE_KEY, request_kind
from .learning import KindLedger
from .middleware import BREAKER_CLOSE_REASON, BreakerMiddleware, BreakerStopped
from .page_outcomes import PageOutcomeMiddleware
from .state import CrawlState
from .stats_mapping import report_fields_from_stats, request_classes_from_stats

EXTENSIONS = {"completeness_client.scrapy_kit.CompletenessExtension": 500}
DOWNLOADER_MIDDLEWARES = {
    "completeness_client.scrapy_kit.BreakerMiddleware": 560,
    "completeness_client.scrapy_kit.PageOutcomeMiddleware": 540,
}
SPIDER_MIDDLEWARES = {"completeness_client.scrapy_kit.KindLearningMiddleware": 1000}

__all__ = [
    "BREAKER_CLOSE_REASON",
    "DOWNLOADER_MIDDLEWARES",
    "EXTENSIONS",
    "KIND_KEY",
    "PAGE_KEY",
    "Addon",
    "BreakerMiddleware",
    "BreakerStopped",
    "CompletenessExtension",
    "CrawlState",
    "KindLearningMiddleware",
    "KindLedger",
    "PageOutcomeMiddleware",
    "SPIDER_MIDDLEWARES",
    "recorded_exit_codes",
    "recorded_results",
    "report_fields_from_stats",
    "request_classes_from_stats",
    "request_kind",
]

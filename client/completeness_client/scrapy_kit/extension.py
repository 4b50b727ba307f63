"""Scrapy extension: builds the run report when the spider closes, posts it,
and records the verdict's exit code for the runner (`completeness-scrapy`).

Spider API (all optional, read when the spider closes):
  spider.declared_total = 1234   # the total the source announced
  spider.pages_expected = 124    # listing pages the source announced
  spider.collected = 1200        # distinct records, if item_scraped_count overcounts
  spider.removed = 3             # records gone at the source, if the kit's 404 count is wrong
  spider.completeness            # the RunReport: page_lost(url), add_failed_batch(...),
                                 # pause(reason), guard_snapshot(replace), meta, counters, written, delivery
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from .. import exit_codes
from ..poster import PostResult, ReportPoster
from ..report import new_run_id
from ..validation import validate_report
from .state import CrawlState, slugify
from .stats_mapping import report_fields_from_stats

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

STAT_EXIT_CODE = "completeness/exit_code"
STAT_VERDICT = "completeness/verdict"

_exit_codes_lock = threading.Lock()
_exit_codes: list[int] = []


def recorded_exit_codes() -> list[int]:
    """Exit codes of every crawl in this process so far, for the runner."""
    with _exit_codes_lock:
        return list(_exit_codes)


def _record_exit_code(code: int) -> None:
    with _exit_codes_lock:
        _exit_codes.append(code)


class CompletenessExtension:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.state = CrawlState.of(crawler)
        settings = crawler.settings
        self.url = settings.get("COMPLETENESS_URL") or os.environ.get("COMPLETENESS_URL")
        self.token = settings.get("COMPLETENESS_TOKEN") or os.environ.get("COMPLETENESS_TOKEN")
        self.report_file = settings.get("COMPLETENESS_REPORT_FILE")
        self.spool_dir = settings.get("COMPLETENESS_SPOOL_DIR")
        self.post_attempts = settings.getint("COMPLETENESS_POST_ATTEMPTS", 4)
        self.post_timeout = settings.getfloat("COMPLETENESS_POST_TIMEOUT", 10.0)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CompletenessExtension:
        if not crawler.settings.getbool("COMPLETENESS_ENABLED", True):
            raise NotConfigured
        return cls(crawler)

    def spider_opened(self, spider: Spider) -> None:
        report = self.state.report
        report.started_at = report.clock.now()
        if not self.state.source_configured:
            report.source = slugify(spider.name)
        if not self.crawler.settings.get("COMPLETENESS_RUN_ID"):
            report.run_id = new_run_id(report.source, report.started_at)
        spider.completeness = report
        if not (self.url and self.token):
            logger.warning("COMPLETENESS_URL/COMPLETENESS_TOKEN not set: the report is only written locally "
                           "and the exit code follows the crawler's own verdict")

    def build_report(self, spider: Spider, reason: str) -> dict[str, Any]:
        report = self.state.report
        stats = self.crawler.stats.get_stats()
        fields = report_fields_from_stats(stats)
        report.collected = fields["collected"]
        for name in ("declared_total", "pages_expected", "collected", "removed"):
            value = getattr(spider, name, None)
            if value is not None:
                setattr(report, name, value)
        report.requests.clear()
        report.requests.update(fields["requests"]["by_class"])
        for name, value in fields["counters"].items():
            report.counters.setdefault(name, value)
        report.meta.setdefault("finish_reason", fields["meta"].get("finish_reason", reason))
        if "elapsed_time_seconds" in fields["meta"]:
            report.meta.setdefault("elapsed_time_seconds", fields["meta"]["elapsed_time_seconds"])
        report.meta.setdefault("crawler", "scrapy")
        report.meta.setdefault("spider", spider.name)
        if reason != "finished":
            report.extra_incomplete_reasons.append(f"the spider closed with reason {reason!r}")
        return report.to_dict()

    async def spider_closed(self, spider: Spider, reason: str) -> None:
        body = self.build_report(spider, reason)
        self._write_report_file(body)
        errors = validate_report(body)
        if errors:
            logger.error("the run report is invalid, not posted: %s", "; ".join(map(str, errors)))
            self._finish(exit_codes.BAD_INPUT, None)
            return
        if not (self.url and self.token):
            own = exit_codes.COMPLETE if body["crawler_verdict"] == "complete" else exit_codes.INCOMPLETE
            self._finish(own, None)
            return
        poster = ReportPoster(self.url, self.token, spool_dir=self.spool_dir,
                              max_attempts=self.post_attempts, timeout_seconds=self.post_timeout)
        # Posting blocks (urllib, retries with sleeps): keep it off the reactor thread.
        try:
            result = await maybe_deferred_to_future(deferToThread(poster.post, body))
        except Exception:  # noqa: BLE001 - a kit bug must not lose the crawl's exit status
            logger.exception("posting the completeness report failed")
            self._finish(exit_codes.SPOOLED, None)
            return
        self._posted(result)

    def _posted(self, result: PostResult) -> None:
        level = logging.INFO if result.outcome == "judged" and result.exit_code == 0 else logging.WARNING
        logger.log(level, "completeness report %s/%s: %s %s", result.source, result.run_id,
                   result.outcome, result.verdict or result.message)
        for finding in result.findings:
            logger.log(level, "  finding %s (%s): %s", finding.get("rule"), finding.get("mode"), finding.get("message"))
        self._finish(result.exit_code, result)

    def _finish(self, code: int, result: PostResult | None) -> None:
        self.state.exit_code = code
        self.state.result = result
        self.crawler.stats.set_value(STAT_EXIT_CODE, code)
        if result is not None and result.verdict:
            self.crawler.stats.set_value(STAT_VERDICT, result.verdict)
        _record_exit_code(code)

    def _write_report_file(self, body: dict[str, Any]) -> None:
        if not self.report_file:
            return
        path = Path(self.report_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(body, indent=2, ensure_ascii=False), encoding="utf-8")

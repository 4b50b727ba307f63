"""Scrapy extension: builds the run report when the spider closes, posts it,
and records the verdict's exit code for the runner (`completeness-scrapy`).

Spider API (all optional, read whenever the report is judged once the crawl
is closing; see final_numbers):
  spider.declared_total = 1234   # the total the source announced (None: it announces none)
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

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from .. import exit_codes
from ..fields import FieldCoverage
from ..poster import PostResult, ReportPoster
from ..report import new_run_id
from ..summary import describe_findings, describe_flushed, exit_reason
from ..validation import validate_report
from .final_numbers import Finalizer, watch_close_reason
from .interrupts import InterruptGuard
from .jobdir import JobDirRun, scrapy_resumes, without_its_start
from .snapshot_files import publish_snapshot_files
from .state import CrawlState, slugify
from .storage import DEFAULT_DUPLICATE_PATTERN, StorageOutcomes

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings as Settings

logger = logging.getLogger(__name__)

STAT_EXIT_CODE = "completeness/exit_code"
STAT_VERDICT = "completeness/verdict"

_exit_codes_lock = threading.RLock()  # re-entrant: a signal handler may record while the main thread holds it
# One entry per crawl: a report spooled when the run was killed is replaced
# by the final one if the crawl still closes.
_exit_codes: dict[int, tuple[int, str]] = {}
_results: list[PostResult] = []
# Crawls whose kit an operator switched off (COMPLETENESS_ENABLED = False): the runner then exits with
# Scrapy's own code, as a project without the kit would, and not as if the kit had been left out by mistake.
_switched_off: list[int] = []


def switched_off_crawls() -> int:
    with _exit_codes_lock:
        return len(_switched_off)


def recorded_exit_codes() -> list[int]:
    """Exit codes of every crawl in this process so far, for the runner."""
    with _exit_codes_lock:
        return [code for code, _ in _exit_codes.values()]


def recorded_results() -> list[PostResult]:
    """What became of every posted report of this process, for the runner."""
    with _exit_codes_lock:
        return list(_results)


def recorded_exit_reasons() -> list[str]:
    """Each crawl's exit code with its reason in words ("exit 3: ..."), for the runner."""
    with _exit_codes_lock:
        return [f"exit {code}: {why}" if why else f"exit {code}" for code, why in _exit_codes.values()]


def _record_exit_code(crawl: object, code: int, result: PostResult | None = None, why: str = "") -> None:
    with _exit_codes_lock:
        _exit_codes[id(crawl)] = (code, why)
        if result is not None:
            _results.append(result)


def _setting_or_environment(settings: Settings, name: str) -> str | None:
    """Where to send and keep reports may be set per deployment, in the environment, as the CLI's are."""
    return settings.get(name) or os.environ.get(name) or None


class CompletenessExtension:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.state = CrawlState.of(crawler)
        settings = crawler.settings
        self.url = _setting_or_environment(settings, "COMPLETENESS_URL")
        self.token = _setting_or_environment(settings, "COMPLETENESS_TOKEN")
        self.report_file = _setting_or_environment(settings, "COMPLETENESS_REPORT_FILE")
        self.spool_dir = _setting_or_environment(settings, "COMPLETENESS_SPOOL_DIR")
        self.post_attempts = settings.getint("COMPLETENESS_POST_ATTEMPTS", 4)
        self.post_timeout = settings.getfloat("COMPLETENESS_POST_TIMEOUT", 10.0)
        self.feed_wait_seconds = settings.getfloat("COMPLETENESS_FEED_WAIT_SECONDS", 300.0)
        self.snapshot_files = settings.getdict("COMPLETENESS_SNAPSHOT_FILES")
        self.state.storage = StorageOutcomes(
            crawler,
            dropped_items_fail=settings.getbool("COMPLETENESS_DROPPED_ITEMS_FAIL", True),
            duplicate_drops_fail=settings.getbool("COMPLETENESS_DUPLICATE_DROPS_FAIL", False),
            duplicate_pattern=settings.get("COMPLETENESS_DUPLICATE_DROP_PATTERN", DEFAULT_DUPLICATE_PATTERN),
        )
        self.state.report.finalizer = Finalizer(crawler, self.state)
        if settings.getbool("COMPLETENESS_FIELD_COVERAGE", True):
            self.state.report.field_coverage = FieldCoverage()
            crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        # Before the feeds open their files (spider_opened): a resumed part appends to its staging file.
        self.jobdir = JobDirRun.from_crawler(crawler, self.state)
        self.stopped_by = ""
        if self.jobdir is not None:
            spider_name = getattr(crawler.spider, "name", None) or "spider"
            source = self.state.report.source if self.state.source_configured else slugify(spider_name)
            self.jobdir.start(source, self.snapshot_files)
        jobdir = crawler.settings.get("JOBDIR")
        if jobdir and (self.jobdir is None or self.jobdir.saved is None) and scrapy_resumes(jobdir):
            # A part counted as a whole crawl published its own rows as the snapshot when no total said otherwise.
            why = without_its_start(jobdir, resume_off=self.jobdir is None)
            logger.warning("completeness: %s; it will be reported incomplete", why)
            self.state.report.extra_incomplete_reasons.append(why)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CompletenessExtension:
        if not crawler.settings.getbool("COMPLETENESS_ENABLED", True):
            with _exit_codes_lock:
                _switched_off.append(id(crawler))
            raise NotConfigured
        return cls(crawler)

    def spider_opened(self, spider: Spider) -> None:
        report = self.state.report
        report.started_at = report.clock.now()
        if not self.state.source_configured:
            report.source = slugify(spider.name)
        if not self.crawler.settings.get("COMPLETENESS_RUN_ID"):
            report.run_id = new_run_id(report.source, report.started_at)
        if self.jobdir is not None:
            self.jobdir.opened()
        spider.completeness = report
        self.state.kinds.spider = spider
        from twisted.internet import reactor

        # After Scrapy installed its own handlers (at reactor startup), and once more for safety.
        self.interrupts = InterruptGuard(self._killed)
        for delay in (0, 1):
            reactor.callLater(delay, self.interrupts.install)
        watch_close_reason(self.crawler, self.state)
        self.state.storage.spider_opened()
        if not (self.url and self.token):
            logger.warning(
                "COMPLETENESS_URL/COMPLETENESS_TOKEN not set: the report is only written locally "
                "and the exit code follows the crawler's own verdict"
            )

    def item_scraped(self, item: Any, **_: Any) -> None:
        adapter = ItemAdapter(item)
        # Declared fields (Item, dataclass, attrs) count even when never set.
        self.state.report.observe_record((name, adapter.get(name)) for name in adapter.field_names())

    def spider_error(self, failure: Any, response: Any, spider: Any = None) -> None:
        self.state.kinds.callback_raised(getattr(response, "request", None))

    async def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.state.close_reason is None:  # closed without the engine's close_spider_async
            self.state.close_reason = reason
        await self.state.storage.wait_for_feeds(self.feed_wait_seconds)
        if self.jobdir is not None and self.jobdir.pauses(self.state.close_reason):
            if self._paused_part(clean=True):
                return
        if self.snapshot_files:
            publish_snapshot_files(self.state.report, self.state.storage, self.snapshot_files)
        body = self.state.report.to_dict()
        self._write_report_file(body)
        errors = validate_report(body)
        if self.jobdir is not None:
            self._last_part(body, spool=not errors)
        if errors:
            why = "the run report is invalid, not posted: " + "; ".join(map(str, errors))
            logger.error("%s", why)
            self._finish(exit_codes.BAD_INPUT, None, why)
            return
        if not (self.url and self.token):
            own = body["exit_code"]  # the crawler's own verdict; 0 for a paused run
            self._finish(own, None, self._unconfigured() + ": " + self._own_verdict())
            return
        poster = self._poster()
        if self.state.killed_report is not None:
            # A SIGKILL during the post must not leave the earlier version behind.
            poster.spool(body)
        # Posting blocks (urllib, retries with sleeps): keep it off the reactor thread.
        try:
            result = await maybe_deferred_to_future(deferToThread(poster.post, body))
        except Exception:
            logger.exception("posting the completeness report failed")
            self._finish(exit_codes.SPOOLED, None, "posting the report failed (see the log)")
            return
        self._posted(result)

    def _paused_part(self, *, clean: bool, why: str = "") -> bool:
        """A JOBDIR crawl stopped: save the run so far for the next start, post nothing (jobdir).
        False when it could not be saved: the run then ends here, reported as any stopped run."""
        assert self.jobdir is not None
        body = self.state.report.to_dict()  # first: the finalizer brings the numbers up to date
        try:
            self.jobdir.save(clean=clean)
        except OSError as exc:
            message = "completeness: the run could not be saved in JOBDIR (%s): it ends here, reported as stopped"
            if clean:
                logger.error(message, exc)
            else:  # no logging inside a signal handler: from the reactor, if it still runs
                from twisted.internet import reactor

                reactor.callFromThread(logger.error, message, exc)
            self.jobdir.finished()
            self.jobdir = None
            return False
        part = self.jobdir.paused_report(body)
        self._write_report_file(part)
        self.stopped_by = why or self.stopped_by  # the graceful close after a SIGTERM says it too
        stopped = f"stopped by {self.stopped_by}: " if self.stopped_by else ""
        self._finish(exit_codes.RESUMABLE, None, stopped + "paused: " + part["pause_reason"], in_handler=not clean)
        return True

    def _last_part(self, body: dict[str, Any], *, spool: bool) -> None:
        """The JOBDIR crawl ended: the next start with this JOBDIR is a new run."""
        assert self.jobdir is not None
        if spool and self.url and self.token:
            # Killed while posting, the report is in the spool, not lost with the deleted state.
            self._poster().spool(body)
        self.jobdir.finished()
        if self.jobdir.part > 1:
            logger.info(
                "completeness: run %s ended after %d parts (started %s), %d collected",
                body["run_id"],
                self.jobdir.part,
                body["started_at"],
                body["collected"],
            )

    def _poster(self) -> ReportPoster:
        return ReportPoster(
            self.url,
            self.token,
            spool_dir=self.spool_dir,
            max_attempts=self.post_attempts,
            timeout_seconds=self.post_timeout,
        )

    def _killed(self, why: str) -> None:
        """In a signal handler: write and spool the report as it stands, no
        network, no logging (see interrupts)."""
        state = self.state
        if state.exit_code is not None:
            return  # the run has already finished its report
        if self.jobdir is not None and self.jobdir.pauses(state.close_reason):
            state.close_reason = "shutdown"
            # Saved unclean: Scrapy saves its queue only if the graceful stop still finishes (then saved again).
            if self._paused_part(clean=False, why=why):
                state.exit_code = None  # the spider_closed path may still finish it
                return
        if state.close_reason is None:
            state.close_reason = "shutdown"
        body = state.report.to_dict()
        self._write_report_file(body)
        if validate_report(body):
            return  # the spider_closed path says why, if it still runs
        state.killed_report = body
        if self.url and self.token:
            path = self._poster().spool(body)
            self._finish(
                exit_codes.SPOOLED,
                None,
                f"stopped by {why}: the report as it stood (end reason "
                f"{body['end_reason']}) is spooled to {path}; the next run sends it",
                in_handler=True,
            )
        else:
            self._finish(
                body["exit_code"],
                None,
                f"stopped by {why}: {self._unconfigured()}; the crawler's own verdict: {body['crawler_verdict']}",
                in_handler=True,
            )
        state.exit_code = None  # the spider_closed path may still finish it

    def _posted(self, result: PostResult) -> None:
        for earlier in result.flushed:
            earlier_level = logging.INFO if earlier.outcome == "judged" and earlier.exit_code == 0 else logging.WARNING
            logger.log(earlier_level, "%s", describe_flushed(earlier))
            for line in describe_findings(earlier):
                logger.log(earlier_level, "%s", line)
        level = logging.INFO if result.outcome == "judged" and result.exit_code == 0 else logging.WARNING
        logger.log(
            level,
            "completeness report %s/%s: %s %s",
            result.source,
            result.run_id,
            result.outcome,
            result.verdict or result.message,
        )
        for finding in result.findings:
            logger.log(level, "  finding %s (%s): %s", finding.get("rule"), finding.get("mode"), finding.get("message"))
        why = exit_reason(result)
        if result.outcome == "judged":
            why += f"; the crawler's own verdict: {self._own_verdict()}"
        self._finish(result.exit_code, result, why)

    def _unconfigured(self) -> str:
        # One of the two set is a deployment that meant to post (a token missing from the scheduler's
        # environment): "no service configured" sent its engineer to the wrong setting.
        if self.url or self.token:
            given, missing = (
                ("COMPLETENESS_URL", "COMPLETENESS_TOKEN") if self.url else ("COMPLETENESS_TOKEN", "COMPLETENESS_URL")
            )
            return f"the report was not posted: {missing} is not set, only {given}"
        return "no service configured (COMPLETENESS_URL, COMPLETENESS_TOKEN)"

    def _own_verdict(self) -> str:
        report = self.state.report
        if report.paused:
            return f"the run was paused ({report.pause_reason or 'no reason given'})"
        evidence = report.evidence_of_loss()
        if not evidence:
            return "complete (no evidence of loss)"
        return "incomplete: " + "; ".join(evidence)

    def _finish(self, code: int, result: PostResult | None, why: str = "", *, in_handler: bool = False) -> None:
        self.state.exit_code = code
        self.state.exit_why = why
        self.state.result = result
        self.crawler.stats.set_value(STAT_EXIT_CODE, code)
        if result is not None and result.verdict:
            self.crawler.stats.set_value(STAT_VERDICT, result.verdict)
        level = logging.INFO if code == 0 else logging.WARNING
        if in_handler:  # no logging inside a signal handler: from the reactor, if it still runs
            from twisted.internet import reactor

            reactor.callFromThread(logger.log, level, "completeness: exit %d: %s", code, why)
        else:
            logger.log(level, "completeness: exit %d: %s", code, why)
        _record_exit_code(self.crawler, code, result, why)

    def _write_report_file(self, body: dict[str, Any]) -> None:
        if not self.report_file:
            return
        path = Path(self.report_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(body, indent=2, ensure_ascii=False), encoding="utf-8")

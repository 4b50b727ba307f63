"""A crawl paused and resumed with Scrapy's JOBDIR is one run.

    scrapy crawl cars -s JOBDIR=crawls/cars-1    # Ctrl-C or SIGTERM: stops, resumable
    scrapy crawl cars -s JOBDIR=crawls/cars-1    # goes on where it stopped

Scrapy keeps its queue, its seen requests and `spider.state` in JOBDIR, but
not its stats; and the kit's own ledger (pages fetched and lost, records
lost, fields, failed batches) lived in memory. So the stopped part was
reported as an incomplete run (end reason `shutdown`), the resumed part as a
partial one (it counted only its own records), and its feed held only its
own rows: two alarms and no snapshot for every pause.

With JOBDIR set, a part that ends stopped (end reason `shutdown`, or a
SIGTERM / second Ctrl-C, see interrupts) saves what the report needs to be
whole in `JOBDIR/completeness-run.json` (written atomically) and posts
nothing; the next start with the same JOBDIR loads it and goes on with the
same run (its run_id, its first part's started_at). The part that finishes
posts one report with the whole crawl's numbers and deletes the file.

A part killed before Scrapy saved its queue (a second Ctrl-C, a SIGKILL
after SIGTERM) leaves its state marked unclean: Scrapy cannot resume the
requests that were waiting then, so the run goes on but is reported
incomplete, saying why. A saved state that is unreadable, of another source
or of another format, or whose Scrapy queue is gone, is moved aside with a
log line and the run starts anew.

COMPLETENESS_JOBDIR_RESUME = False turns this off: every stop is an
incomplete run, as without JOBDIR.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..breaker import FailureWindowBreaker
from ..clock import isoformat
from ..fields import FieldCoverage
from .learning import KindLedger, Totals
from .stats_mapping import (
    EXCEPTION_PREFIX,
    ROBOTS_EXCEPTION_PREFIX,
    ROBOTS_STATUS_PREFIX,
    SHORT_BODY_STAT,
    STATUS_PREFIX,
)
from .storage import local_path

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .state import CrawlState

logger = logging.getLogger(__name__)

STATE_NAME = "completeness-run.json"
FORMAT = 1
# The end reasons that pause a JOBDIR crawl: Scrapy's graceful stop (Ctrl-C, SIGTERM, crawler.stop()).
# A close the crawl chose itself (closespider_*, the breaker's stop) ends the run.
PAUSE_REASONS = ("shutdown",)
# Scrapy stats the report is made from (stats_mapping), added up over the parts.
CARRIED_PREFIXES = (STATUS_PREFIX, EXCEPTION_PREFIX, ROBOTS_STATUS_PREFIX, ROBOTS_EXCEPTION_PREFIX)
CARRIED_KEYS = ("item_scraped_count", "retry/max_reached", "item_dropped_count", SHORT_BODY_STAT)
ELAPSED = "elapsed_time_seconds"
APPENDABLE_FORMATS = ("jsonlines", "jl")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def carried_stats(stats: dict[str, Any]) -> dict[str, int | float]:
    return {
        key: value
        for key, value in stats.items()
        if is_number(value) and (key in CARRIED_KEYS or key == ELAPSED or key.startswith(CARRIED_PREFIXES))
    }


def add_stats(stats: dict[str, Any], carried: dict[str, int | float]) -> dict[str, Any]:
    """This part's stats with the earlier parts' added, for the report (Scrapy's own stay this part's)."""
    merged = dict(stats)
    for key, value in carried.items():
        current = merged.get(key, 0)
        merged[key] = (current if is_number(current) else 0) + value
    return merged


def scrapy_resumes(jobdir: str) -> bool:
    """Whether Scrapy will skip requests an earlier crawl in this JOBDIR saw (its duplicate filter's file)."""
    seen = Path(jobdir, "requests.seen")
    try:
        return seen.stat().st_size > 0
    except OSError:
        return False


def without_its_start(jobdir: str, resume_off: bool) -> str:
    """Why a crawl Scrapy resumes, with no run of the kit to go on with, is not a whole crawl."""
    because = (
        "COMPLETENESS_JOBDIR_RESUME is off"
        if resume_off
        else "the kit saved no run there to go on with (an earlier crawl finished in it, or its state was unusable)"
    )
    return (
        f"JOBDIR {jobdir} holds Scrapy's state of an earlier crawl and {because}: Scrapy skips the requests "
        "it saw before, so this run's numbers are not the whole crawl's"
    )


class UnusableState(Exception):
    """A saved state this run cannot go on from; the message says why."""


class JobDirRun:
    """The saved state of one JOBDIR crawl: loaded when the crawl starts, saved when a part stops."""

    def __init__(self, crawler: Crawler, state: CrawlState, jobdir: str) -> None:
        self.crawler = crawler
        self.state = state
        self.jobdir = Path(jobdir)
        self.path = self.jobdir / STATE_NAME
        self.feeds: dict[str, dict[str, Any]] = {
            str(uri): dict(options or {}) for uri, options in crawler.settings.getdict("FEEDS").items()
        }
        self.saved: dict[str, Any] | None = None  # the earlier parts', when this part goes on from them
        self.part = 1

    @classmethod
    def from_crawler(cls, crawler: Crawler, state: CrawlState) -> JobDirRun | None:
        jobdir = crawler.settings.get("JOBDIR")
        if not jobdir or not crawler.settings.getbool("COMPLETENESS_JOBDIR_RESUME", True):
            return None
        return cls(crawler, state, jobdir)

    # -- starting -------------------------------------------------------------

    def start(self, source: str, snapshot_files: dict[str, str]) -> None:
        """Before the feeds open: load the earlier parts' state if any, and check the snapshot feeds."""
        try:
            saved = self._read(source)
        except UnusableState as exc:
            aside = self.path.with_name(self.path.name + ".unusable")
            try:
                os.replace(self.path, aside)
            except OSError:
                aside = self.path
            logger.error(
                "completeness: JOBDIR %s: the saved state of an earlier part (%s) cannot be used: %s; "
                "this part starts a new run, so its report counts only what it collects itself",
                self.jobdir,
                aside,
                exc,
            )
            saved = None
        if saved is not None:
            self._restore(saved)
        self._check_snapshot_feeds(snapshot_files)

    def _read(self, source: str) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UnusableState(f"unreadable: {exc}") from exc
        try:
            saved = json.loads(text)
        except ValueError as exc:
            raise UnusableState(f"not JSON: {exc}") from exc
        if not isinstance(saved, dict) or saved.get("format") != FORMAT:
            raise UnusableState(f"not a state of format {FORMAT} (another version of the kit?)")
        if saved.get("source") != source:
            raise UnusableState(f"saved by a crawl of source {saved.get('source')!r}, not {source!r}")
        # Without the queue Scrapy saves when a part stops gracefully, Scrapy starts over, and so must the run.
        if saved.get("clean") and not (self.jobdir / "requests.queue" / "active.json").exists():
            raise UnusableState("Scrapy's saved queue (requests.queue/active.json) is gone: Scrapy starts over")
        try:
            # Everything is checked before anything is changed: a half-restored run would be neither.
            KindLedger().restore(saved["ledger"])
            FieldCoverage().restore(saved["fields"])
            FailureWindowBreaker().restore(saved["breaker"])
            _check_counts(saved["storage"])
            _check_counts({"stats": saved["stats"]}, number=is_number)
            report = saved["report"]
            for name, kind in _REPORT_TYPES.items():
                if not isinstance(report[name], kind) or isinstance(report[name], bool):
                    raise TypeError(f"report.{name} is not a {kind.__name__}")
            _parse_time(report["started_at"])
            int(saved["part"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UnusableState(f"malformed ({type(exc).__name__}: {exc})") from exc
        return saved

    def _restore(self, saved: dict[str, Any]) -> None:
        state, report = self.state, self.state.report
        self.saved = saved
        self.part = int(saved["part"]) + 1
        state.kinds.restore(saved["ledger"])
        if report.field_coverage is not None:
            report.field_coverage.restore(saved["fields"])
        state.breaker.restore(saved["breaker"])
        state.carried_stats = dict(saved["stats"])
        state.pacing.retry_after_waits += int(saved.get("retry_after_waits", 0))
        if state.storage is not None:
            state.storage.restore(saved["storage"], self._feed_kept(saved.get("feed_sizes", {})))
        own = saved["report"]
        if own.get("declared_total") is not None:
            report.declared_total = own["declared_total"]
        if own.get("pages_expected") is not None:
            report.pages_expected = own["pages_expected"]
        report.pages_fetched += own["pages_fetched"]
        report.removed += own["removed"]
        report.records_lost += own["records_lost"]
        report.lost_urls.extend(own["lost_urls"])
        report.failed_batches.extend(own["failed_batches"])
        report.counters.update(own["counters"])
        report.meta.update(own["meta"])
        report.outcomes.update(own["outcomes"])
        report.extra_incomplete_reasons.extend(own["extra_incomplete_reasons"])
        if own.get("pause_reason") is not None:  # the spider paused the run on purpose (pause(reason))
            report.pause(own["pause_reason"])
        report.rows_in_memory_partial = (
            f"this run was resumed from JOBDIR (part {self.part}): rows kept in memory are this part's only; "
            "publish with the feed step (COMPLETENESS_SNAPSHOT_FILES) instead"
        )
        if not saved.get("clean"):
            why = (
                f"part {saved['part']} of this run was killed before Scrapy saved its queue in JOBDIR "
                "(a second Ctrl-C, or SIGKILL after SIGTERM): the requests waiting then are lost"
            )
            report.extra_incomplete_reasons.append(why)
            logger.warning(
                "completeness: JOBDIR %s: %s; the run goes on and will be reported incomplete", self.jobdir, why
            )
        logger.info(
            "completeness: JOBDIR %s: part %d of run %s (started %s), going on from %d collected so far",
            self.jobdir,
            self.part,
            own["run_id"],
            own["started_at"],
            saved["stats"].get("item_scraped_count", 0),
        )

    def opened(self) -> None:
        """At spider_opened, after the extension named the run: the earlier parts' run goes on."""
        self.state.report.meta["jobdir_parts"] = self.part
        if self.saved is None:
            return
        report, own = self.state.report, self.saved["report"]
        if self.crawler.settings.get("COMPLETENESS_RUN_ID") and report.run_id != own["run_id"]:
            logger.info(
                "completeness: COMPLETENESS_RUN_ID %s is not used: this part goes on with run %s",
                report.run_id,
                own["run_id"],
            )
        report.run_id = own["run_id"]
        report.started_at = _parse_time(own["started_at"])

    def _feed_kept(self, sizes: dict[str, int]) -> Any:
        """Whether what a feed (by URI, or its file by path) stored in earlier parts is still there."""
        kept: dict[str, bool] = {}
        for uri, options in self.feeds.items():
            path = local_path(uri)
            if "%(" in uri:
                keep = True  # a file per part (or batch): the earlier ones are untouched
            elif path is None:
                keep = False  # a remote upload of the same name is replaced by this part's
            else:
                size = path.stat().st_size if path.exists() else -1
                keep = not options.get("overwrite", False) and sizes.get(str(path)) == size
                if not keep:
                    logger.warning(
                        "completeness: JOBDIR %s: the feed %s no longer holds what earlier parts stored in it "
                        "(%s): its items from before are counted as not stored, and it will not be published",
                        self.jobdir,
                        path,
                        "its overwrite option is on" if options.get("overwrite") else "its file changed between parts",
                    )
                kept[str(path)] = keep
            kept[uri] = keep
        return lambda name: kept.get(name, True)

    def _check_snapshot_feeds(self, snapshot_files: dict[str, str]) -> None:
        for uri, options in self.feeds.items():
            path = local_path(uri)
            if path is None or not any(Path(staging).resolve() == path for staging in snapshot_files):
                continue
            if options.get("overwrite"):
                logger.warning(
                    "completeness: FEEDS[%r] has overwrite on in a JOBDIR crawl: a resumed part starts the "
                    "staging file over and the rows of earlier parts are lost, so the kit will refuse to "
                    'publish it; set "overwrite": False for a crawl that may be paused and resumed',
                    uri,
                )
            if str(options.get("format", "")) not in APPENDABLE_FORMATS:
                logger.warning(
                    "completeness: FEEDS[%r] is %s: a resumed part appends to the staging file, which "
                    "only jsonlines takes without breaking the file (json and xml become invalid, csv "
                    "repeats its header)",
                    uri,
                    options.get("format") or "of no format",
                )
            if self.saved is None and not options.get("overwrite") and path.exists():
                # A new run appending to rows of another one (a JOBDIR deleted to start over) would publish them.
                aside = path.with_name(path.name + ".incomplete")
                try:
                    os.replace(path, aside)
                except OSError as exc:
                    why = f"the staging file {path}, left by an earlier run, could not be moved aside ({exc})"
                    logger.error("completeness: %s: this run appends to it and will not publish it", why)
                    self.state.report.extra_incomplete_reasons.append(why)
                    continue
                logger.warning(
                    "completeness: %s was left by an earlier run, not by a part of this one: moved aside to %s "
                    "so this run does not append to it",
                    path,
                    aside,
                )

    # -- stopping -------------------------------------------------------------

    def pauses(self, close_reason: str | None) -> bool:
        return close_reason is None or close_reason in PAUSE_REASONS

    def save(self, *, clean: bool) -> None:
        """The run so far, atomically (a part killed while saving leaves the earlier save whole).
        In a signal handler too (clean=False): no logging here."""
        state, report = self.state, self.state.report
        applied = state.applied or Totals()
        kit_batches = state.storage._added if state.storage is not None else []
        stats = add_stats(carried_stats(self.crawler.stats.get_stats()), state.carried_stats)
        storage = state.storage.to_saved() if state.storage is not None else _EMPTY_STORAGE
        body = {
            "format": FORMAT,
            "source": report.source,
            "part": self.part,
            "clean": clean,
            "saved_at": isoformat(report.clock.now()),
            "report": {
                "run_id": report.run_id,
                "started_at": isoformat(report.started_at),
                "declared_total": report.declared_total,
                "pages_expected": report.pages_expected,
                # The spider's own numbers; the kit's are made again from the ledger and the stats.
                "pages_fetched": report.pages_fetched - applied.pages_fetched,
                "removed": report.removed - applied.removed,
                "records_lost": report.records_lost - applied.records_lost,
                "lost_urls": _without(report.lost_urls, applied.lost_urls),
                "failed_batches": [batch for batch in report.failed_batches if batch not in kit_batches],
                "counters": dict(report.counters),
                "meta": {k: v for k, v in report.meta.items() if k not in ("finish_reason", ELAPSED)},
                "outcomes": dict(report.outcomes),
                "extra_incomplete_reasons": list(report.extra_incomplete_reasons),
                "pause_reason": (report.pause_reason or "") if report.paused else None,
            },
            "stats": stats,
            "retry_after_waits": state.pacing.retry_after_waits,
            "ledger": state.kinds.to_saved(),
            "fields": report.field_coverage.to_saved() if report.field_coverage is not None else _EMPTY_FIELDS,
            "breaker": state.breaker.to_saved(),
            "storage": storage,
            "feed_sizes": self._feed_sizes(),
        }
        self.jobdir.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, self.path)

    def _feed_sizes(self) -> dict[str, int]:
        sizes = {}
        for uri in self.feeds:
            path = local_path(uri)
            if path is not None and "%(" not in uri:
                sizes[str(path)] = path.stat().st_size if path.exists() else -1
        return sizes

    def finished(self) -> None:
        """The run is over: the next start with this JOBDIR is a new run."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            logger.error(
                "completeness: the finished run's state %s could not be deleted (%s): delete it, or the next "
                "crawl with this JOBDIR goes on with this run",
                self.path,
                exc,
            )

    def paused_report(self, body: dict[str, Any]) -> dict[str, Any]:
        """The stopped part as a report (`paused`, run_id `<run_id>-part<N>`): written to the report
        file, never posted (see the README: a paused report would pause the source's overdue clock)."""
        part = dict(body)
        part.pop("snapshot", None)
        part.update(
            run_id=f"{body['run_id'][:190]}-part{self.part}",
            paused=True,
            exit_code=0,
            pause_reason=self.why_paused(body),
        )
        return part

    def why_paused(self, body: dict[str, Any]) -> str:
        return (
            f"part {self.part} of run {body['run_id']} stopped ({body.get('end_reason')}) with "
            f"{body['collected']} collected so far; resumable from JOBDIR {self.jobdir}: run the same "
            "command again and the run goes on; nothing is posted until it finishes"
        )


_REPORT_TYPES: dict[str, type] = {
    "run_id": str,
    "started_at": str,
    "pages_fetched": int,
    "removed": int,
    "records_lost": int,
    "lost_urls": list,
    "failed_batches": list,
    "counters": dict,
    "meta": dict,
    "outcomes": dict,
    "extra_incomplete_reasons": list,
}
_EMPTY_STORAGE: dict[str, Any] = {
    "dropped": {},
    "duplicates": {},
    "errors": {},
    "stored": {},
    "stored_at": {},
    "failed_slots": {},
    "overwritten": {},
}
_EMPTY_FIELDS: dict[str, Any] = {"counts": {}, "records": 0, "rejected": [], "dropped_names": 0}


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"started_at {text!r} has no offset")
    return moment


def _without(urls: list[str], taken: list[str]) -> list[str]:
    rest = list(urls)
    for url in taken:
        if url in rest:
            rest.remove(url)
    return rest


def _check_counts(groups: dict[str, Any], number: Any = None) -> None:
    check = number or (lambda value: isinstance(value, int) and not isinstance(value, bool))
    for name, counts in groups.items():
        if not isinstance(counts, dict) or not all(check(value) for value in counts.values()):
            raise TypeError(f"{name} holds something other than counts")

"""Where collected items went: item pipelines and feed exports.

Scrapy counts a scraped item whether or not anything stored it: a feed
pointing at an unwritable path logs an error per item and the crawl still
looks complete. This turns pipeline drops and errors, and feed-export
failures, into the report's `failed_batches`, and the items the feeds stored
into `written`.

Items a pipeline drops as duplicates (DropItem whose message matches
COMPLETENESS_DUPLICATE_DROP_PATTERN, "duplicate" by default) are no loss:
deduplicating is that pipeline's job. They are counted apart
(`counters.items_dropped_duplicate`) and are a failed batch only with
COMPLETENESS_DUPLICATE_DROPS_FAIL = True. Other drops (validation) are a
failed batch unless COMPLETENESS_DROPPED_ITEMS_FAIL = False.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse, urlsplit, urlunsplit

from scrapy import signals
from scrapy.extensions.feedexport import FeedExporter, ItemFilter
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..report import RunReport

logger = logging.getLogger(__name__)

DROPPED_BATCH = "item_pipeline:dropped"
ERROR_BATCH = "item_pipeline:error"
DUPLICATE_BATCH = "item_pipeline:duplicates"
FEED_BATCH_PREFIX = "feed:"
DEFAULT_DUPLICATE_PATTERN = r"(?i)duplicat|already (seen|scraped|stored)"
DUPLICATES_COUNTER = "items_dropped_duplicate"
MESSAGE_CHARS = 200  # of each first message kept: a batch's error holds at most 2,000


def local_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve()
    if parsed.scheme == "" or len(parsed.scheme) == 1:  # a plain path (or a Windows drive letter)
        return Path(uri).resolve()
    return None


def without_credentials(uri: str) -> str:
    """The feed's URI as a report may name it: Scrapy's FTP and S3 feed URIs carry
    `user:password@`, and a batch name is stored by the service, shown on its pages
    and sent in its alerts."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class StorageOutcomes:
    def __init__(
        self,
        crawler: Crawler,
        *,
        dropped_items_fail: bool = True,
        duplicate_drops_fail: bool = False,
        duplicate_pattern: str = DEFAULT_DUPLICATE_PATTERN,
    ) -> None:
        self.crawler = crawler
        self.dropped_items_fail = dropped_items_fail
        self.duplicate_drops_fail = duplicate_drops_fail
        self.duplicate_pattern = re.compile(duplicate_pattern) if duplicate_pattern else None
        self.dropped: Counter[str] = Counter()
        self.duplicates: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        # The first message each exception type came with ("price outside the cohort"): "DropItem
        # x810" alone told on-call nothing of why. One per type, so a message naming each item's id
        # does not grow without bound.
        self.first_messages: dict[str, str] = {}
        self.stored: Counter[str] = Counter()  # feed URI template -> items stored
        self.stored_at: Counter[Path] = Counter()  # local file -> items stored there
        self.failed_slots: Counter[str] = Counter()
        # Rows earlier parts of a resumed crawl (JOBDIR) stored in a feed that this part started over.
        self.overwritten: Counter[str] = Counter()
        self._failures_attributed: Counter[str] = Counter()
        self.feed_exporter: FeedExporter | None = None
        self.feeds_closed = False
        self._waiters: list[Deferred[bool]] = []
        self._added: list[dict[str, Any]] = []
        self._wrote = False
        for handler, signal in (
            (self.item_dropped, signals.item_dropped),
            (self.item_error, signals.item_error),
            (self.feed_slot_closed, signals.feed_slot_closed),
            (self.feed_exporter_closed, signals.feed_exporter_closed),
        ):
            crawler.signals.connect(handler, signal=signal)

    def spider_opened(self) -> None:
        extensions = getattr(getattr(self.crawler, "extensions", None), "middlewares", ())
        self.feed_exporter = next((e for e in extensions if isinstance(e, FeedExporter)), None)

    # -- signals --------------------------------------------------------------

    def item_dropped(self, item: Any, exception: BaseException, **_: Any) -> None:
        if self.duplicate_pattern is not None and self.duplicate_pattern.search(str(exception)):
            self.duplicates[type(exception).__name__] += 1
        else:
            self.dropped[type(exception).__name__] += 1
            self._keep_message(type(exception).__name__, exception)

    def item_error(self, item: Any, failure: Any, **_: Any) -> None:
        name = getattr(failure, "type", type(None)).__name__
        self.errors[name] += 1
        self._keep_message(name, getattr(failure, "value", None))

    def _keep_message(self, name: str, exception: BaseException | None) -> None:
        message = " ".join(str(exception or "").split())
        if message and name not in self.first_messages:
            self.first_messages[name] = message[:MESSAGE_CHARS]

    def feed_slot_closed(self, slot: Any) -> None:
        # Scrapy says whether storing a slot failed only through its stats,
        # incremented just before this signal: a new failure of this storage
        # type is this slot's. (Two batches of one type closing at once could
        # swap which is blamed; the totals stay right.)
        storage_type = type(slot.storage).__name__
        failures = self.crawler.stats.get_value(f"feedexport/failed_count/{storage_type}", 0)
        if failures > self._failures_attributed[storage_type]:
            self._failures_attributed[storage_type] += 1
            self.failed_slots[slot.uri_template] += 1
            return
        self.stored[slot.uri_template] += slot.itemcount
        path = local_path(slot.uri)
        if path is not None:
            self.stored_at[path] += slot.itemcount

    def feed_exporter_closed(self) -> None:
        self.feeds_closed = True
        for waiter in self._waiters:
            if not waiter.called:
                waiter.callback(True)

    async def wait_for_feeds(self, timeout_seconds: float) -> None:
        """Until the feed exports stored everything (they close alongside
        this extension, not before it)."""
        if self.feed_exporter is None or self.feeds_closed:
            return
        from twisted.internet import reactor

        waiter: Deferred[bool] = Deferred()
        self._waiters.append(waiter)
        timer = reactor.callLater(timeout_seconds, lambda: waiter.called or waiter.callback(False))
        if not await maybe_deferred_to_future(waiter):
            logger.error("the feed exports did not finish within %.0fs; their outcome is not reported", timeout_seconds)
        if timer.active():
            timer.cancel()

    # -- a crawl paused and resumed (JOBDIR) -----------------------------------

    def to_saved(self) -> dict[str, Any]:
        return {
            "dropped": dict(self.dropped),
            "duplicates": dict(self.duplicates),
            "errors": dict(self.errors),
            "stored": dict(self.stored),
            "stored_at": {str(path): count for path, count in self.stored_at.items()},
            "failed_slots": dict(self.failed_slots),
            "overwritten": dict(self.overwritten),
            "first_messages": dict(self.first_messages),
        }

    def restore(self, saved: dict[str, Any], kept: Callable[[str], bool]) -> None:
        """Go on from an earlier part's outcomes. `kept(uri)`: whether what that feed stored is still
        there to be added to (an appended file, a file per part); a feed started over (overwrite on)
        holds this part's rows only, and the rows before are counted as never stored."""
        self.dropped.update(saved["dropped"])
        self.duplicates.update(saved["duplicates"])
        self.errors.update(saved["errors"])
        self.failed_slots.update(saved["failed_slots"])
        self.overwritten.update(saved["overwritten"])
        # A state saved before messages were kept has none.
        self.first_messages = {**saved.get("first_messages", {}), **self.first_messages}
        for uri, count in saved["stored"].items():
            if kept(uri):
                self.stored[uri] += count
            else:
                self.overwritten[uri] += count
        for path, count in saved["stored_at"].items():
            if kept(path):
                self.stored_at[Path(path)] += count

    # -- the report -----------------------------------------------------------

    def apply(self, report: RunReport, scraped: int) -> None:
        """Bring `failed_batches` and `written` up to date; may run more than once."""
        for batch in self._added:
            if batch in report.failed_batches:
                report.failed_batches.remove(batch)
        self._added = self._batches(scraped)
        report.failed_batches.extend(self._added)
        if self.duplicates:
            report.counters[DUPLICATES_COUNTER] = sum(self.duplicates.values())
        if self.feeds_closed and (report.written is None or self._wrote):
            complete_feeds = self._complete_feeds()
            if complete_feeds:
                report.written = min(self.stored[uri] for uri in complete_feeds)
                self._wrote = True

    def _batches(self, scraped: int) -> list[dict[str, Any]]:
        batches = []
        if self.dropped and self.dropped_items_fail:
            batches.append(
                {
                    "name": DROPPED_BATCH,
                    "rows": sum(self.dropped.values()),
                    "error": "dropped by an item pipeline, not as duplicates: "
                    + _tally(self.dropped, self.first_messages),
                }
            )
        if self.duplicates and self.duplicate_drops_fail:
            batches.append(
                {
                    "name": DUPLICATE_BATCH,
                    "rows": sum(self.duplicates.values()),
                    "error": "dropped by an item pipeline as duplicates: " + _tally(self.duplicates),
                }
            )
        if self.errors:
            batches.append(
                {
                    "name": ERROR_BATCH,
                    "rows": sum(self.errors.values()),
                    "error": "an item pipeline raised: " + _tally(self.errors, self.first_messages),
                }
            )
        if self.feeds_closed:
            for uri in self._complete_feeds():
                missing = scraped - self.stored[uri]
                if missing <= 0:
                    continue
                if self.overwritten[uri]:
                    error = (
                        f"the feed was started over when the crawl resumed from JOBDIR (its overwrite option is "
                        f"on): the {self.overwritten[uri]} item(s) earlier parts stored in it are gone"
                    )
                elif self.failed_slots[uri]:
                    error = f"storing {self.failed_slots[uri]} file(s) of this feed failed (see the log)"
                else:
                    error = "items never reached this feed: exporting them failed (see the log)"
                batches.append({"name": FEED_BATCH_PREFIX + without_credentials(uri), "rows": missing, "error": error})
        return batches

    def _complete_feeds(self) -> list[str]:
        """Feeds meant to hold every item: a feed with an item filter holds a share."""
        if self.feed_exporter is None:
            return []
        return [
            uri
            for uri, options in self.feed_exporter.feeds.items()
            if load_object(options.get("item_filter", ItemFilter)) is ItemFilter and not options.get("item_classes")
        ]


def _tally(counts: Counter[str], first_messages: dict[str, str] | None = None) -> str:
    messages = first_messages or {}
    return ", ".join(
        f"{name} x{count}" + (f" (first: {messages[name]})" if name in messages else "")
        for name, count in sorted(counts.items())
    )

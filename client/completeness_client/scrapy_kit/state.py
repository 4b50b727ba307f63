"""Per-crawler state shared by the extension and the middlewares."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.utils.request import fingerprint

from ..breaker import FailureWindowBreaker
from ..classes import DEFAULT_BAD_CLASSES
from ..report import RunReport
from ..snapshot import DEFAULT_MIN_COMPLETENESS
from .learning import KindLedger
from .pacing import Pacing
from .stubs import StubRules

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request

_ATTR = "_completeness_state"


def slugify(name: str) -> str:
    """A spider's name as a source slug (ASCII letters, digits, '.', '_', '-'): accents dropped (café,
    cafe). A name with letters of another script keeps a digest of itself: every Arabic or Cyrillic
    name became "spider", and two such spiders posted into one source's history."""
    decomposed = unicodedata.normalize("NFKD", name)
    slug = re.sub(r"[^a-z0-9._-]+", "-", decomposed.encode("ascii", "ignore").decode().lower()).strip("-._")
    if any(not char.isascii() and not unicodedata.combining(char) for char in decomposed):
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        return f"{slug[:91].rstrip('-._')}-{digest}" if slug else f"spider-{digest}"
    return (slug or "spider")[:100]


def _fingerprinter(crawler: Crawler) -> Callable[[Request], bytes]:
    """The crawler's request fingerprinter (set before any component is built),
    else Scrapy's default one (a crawler made up in a test)."""
    try:
        return crawler.request_fingerprinter.fingerprint
    except (AttributeError, RuntimeError):
        return fingerprint


class CrawlState:
    """One run's breaker and report, found through the crawler by every
    component, whichever Scrapy builds first."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self._stub_rules = StubRules.from_settings(settings)
        self.pacing = Pacing.from_settings(settings)
        self._spider_stub_rules: StubRules | None = None
        bad_classes = settings.getlist("COMPLETENESS_BREAKER_BAD_CLASSES") or list(DEFAULT_BAD_CLASSES)
        self.breaker = FailureWindowBreaker(
            size=settings.getint("COMPLETENESS_BREAKER_SIZE", 200),
            threshold=settings.getfloat("COMPLETENESS_BREAKER_THRESHOLD", 0.35),
            min_samples=settings.getint("COMPLETENESS_BREAKER_MIN_SAMPLES", 50),
            pause_seconds=settings.getfloat("COMPLETENESS_BREAKER_PAUSE_SECONDS", 300.0),
            probe_size=settings.getint("COMPLETENESS_BREAKER_PROBE_SIZE", 20),
            max_failed_probes=settings.getint("COMPLETENESS_BREAKER_MAX_FAILED_PROBES", 3),
            bad_classes=bad_classes,
            series_every=settings.getint("COMPLETENESS_BREAKER_SERIES_EVERY", 200) or None,
            probe_timeout_seconds=settings.getfloat("COMPLETENESS_BREAKER_PROBE_TIMEOUT_SECONDS", 120.0),
        )
        # Requests given up while the breaker was running, with its progress
        # then: those in the stretch that trips it are redone after the pause.
        self.given_up: deque[tuple[int, Request]] = deque(maxlen=self.breaker.size)
        source = settings.get("COMPLETENESS_SOURCE")
        # The source slug may come from the spider later (spider_opened).
        self.report = RunReport(source or "pending", settings.get("COMPLETENESS_RUN_ID"), breaker=self.breaker)
        self.source_configured = bool(source)
        self.report.min_completeness = settings.getfloat("COMPLETENESS_MIN_COMPLETENESS", DEFAULT_MIN_COMPLETENESS)
        self.closing_requested = False
        self.close_reason: str | None = None  # set when closing starts (final_numbers)
        self.kinds = KindLedger(_fingerprinter(crawler))  # listing or record, learned; final outcomes by callback
        self.applied: Any = None  # the ledger's totals last added to the report (final_numbers)
        self.storage: Any = None  # storage.StorageOutcomes, once the extension runs
        # Scrapy's stats of the earlier parts of a crawl resumed from JOBDIR (jobdir), added to this part's.
        self.carried_stats: dict[str, int | float] = {}
        self.exit_code: int | None = None
        self.exit_why: str | None = None
        self.killed_report: dict[str, Any] | None = (
            None  # spooled when a signal stopped the run  # the exit code in words, for the runner
        )
        self.result: Any = None

    def stub_rules(self) -> StubRules:
        """The settings' rules with the spider's own markers over them."""
        if self._spider_stub_rules is None:
            spider = getattr(self.crawler, "spider", None)
            if spider is None:
                return self._stub_rules
            self._spider_stub_rules = self._stub_rules.with_spider(spider)
        return self._spider_stub_rules

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlState:
        state = getattr(crawler, _ATTR, None)
        if state is None:
            state = cls(crawler)
            setattr(crawler, _ATTR, state)
        return state

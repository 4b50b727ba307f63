"""BreakerMiddleware, the kit's failure-window breaker in the downloader.

At priority 560 it sits between RetryMiddleware (550) and the downloader, so
it sees every raw outcome, each retry included: it classifies it, feeds the failure-window breaker, holds
requests while the breaker is paused (the held requests occupy the
downloader's concurrency slots, so the engine stops pulling new ones: the
crawl pauses), lets a bounded probe through, re-queues requests that failed
during an outage without spending their retries (the run resumes exactly
where it stopped), redoes after the pause the ones given up in the stretch
that tripped it, and closes the spider when the breaker stops for good.
It also paces (see pacing): Retry-After holds a slot's requests here, and
the kit's adaptive delay, when enabled, follows every attempt's outcome.
A listing or record 200 without its declared marker, or under its declared
size, is a stub (see stubs): it is retried like a 5xx instead of reaching
the spider. (Final outcomes are
PageOutcomeMiddleware's, in page_outcomes.)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.python import global_object_name
from twisted.internet.task import deferLater

from ..breaker import BreakerState
from ..classes import classify_exception, classify_status
from .kinds import PAGE_KEY, is_robots_txt
from .page_outcomes import SHORT_BODY_KEY
from .state import CrawlState
from .stats_mapping import ROBOTS_EXCEPTION_PREFIX, ROBOTS_STATUS_PREFIX, SHORT_BODY_STAT

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

ADMISSION_KEY = "_completeness_admission"
SENT_AT_KEY = "_completeness_sent_at"  # for pacing: a failure raises the delay once per round trip
LATENCY_KEY = "download_latency"  # Scrapy's download handlers: from sending to the answer's headers
TAKEN_BACK_KEY = "_completeness_taken_back"
ROBOTS_HOPS_KEY = "_completeness_robots_hops"  # redirects of a robots.txt request counted so far
_ATTEMPT_KEYS = frozenset({ADMISSION_KEY, SHORT_BODY_KEY, "retry_times"})
BREAKER_CLOSE_REASON = "completeness_breaker_stopped"
_POLL_SECONDS = 0.05
_MAX_SLEEP_SLICE = 1.0  # wake up now and then to notice an engine that is closing


class BreakerStopped(IgnoreRequest):
    """Raised for requests refused after the breaker stopped the run."""


class BreakerMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.state = CrawlState.of(crawler)
        self.breaker = self.state.breaker
        self._fresh_waiting = 0  # requests at the gate for URLs not known to be broken

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BreakerMiddleware:
        if not crawler.settings.getbool("COMPLETENESS_ENABLED", True):
            raise NotConfigured
        middleware = cls(crawler)
        crawler.signals.connect(middleware.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(middleware.headers_received, signal=signals.headers_received)
        return middleware

    # -- admissions whose response never came back through here ---------------
    # A redirect (RedirectMiddleware 600, MetaRefreshMiddleware 580) is turned
    # into a new request before the response reaches this middleware. The new
    # request carries the old admission in its meta; it is recorded as ok (a
    # 3xx is a successful answer) when that request comes back, is ignored or
    # is dropped by the scheduler. Left unrecorded, a probe admission would
    # keep the probe waiting forever.

    def _settle_stale_admission(self, request: Request) -> None:
        stale = request.meta.pop(ADMISSION_KEY, None)
        if stale is not None:
            self.breaker.record("ok", stale)

    def request_dropped(self, request: Request, spider: Any = None) -> None:
        self._settle_stale_admission(request)

    # -- the gate -------------------------------------------------------------

    async def process_request(self, request: Request) -> None:
        self._settle_stale_admission(request)
        if is_robots_txt(request):
            self._count_robots_redirects(request)
        await self._wait_for_retry_after(request)
        fresh = not self.breaker.known_broken(request.url)
        self._fresh_waiting += fresh
        try:
            await self._gate(request)
        finally:
            self._fresh_waiting -= fresh
        # Each pass, retries too: a retry's meta is its first attempt's, sent before later raises.
        request.meta[SENT_AT_KEY] = self.state.pacing.sent_at()
        if self.state.pacing.enabled:
            # So is its download_latency, an earlier attempt's: dropped, so one there after the download
            # is this attempt's own (the download handler sets it when the answer's headers arrive).
            request.meta.pop(LATENCY_KEY, None)

    async def _gate(self, request: Request) -> None:
        announced_pause = False
        while True:
            admission = self.breaker.admit(request.url, fresh_waiting=self._fresh_waiting > 0)
            if admission.allowed:
                request.meta[ADMISSION_KEY] = admission
                return None
            if admission.stopped:
                self._close_spider()
                raise BreakerStopped("the failure-window breaker stopped the run")
            if self._engine_closing():
                # Closed for another reason (e.g. CLOSESPIDER_TIMEOUT) while paused.
                raise IgnoreRequest("the engine is closing while the breaker holds requests")
            if not announced_pause and admission.wait_seconds is not None:
                announced_pause = True
                logger.debug("breaker paused: holding %s for %.1fs", request.url, admission.wait_seconds)
            wait = admission.wait_seconds if admission.wait_seconds is not None else _POLL_SECONDS
            await self._sleep(min(max(wait, 0.0), _MAX_SLEEP_SLICE))

    async def _wait_for_retry_after(self, request: Request) -> None:
        downloader = getattr(getattr(self.crawler, "engine", None), "downloader", None)
        if downloader is None:
            return
        key = downloader.get_slot_key(request)
        while (left := self.state.pacing.wait_seconds(key)) > 0:
            if self._engine_closing():
                raise IgnoreRequest("the engine is closing while Retry-After holds requests")
            await self._sleep(min(left, _MAX_SLEEP_SLICE))

    def _pace(self, request: Request, request_class: str, response: Response | None = None) -> None:
        downloader = getattr(getattr(self.crawler, "engine", None), "downloader", None)
        if downloader is None:
            return
        key = downloader.get_slot_key(request)
        self.state.pacing.observe(
            key,
            downloader.slots.get(key),
            request_class,
            status=None if response is None else response.status,
            retry_after=None if response is None else response.headers.get("Retry-After"),
            url=request.url,
            sent_at=self._sent_at(request, response),
        )

    def headers_received(self, request: Request, **_: Any) -> None:
        """Dates the request by when its download began. The stamp of process_request is earlier: the
        request then waits in its download slot's queue, behind up to CONCURRENT_REQUESTS others at the
        slot's delay, so one sent after a raise made while it waited read as in flight before it, and a
        site refusing every request one at a time raised the delay once per queue, not per round trip."""
        stamped = request.meta.get(SENT_AT_KEY)
        latency = request.meta.get(LATENCY_KEY)  # set just before this signal (HTTP/1.1); HTTP/2 sets it later
        if stamped is not None and isinstance(latency, int | float) and not isinstance(latency, bool):
            # Here, when the headers have just come, not when the response is seen: behind a burst of
            # others in the reactor, that is later by more than a local site's whole latency.
            request.meta[SENT_AT_KEY] = max(stamped, self.state.pacing.sent_at() - latency)

    def _sent_at(self, request: Request, response: Response | None) -> float | None:
        stamped = request.meta.get(SENT_AT_KEY)
        timeout = request.meta.get("download_timeout")
        if response is None and stamped is not None and isinstance(timeout, int | float):
            # An exception comes at most the download timeout after sending (a timeout exactly that).
            return max(stamped, self.state.pacing.sent_at() - timeout)
        return stamped

    async def _sleep(self, seconds: float) -> None:
        from twisted.internet import reactor

        await maybe_deferred_to_future(deferLater(reactor, seconds, lambda: None))

    def _engine_closing(self) -> bool:
        engine = getattr(self.crawler, "engine", None)
        slot = getattr(engine, "_slot", None)
        return engine is None or slot is None or getattr(slot, "closing", None) is not None

    # -- robots.txt: no outcome of the run ------------------------------------
    # Scrapy's counters, which requests.by_class is read from, count every
    # attempt at robots.txt too; what they counted for it is counted here
    # apart, attempt by attempt, and taken off (stats_mapping).

    def _count_robots_redirects(self, request: Request) -> None:
        """A robots.txt redirect never comes back through here (RedirectMiddleware,
        at 600, turns its 3xx into this new request), yet Scrapy counted the 3xx."""
        reasons = request.meta.get("redirect_reasons") or ()
        for reason in reasons[request.meta.get(ROBOTS_HOPS_KEY, 0) :]:
            status = reason if isinstance(reason, int) else 200  # a meta refresh came in a 200
            self.crawler.stats.inc_value(f"{ROBOTS_STATUS_PREFIX}{status}")
        request.meta[ROBOTS_HOPS_KEY] = len(reasons)

    # -- outcomes -------------------------------------------------------------

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if is_robots_txt(request):
            self.crawler.stats.inc_value(f"{ROBOTS_STATUS_PREFIX}{response.status}")
        request_class = classify_status(response.status)
        stub = None
        if request_class == "ok" and response.status == 200 and (rules := self.state.stub_rules()).enabled:
            stub = rules.why_stub(response, self.state.kinds.known_kind(request))
            if stub is not None:
                request_class = "short_body"
        self._pace(request, request_class, response)
        follow_up = self._record(request, request_class)
        if follow_up is not None:
            return follow_up
        if stub is not None:
            self.crawler.stats.inc_value(SHORT_BODY_STAT)
            retry = get_retry_request(request, spider=self.crawler.spider, reason="short_body")
            if retry is not None:
                return retry
            request.meta[SHORT_BODY_KEY] = stub
        return response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        if isinstance(exception, IgnoreRequest):
            # Not a network outcome (our gate, offsite, robots.txt, too many redirects).
            self._settle_stale_admission(request)
            return None
        if is_robots_txt(request):
            self.crawler.stats.inc_value(f"{ROBOTS_EXCEPTION_PREFIX}{global_object_name(type(exception))}")
        request_class = classify_exception(exception)
        self._pace(request, request_class)
        return self._record(request, request_class)

    def _record(self, request: Request, request_class: str) -> Request | None:
        admission = request.meta.pop(ADMISSION_KEY, None)
        before = self.breaker.state
        after = self.breaker.record(request_class, admission, key=request.url)
        if after is not before:
            self._log_change(before, after)
            if before is BreakerState.RUNNING and after is BreakerState.PAUSED:
                self._take_back_given_up()
        if after is BreakerState.STOPPED:
            self._close_spider()
            return None
        if after is not BreakerState.RUNNING and self.breaker.is_bad(request_class):
            if request_class == "short_body":
                self.crawler.stats.inc_value(SHORT_BODY_STAT)
            # The outage is the breaker's business: redo this request after the
            # pause instead of spending its retries or losing it.
            self.crawler.stats.inc_value("completeness/requeued_by_breaker")
            return request.replace(dont_filter=True)
        return None

    def _take_back_given_up(self) -> None:
        """Redo after the pause what the outage took before the breaker saw it.

        The window needs `min_samples` outcomes to trip, and a URL retried at
        once can spend all its attempts among them: without this, a healed
        outage still loses the records it hit first. Each request is taken
        back once, so a page that is broken for good is given up again.
        """
        engine = self.crawler.engine
        since = self.breaker.seq - self.breaker.size
        given_up = self.state.given_up
        while given_up:
            seq, request = given_up.popleft()
            if seq < since or request.meta.get(TAKEN_BACK_KEY) or engine is None:
                continue
            if not self.state.kinds.take_back(request):
                continue
            meta = {k: v for k, v in request.meta.items() if k not in _ATTEMPT_KEYS}
            meta[TAKEN_BACK_KEY] = True
            self.crawler.stats.inc_value("completeness/taken_back_by_breaker")
            logger.info("redoing after the pause, given up as the outage began: %s", request.url)
            engine.crawl(request.replace(meta=meta, dont_filter=True))

    def _log_change(self, before: BreakerState, after: BreakerState) -> None:
        event = self.breaker.events[-1] if self.breaker.events else {}
        logger.warning("failure-window breaker: %s -> %s (%s)", before.value, after.value, event)

    def _close_spider(self) -> None:
        if self.state.closing_requested:
            return
        self.state.closing_requested = True
        engine = self.crawler.engine
        if engine is None or getattr(engine, "_slot", None) is None:
            return
        logger.error("failure-window breaker stopped the run after failed probes; closing the spider")
        # Not awaited: closing waits for in-flight downloads, this one included.
        deferred_from_coro(engine.close_spider_async(reason=BREAKER_CLOSE_REASON))


__all__: list[Any] = ["BREAKER_CLOSE_REASON", "PAGE_KEY", "BreakerMiddleware", "BreakerStopped"]

"""Listing or record, learned from the crawl itself.

No third-party spider tags its requests, so the kit watches what each
callback yields (KindLearningMiddleware, a spider middleware next to the
spider): a callback that yields items is a record callback; one that yields
requests and never an item is a listing callback. A request takes the kind
of its callback, a CrawlSpider request the kind of its rule (a rule that
follows links is a listing unless its callback yields items). Start
requests are listings unless their callback yields items. A tag
(meta["completeness_kind"]) always wins.

A request may fail before its callback ever ran, so final outcomes are kept
by callback (`KindLedger`) and judged when the run's numbers are asked for:
a listing that failed after retries is a lost page (named), a record that
failed is a lost record, a record's 404/410 is removed.

`pages` counts the source's listing pages, not the crawl's responses: a page
is known by its request fingerprint, and one fetched twice (Scrapy does not
record start requests in its duplicate filter, so a first page that links to
itself is fetched again) counts once. A page is lost only if no fetch of it
ever succeeded: one that failed and then answered on another try is fetched,
so `fetched + lost` never exceeds the distinct pages the crawl tried.
Records are counted the same way: a record that failed and then answered
(a request sent again with `dont_filter`) is not lost, and one that failed
twice is one record lost.

Memory: fingerprints of the pages fetched under listing callbacks (or
callbacks not known yet; forgotten once a callback is known to yield items),
and URLs only for failures and for listing pages (or pages whose callback is
not known yet) scheduled and not yet settled.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scrapy import Request
from scrapy.utils.request import fingerprint as default_fingerprint

from .kinds import LISTING, OTHER, RECORD, callback_key, fixed_kind

FIXED = "="  # prefix of the keys of tagged (or recognisably "other") requests

# Final outcomes of a request, after retries.
OK, GONE, FAILED, ODD = "ok", "gone", "failed", "odd"  # 2xx; 404/410; error or stub; 1xx/3xx not followed
# A 404/410 the spider named as a status it handles (handle_httpstatus_list), so its callback read it:
# for a listing, the source's own "no such page", as a walk over page=1, 2, ... ends; a record's is removed.
READ_GONE = "read_gone"


@dataclass
class Totals:
    pages_fetched: int = 0
    lost_urls: list[str] = field(default_factory=list)
    unfetched_urls: list[str] = field(default_factory=list)
    removed: int = 0
    records_lost: int = 0
    errors: Counter[str] = field(default_factory=Counter)


# A failed request as kept: (url, outcome, why, fingerprint).
Failure = tuple[str, str, str, bytes]


class KindLedger:
    def __init__(self, fingerprint: Callable[[Request], bytes] = default_fingerprint) -> None:
        # The crawler's fingerprinter, where there is one: a page is what its duplicate filter calls one.
        self.fingerprint = fingerprint
        self.items_seen: set[str] = set()
        self.requests_seen: set[str] = set()
        self.start_keys: set[str] = set()
        self.spider: Any = None
        # Pages that answered, by key, while the key may be a listing's: its kind is judged at the end.
        self.fetched: defaultdict[str, set[bytes]] = defaultdict(set)
        self.failures: defaultdict[str, list[Failure]] = defaultdict(list)
        # Listing-or-unknown URLs scheduled and not settled, with how often they were
        # offered to the scheduler: request_scheduled fires before the duplicate filter.
        self.pending: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.errors: Counter[str] = Counter()  # callbacks that raised, by key
        # Failures taken back to be redone: they count until the redo settles.
        self.redoing: dict[tuple[str, str], Failure] = {}
        # Fingerprints that failed, and those of them a later request fetched: a record is lost only if
        # no fetch of it answered. Successes are not kept (a crawl fetches millions of records).
        self.failed_fingerprints: set[bytes] = set()
        self.answered_after_failing: set[bytes] = set()

    # -- keys and kinds -------------------------------------------------------

    def key(self, request: Request) -> str:
        fixed = fixed_kind(request)
        return FIXED + fixed if fixed else callback_key(request)

    def kind_of_key(self, key: str) -> str:
        return self.known_kind_of_key(key) or RECORD

    def known_kind_of_key(self, key: str) -> str | None:
        """The key's kind if a tag, the crawl or a start request has shown it; else None."""
        if key.startswith(FIXED):
            return key[1:]
        if key in self.items_seen:
            return RECORD
        if key in self.requests_seen or key in self.start_keys or self._rule_follows(key):
            return LISTING
        return None

    def kind(self, request: Request) -> str:
        """What this request is, as far as the crawl has shown so far."""
        return self.kind_of_key(self.key(request))

    def known_kind(self, request: Request) -> str | None:
        return self.known_kind_of_key(self.key(request))

    def _rule_follows(self, key: str) -> bool:
        if not key.startswith("rule:"):
            return False
        rules = getattr(self.spider, "_rules", None) or ()
        try:
            rule = rules[int(key[5:])]
        except (ValueError, IndexError):
            return False
        return bool(getattr(rule, "follow", False))

    # -- learning -------------------------------------------------------------

    def learned_item(self, key: str) -> None:
        if key not in self.items_seen:
            self.items_seen.add(key)
            self.pending.pop(key, None)  # records are never lost pages
            self.fetched.pop(key, None)  # nor fetched ones

    def learned_request(self, key: str) -> None:
        self.requests_seen.add(key)

    def start_request(self, request: Request) -> None:
        self.start_keys.add(callback_key(request))

    # -- outcomes -------------------------------------------------------------

    def _counts_as_page(self, key: str) -> bool:
        """Whether the key may be a listing's (its kind may still be learned)."""
        return key not in self.items_seen and key not in (FIXED + RECORD, FIXED + OTHER)

    def scheduled(self, request: Request) -> None:
        key = self.key(request)
        if not self._counts_as_page(key):
            return
        fingerprint = self.fingerprint(request)
        if any(fingerprint in pages for pages in self.fetched.values()):
            return  # fetched already: a fetch again that never happens loses nothing
        self.pending[key][request.url] += 1

    def dropped(self, request: Request) -> None:
        """The scheduler refused a request it was offered (a duplicate)."""
        pending = self.pending.get(self.key(request))
        if pending and request.url in pending:
            pending[request.url] -= 1
            if pending[request.url] <= 0:
                del pending[request.url]

    def settled(self, request: Request, outcome: str, why: str = "") -> str:
        """Note a final outcome; returns the key it is kept under."""
        key = self.key(request)
        self.redoing.pop((key, request.url), None)
        pending = self.pending.get(key)
        if pending:
            # A redirected page arrives under its new URL; the URLs it came from are settled too.
            pending.pop(request.url, None)
            for url in request.meta.get("redirect_urls", ()):
                pending.pop(url, None)
        if outcome == OK:
            page = self._counts_as_page(key)
            # Fingerprinted once, and only where a page is kept or a failure may have been answered.
            if page or self.failed_fingerprints:
                fingerprint = self.fingerprint(request)
                if page:
                    self.fetched[key].add(fingerprint)
                if fingerprint in self.failed_fingerprints:
                    self.answered_after_failing.add(fingerprint)
        elif key != FIXED + OTHER:
            fingerprint = self.fingerprint(request)
            self.failed_fingerprints.add(fingerprint)
            self.failures[key].append((request.url, outcome, why, fingerprint))
        return key

    def take_back(self, request: Request) -> bool:
        """Hold a failure while it is redone; False if there was none.

        It still counts as a failure until the redo settles, so a redo the
        crawl never reaches (a breaker stop, an early close) loses nothing."""
        key = self.key(request)
        entries = self.failures.get(key, [])
        for index in range(len(entries) - 1, -1, -1):
            url, outcome, _, _ = entries[index]
            if url == request.url and outcome == FAILED:
                self.redoing[(key, url)] = entries.pop(index)
                return True
        return False

    def callback_raised(self, request: Request | None) -> None:
        self.errors[self.key(request) if request is not None else FIXED + OTHER] += 1

    def totals(self) -> Totals:
        totals = Totals()
        failures = defaultdict(list, {key: list(entries) for key, entries in self.failures.items()})
        for (key, _), entry in self.redoing.items():
            failures[key].append(entry)
        kinds = {key: self.kind_of_key(key) for key in {*self.fetched, *failures, *self.pending, *self.errors}}
        # One page fetched under two listing callbacks (a start callback and the pager's) is one page.
        fetched: set[bytes] = set()
        for key, pages in self.fetched.items():
            if kinds[key] == LISTING:
                fetched |= pages
        totals.pages_fetched = len(fetched)
        lost_pages: set[bytes] = set()
        # A record's outcomes over all its tries: answered once, it is there; gone once, it was removed.
        record_outcomes: defaultdict[bytes, set[str]] = defaultdict(set)
        for key, entries in failures.items():
            for url, outcome, _, fingerprint in entries:
                if kinds[key] == LISTING:
                    if outcome == READ_GONE:
                        continue
                    # Lost only if no fetch of it answered, and named once however often it failed.
                    if fingerprint not in fetched and fingerprint not in lost_pages:
                        lost_pages.add(fingerprint)
                        totals.lost_urls.append(url)
                elif kinds[key] == RECORD and fingerprint not in self.answered_after_failing:
                    record_outcomes[fingerprint].add(GONE if outcome == READ_GONE else outcome)
        totals.removed = sum(GONE in outcomes for outcomes in record_outcomes.values())
        totals.records_lost = sum(FAILED in outcomes and GONE not in outcomes for outcomes in record_outcomes.values())
        lost = set(totals.lost_urls)
        totals.unfetched_urls = sorted(
            {url for key, urls in self.pending.items() if kinds[key] == LISTING for url in urls} - lost
        )
        for key, count in self.errors.items():
            totals.errors[kinds[key]] += count
        return totals

    # -- a crawl paused and resumed (JOBDIR) -----------------------------------

    def to_saved(self) -> dict[str, Any]:
        """What the ledger learned and settled so far, as JSON, for the next part of the crawl: its
        listing pages still waiting in Scrapy's saved queue are settled there, and counted once."""
        failures = {
            key: [[url, outcome, why, fp.hex()] for url, outcome, why, fp in entries]
            for key, entries in self.failures.items()
        }
        return {
            "items_seen": sorted(self.items_seen),
            "requests_seen": sorted(self.requests_seen),
            "start_keys": sorted(self.start_keys),
            "fetched": {key: sorted(fp.hex() for fp in pages) for key, pages in self.fetched.items() if pages},
            "failures": {key: entries for key, entries in failures.items() if entries},
            "pending": {key: dict(urls) for key, urls in self.pending.items() if urls},
            "errors": dict(self.errors),
            # A failure held for a redo counts until the redo answers: the redo waits in Scrapy's saved
            # queue, and its answer in the next part settles it as any later answer does.
            "redoing": [
                [key, url, outcome, why, fp.hex()] for (key, _), (url, outcome, why, fp) in self.redoing.items()
            ],
            "failed_fingerprints": sorted(fp.hex() for fp in self.failed_fingerprints),
            "answered_after_failing": sorted(fp.hex() for fp in self.answered_after_failing),
        }

    def restore(self, saved: dict[str, Any]) -> None:
        self.items_seen |= set(saved["items_seen"])
        self.requests_seen |= set(saved["requests_seen"])
        self.start_keys |= set(saved["start_keys"])
        for key, pages in saved["fetched"].items():
            self.fetched[key] |= {bytes.fromhex(fp) for fp in pages}
        for key, entries in saved["failures"].items():
            self.failures[key] += [(url, outcome, why, bytes.fromhex(fp)) for url, outcome, why, fp in entries]
        for key, urls in saved["pending"].items():
            self.pending[key].update(urls)
        self.errors.update(saved["errors"])
        for key, url, outcome, why, fp in saved["redoing"]:
            self.failures[key].append((url, outcome, why, bytes.fromhex(fp)))
        self.failed_fingerprints |= {bytes.fromhex(fp) for fp in saved["failed_fingerprints"]}
        self.answered_after_failing |= {bytes.fromhex(fp) for fp in saved["answered_after_failing"]}

    def why(self, key: str) -> dict[str, str]:
        """Each learned callback's kind, for the report's meta (how the kit read the spider)."""
        return {
            k: self.kind_of_key(k)
            for k in sorted({*self.items_seen, *self.requests_seen, *self.start_keys})
            if not k.startswith(FIXED)
        }

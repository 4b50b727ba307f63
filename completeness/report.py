"""The run report, version 1: the wire contract of docs/api.md as pydantic models.

Pure: no Django here, so the verdict engine and the API share one definition of a valid report.
Reports are validated in strict mode from JSON: "12" is not a count and true is not an exit code.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal
from urllib.parse import unquote

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

SLUG_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
# Identifiers (run ids, batch, field, outcome and counter names, proxy ids) are visible text: no
# control, format (zero-width space U+200B, direction overrides U+202E, soft hyphen) or line and
# paragraph separator characters, which make two different names look the same or reorder what is
# shown around them. A pattern, so pydantic checks it in Rust; the error is reworded where it is
# reported (see invisible_character). The categories Cc, Cf, Zl and Zp of Unicode 14 spelled out as
# ranges rather than as \p{Cf}, which the OpenAPI document's readers (Python's re, JavaScript without
# the u flag) do not know.
_INVISIBLE_RANGES = (
    r"\u0000-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    r"\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
VISIBLE_PATTERN = f"^[^{_INVISIBLE_RANGES}]*$"
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=VISIBLE_PATTERN)]
Ratio = Annotated[float, Field(ge=0.0, le=1.0)]
FieldName = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=VISIBLE_PATTERN)]


def invisible_character(text: str) -> str | None:
    """The first character of `text` an identifier may not hold, as U+XXXX; None when it has none."""
    for char in text:
        if unicodedata.category(char) in INVISIBLE_CATEGORIES:
            return f"U+{ord(char):04X}"
    return None


def json_kind(value: object) -> str:
    """What a parsed JSON value is, in JSON's words (a client may not be written in Python)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"


# A meta value as the document shows it: the validator below checks it, one error per bad key (a
# str | int | float union would answer each bad value three times over), and the OpenAPI document had
# said "any value", so a client generated from it sent objects and booleans the service refuses.
MetaValue = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "string", "maxLength": 1000}, {"type": "number"}]})]


# Optional fields added to version 1 after its first release: a report without them is the same
# value it was before they existed (see the ingest path's digest).
LATER_OPTIONAL_FIELDS = ("records_lost", "end_reason")
EndReason = Annotated[str, StringConstraints(min_length=1, max_length=100)]
MAX_FIELDS = 200
# A run's own instants must be plausible: a report dated years ahead would stay the source's
# "latest run" until then. The upper bound needs the server's clock, passed as validation context
# {"now": datetime}; without it only the lower bound applies.
EARLIEST_RUN = datetime(2000, 1, 1, tzinfo=UTC)
MAX_AHEAD = timedelta(hours=24)


def _storable(value: datetime) -> datetime:
    # Year 9999 at -14:00 is year 10000 in UTC: refuse what the database cannot hold.
    if not 1970 <= value.year <= 9000:
        raise ValueError("timestamp must lie between the years 1970 and 9000")
    # One spelling per instant, so equal reports are equal values (the repeat check compares them).
    return value.astimezone(UTC)


Timestamp = Annotated[AwareDatetime, AfterValidator(_storable)]
# Counts are stored in 32-bit columns; a larger one is a bug in the crawler, not a crawl.
MAX_COUNT = 2_147_483_647
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]

RequestClass = Literal[
    "ok",
    "not_found",
    "http_5xx",
    "http_429",
    "http_4xx_other",
    "timeout",
    "connection_reset",
    "connection_refused",
    "short_body",
    "other",
]
DEFAULT_BAD_CLASSES: tuple[str, ...] = (
    "http_5xx",
    "http_429",
    "timeout",
    "connection_reset",
    "connection_refused",
    "short_body",
)
ProxyState = Literal["eligible", "cooling", "probe_allowed", "excluded"]
ProxyReason = Literal[
    "connect_refused",
    "connect_timeout",
    "auth_rejected",
    "slow_body",
    "destination_http_error",
    "probe_succeeded",
    "probe_failed",
    "cooldown_expired",
    "operator_removed",
    "account_revoked",
]
ProxyStage = Literal["connect", "tls", "auth", "request", "body", "probe", "operator"]
SnapshotAction = Literal["replaced", "kept_previous", "appended", "none"]
BreakerEventKind = Literal["tripped", "probe", "resumed", "stopped"]

_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def carries_credentials(proxy: str) -> bool:
    """Whether a proxy id looks like a proxy URL with its credentials pasted in: `user:pass@host`,
    whatever the password holds (`/`, spaces, `@`), percent-encoded (`user%3Apass@host`) or after a
    scheme (`http://user@host`). An `@` alone is no credential: `exit-1@pool-ae` is an opaque id."""
    text = proxy
    for _ in range(3):  # %253A is %3A is ':'
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    if "@" not in text:
        return False
    scheme = _URL_SCHEME.match(text)
    userinfo = text[scheme.end() if scheme else 0 : text.rindex("@")]
    return scheme is not None or ":" in userinfo


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Requests(_Strict):
    total: Count | None = None
    by_class: dict[RequestClass, Count] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _classes_within_total(self) -> Requests:
        # The classes count requests: they cannot sum past the total told beside them, nor stand
        # for a total no count column holds (it is stored as their sum when total is left out).
        counted = sum(self.by_class.values())
        if self.total is not None and counted > self.total:
            raise ValueError(f"by_class sums to {counted:,}, more than total ({self.total:,})")
        if counted > MAX_COUNT:
            raise ValueError(f"by_class sums to {counted:,}, more than a count holds ({MAX_COUNT:,})")
        return self

    @property
    def effective_total(self) -> int:
        return self.total if self.total is not None else sum(self.by_class.values())


class Pages(_Strict):
    expected: Count | None = None
    fetched: Count = 0
    lost: Count = 0
    lost_urls: list[Annotated[str, StringConstraints(max_length=2000)]] = Field(default_factory=list, max_length=10_000)

    @field_validator("lost_urls")
    @classmethod
    def _urls_within_lost(cls, value: list[str], info: ValidationInfo) -> list[str]:
        # lost_urls names lost pages (a crawler may name fewer, not more): with lost 0 and three URLs
        # no rule fired, and with lost 1 the finding read "1 listing page(s) ...: a, b, c".
        lost = info.data.get("lost")
        if lost is not None and len(value) > lost:
            raise ValueError(f"names {len(value)} lost pages, more than lost ({lost})")
        return value


class FailedBatch(_Strict):
    name: Name
    rows: Count = 0
    error: Annotated[str, StringConstraints(max_length=2000)] = ""


class Delivery(_Strict):
    attempted: Count
    delivered: Count
    errors: dict[Name, Count] = Field(default_factory=dict)

    @field_validator("delivered")
    @classmethod
    def _delivered_within_attempted(cls, value: int, info: ValidationInfo) -> int:
        attempted = info.data.get("attempted")
        if attempted is not None and value > attempted:
            raise ValueError(f"delivered ({value}) cannot exceed attempted ({attempted})")
        return value


class Snapshot(_Strict):
    action: SnapshotAction
    rows: Count | None = None


class BreakerEvent(_Strict):
    at: Timestamp
    seq: Count
    kind: BreakerEventKind
    ratio: Ratio | None = None
    samples: Count | None = None
    sent: Count | None = None
    bad: Count | None = None


class FailureWindow(_Strict):
    size: Annotated[int, Field(gt=0, le=MAX_COUNT)] | None = None
    threshold: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    min_samples: Count | None = None
    bad_classes: list[RequestClass] | None = None
    events: list[BreakerEvent] = Field(default_factory=list, max_length=10_000)
    series: list[tuple[Count, Ratio]] = Field(default_factory=list, max_length=10_000)

    @property
    def last_event(self) -> BreakerEvent | None:
        # Events are told in order, but a crawler that merges workers' logs may not sort them. Of events
        # at one instant and request, the one told last is last: a clock of seconds (or Windows' 15 ms)
        # gives the last failed probe and the stop it causes one `at`, and a failed probe advances no
        # `seq`; the probe, told first, was taken for the last event and a stopped run judged complete.
        return max(reversed(self.events), key=lambda e: (e.at, e.seq), default=None)


class ProxyTransition(_Strict):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    proxy: Name
    at: Timestamp
    from_state: ProxyState = Field(alias="from")
    to_state: ProxyState = Field(alias="to")
    reason: ProxyReason
    stage: ProxyStage
    until: Timestamp | None = None

    @field_validator("proxy")
    @classmethod
    def _no_credentials(cls, value: str) -> str:
        if carries_credentials(value):
            raise ValueError("proxy id looks like it carries credentials (user:pass@); send an opaque id")
        return value


class Pacing(_Strict):
    backoff: Annotated[float, Field(gt=1.0)]
    recovery: Annotated[float, Field(gt=0.0, lt=1.0)]


class RunReport(_Strict):
    # Unknown top-level fields are kept in the raw report and named back to the crawler
    # rather than refused: a newer crawler kit must not be locked out by an older server.
    # The attribute docstrings are the OpenAPI document's descriptions (a generated client's docs).
    model_config = ConfigDict(strict=True, extra="allow", frozen=True, use_attribute_docstrings=True)

    source: Slug
    """Which source this run crawled (a slug)."""
    run_id: Name
    """Your id for this run, unique within the source: the idempotency key. A re-run of one slot gets a new one."""
    started_at: Timestamp
    """When the run started, with its UTC offset."""
    finished_at: Timestamp
    """When it finished, not before started_at."""
    exit_code: Annotated[int, Field(ge=-MAX_COUNT, le=MAX_COUNT)] | None = None
    """The exit status the crawler gives its scheduler; 0 means "I think I succeeded"."""
    crawler_verdict: Literal["complete", "incomplete"] | None = None
    """What the crawler itself believes about the run; incomplete is never judged complete."""
    paused: bool = False
    """Paused or skipped on purpose: judged paused, and the source paused until a report without it."""
    pause_reason: Annotated[str, StringConstraints(max_length=2000)] | None = None
    """Why it was paused, shown to operators."""
    declared_total: Count | None = None
    """How many records the source itself announced ("9,000 results"); null when it announces none."""
    collected: Count
    """Distinct records the crawler collected."""
    written: Count | None = None
    """Records the crawler persisted to its own store; fewer than collected is a failed write."""
    # Record pages that still failed after retries: loss the crawler knows of (not attrition).
    records_lost: Count | None = None
    """Records the crawler could not get after retries (not listing pages: pages.lost). Above 0 is loss."""
    # The crawl's own finish reason (Scrapy's `finished`, `closespider_itemcount`, `shutdown`, ...).
    end_reason: EndReason | None = None
    """Why the crawl ended, in the crawler's words (Scrapy's finished, shutdown, ...)."""
    removed: Count = 0
    """Records that vanished at the source during the run (404/410, delisted): attrition, off declared_total."""
    requests: Requests | None = None
    """Requests by outcome class; total may be left out (then the sum of by_class)."""
    pages: Pages | None = None
    """Listing pages: lost counts those that failed after retries (never "the end of the listing")."""
    failed_batches: list[FailedBatch] = Field(default_factory=list, max_length=10_000)
    """Store writes that failed."""
    delivery: Delivery | None = None
    """The hand-off to a downstream system; delivered may not exceed attempted."""
    snapshot: Snapshot | None = None
    """What the crawler did to its published snapshot: replaced while incomplete is data loss."""
    failure_window: FailureWindow | None = None
    """The crawler's rolling error-rate breaker: its settings, events and series."""
    proxy_transitions: list[ProxyTransition] = Field(default_factory=list, max_length=50_000)
    """Proxy pool state changes during the run."""
    pacing: Pacing | None = None
    """The crawler's adaptive delay multipliers (after a failure, after a success)."""
    outcomes: dict[Name, Count] = Field(default_factory=dict)
    """Mutually exclusive outcomes of the units the run considered, each counted once; the answer gives shares."""
    counters: dict[Name, Count] = Field(default_factory=dict)
    """Any other counters: stored and shown, never part of a denominator."""
    meta: dict[Name, MetaValue] = Field(default_factory=dict, max_length=50)
    """Free-form facts about the run (crawler version, host): strings or numbers, at most 50 keys."""
    # None (not reported) differs from {} (counted, nothing filled): only a report that counts fields
    # can be judged by field_coverage.
    fields: dict[FieldName, Count] | None = Field(default=None, max_length=MAX_FIELDS)
    """Field coverage: in how many collected records each field is filled; judged against its own normal."""

    @field_validator("started_at", "finished_at")
    @classmethod
    def _plausible_instant(cls, value: datetime, info: ValidationInfo) -> datetime:
        if value <= EARLIEST_RUN:
            raise ValueError("must be after 2000-01-01T00:00:00Z")
        now = (info.context or {}).get("now")
        if now is not None and value > now + MAX_AHEAD:
            raise ValueError(f"must be at most 24 hours ahead of the server's clock ({now.isoformat()})")
        return value

    @field_validator("finished_at")
    @classmethod
    def _finished_after_started(cls, value: datetime, info: ValidationInfo) -> datetime:
        started = info.data.get("started_at")
        if started is not None and value < started:
            raise ValueError("finished_at must not be earlier than started_at")
        return value

    @field_validator("fields")
    @classmethod
    def _fields_within_collected(cls, value: dict[str, int] | None, info: ValidationInfo) -> dict[str, int] | None:
        collected = info.data.get("collected")
        if value is None or collected is None:
            return value
        over = sorted(name for name, count in value.items() if count > collected)
        if over:
            # One error per field (sources.ingest.errors expands `names`), each naming fields.<name>.
            raise PydanticCustomError(
                "field_count_over_collected",
                "a field cannot be filled in more records than were collected ({collected})",
                {"collected": collected, "names": over},
            )
        return value

    @field_validator("meta")
    @classmethod
    def _meta_values_are_strings_or_numbers(cls, value: dict[str, Any]) -> dict[str, Any]:
        # One clear error per bad key, rather than one per member of a str|int|float union; every bad
        # key, each named meta.<key> (sources.ingest.errors expands `problems`): stopping at the first
        # left a crawler to find the next one by posting again.
        problems: dict[str, str] = {}
        for key, item in value.items():
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                problems[key] = f"must be a string or a number, not {json_kind(item)}"
            elif isinstance(item, str) and len(item) > 1000:
                problems[key] = "is longer than 1000 characters"
        if problems:
            raise PydanticCustomError(
                "meta_value",
                "a meta value must be a string or a number of at most 1000 characters",
                {"problems": problems},
            )
        return value

    @property
    def unknown_fields(self) -> list[str]:
        return sorted((self.model_extra or {}).keys())

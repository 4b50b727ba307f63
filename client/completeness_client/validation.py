"""Local validation of a run report (spec run-report-v1).

Catches locally what the service would answer 422 for, so a crawler learns of
a bad report before the run ends rather than from a rejected post.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .classes import REQUEST_CLASSES
from .fields import MAX_FIELDS, MAX_NAME_LENGTH
from .proxies import STAGES, TRANSITION_REASONS, ProxyState, proxy_id_has_credentials

SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
CRAWLER_VERDICTS = ("complete", "incomplete")
SNAPSHOT_ACTIONS = ("replaced", "kept_previous", "appended", "none")
EVENT_KINDS = ("tripped", "probe", "resumed", "stopped")
PROXY_STATES = tuple(state.value for state in ProxyState)
MAX_META_KEYS = 50
MAX_SERIES_POINTS = 10_000
MAX_BATCH_NAME_LENGTH = 200
MAX_TEXT_LENGTH = 2_000  # a batch's error, a pause reason
# The service's limits (completeness/report.py), held equal by tests/test_client_server_vocabulary.py.
MAX_COUNT = 2_147_483_647
MAX_KEY_LENGTH = 200  # outcome, counter, meta and delivery error names, proxy ids
MAX_META_VALUE_LENGTH = 1_000
MAX_LOST_URLS = 10_000
MAX_LOST_URL_LENGTH = 2_000
MAX_ITEMS = 10_000  # failed batches, breaker events
MAX_PROXY_TRANSITIONS = 50_000
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
# The service refuses an instant further ahead of its clock than this; the kit checks against this
# machine's, which a crawler's timestamps come from.
MAX_AHEAD = timedelta(hours=24)
# The instants the service reads (RFC 3339, as its parser takes it): a date, "T", "t", "_" or a space,
# hours and minutes, seconds with a fraction after "." or ",", and "Z" or an offset of hours and
# minutes. Python's fromisoformat also reads "+04", "20260915T030000Z", week dates and any separator,
# which the service answers 422.
_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt _]\d{2}:\d{2}(?::\d{2}(?:(?P<fraction>[.,]\d+))?)?(?:[Zz]|[+-]\d{2}:?\d{2})",
    re.ASCII,
)
# Control, format and separator characters: run1 and run\u200b1 would be two runs that look the same.
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


# The keys of each object of the report: a key outside them is refused (the service's 422), so a
# misspelt `pages.lsot` is named here, before the run ends. Held equal to the service's models by
# tests/test_client_server_vocabulary.py.
OBJECT_KEYS = {
    "requests": ("total", "by_class"),
    "pages": ("expected", "fetched", "lost", "lost_urls"),
    "failed_batches[]": ("name", "rows", "error"),
    "delivery": ("attempted", "delivered", "errors"),
    "snapshot": ("action", "rows"),
    "failure_window": ("size", "threshold", "min_samples", "bad_classes", "events", "series"),
    "failure_window.events[]": ("at", "seq", "kind", "ratio", "samples", "sent", "bad"),
    "proxy_transitions[]": ("proxy", "at", "from", "to", "reason", "stage", "until"),
    "pacing": ("backoff", "recovery"),
}


def invisible_character(text: str) -> str | None:
    """The first character of an identifier the service refuses, as U+XXXX; None when it has none."""
    return next((f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in INVISIBLE_CATEGORIES), None)


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ReportInvalid(ValueError):
    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("invalid run report: " + "; ".join(str(e) for e in errors))
        self.errors = errors


def is_integer(value: Any) -> bool:
    """An int, not a bool (True is an int to Python, never a count to the contract)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_aware(value: Any) -> datetime | None:
    """The datetime of an ISO 8601 string with an offset, else None."""
    if not isinstance(value, str):
        return None
    shape = _INSTANT.fullmatch(value)
    if shape is None:
        return None
    if shape["fraction"]:
        # Python reads at most microseconds, after a dot; the service takes any digits and cuts them.
        start, end = shape.span("fraction")
        value = f"{value[:start]}.{value[start + 1 : end][:6]}{value[end:]}"
    try:
        # The service reads RFC 3339, where "z" (and "t") may be lower case.
        moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        return None
    return moment


class _Checker:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def fail(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path, message))

    def count(
        self, obj: dict[str, Any], key: str, path: str, *, required: bool = False, nullable: bool = False
    ) -> None:
        if key not in obj:
            if required:
                self.fail(path, "required")
            return
        value = obj[key]
        if value is None and nullable:
            return
        if not is_integer(value):
            # A number read from a page is text until converted: say so, the commonest cause.
            text = f" (got the text {value[:40]!r}: convert it with int())" if isinstance(value, str) else ""
            self.fail(path, "must be an integer" + (" or null" if nullable else "") + text)
        elif value < 0:
            self.fail(path, "must not be negative")
        elif value > MAX_COUNT:
            self.fail(path, f"must be at most {MAX_COUNT}")

    def keys(self, obj: dict[str, Any], kind: str, path: str) -> None:
        """Keys of `obj` that an object of `kind` (an OBJECT_KEYS entry) does not take."""
        allowed = OBJECT_KEYS[kind]
        for key in obj:
            if key not in allowed:
                self.fail(f"{path}.{key}", f"unknown field; the fields here: {', '.join(allowed)}")

    def name(self, value: Any, path: str, max_length: int = MAX_KEY_LENGTH) -> None:
        """An identifier: 1 to `max_length` characters of visible text."""
        if not isinstance(value, str) or not 1 <= len(value) <= max_length:
            self.fail(path, f"must be a string of 1 to {max_length} characters")
        elif found := invisible_character(value):
            self.fail(path, f"contains an invisible or direction-changing character ({found})")

    def most(self, value: list[Any], limit: int, path: str) -> None:
        if len(value) > limit:
            self.fail(path, f"at most {limit} items")

    def timestamp(self, obj: dict[str, Any], key: str, path: str, *, required: bool = False) -> datetime | None:
        if key not in obj:
            if required:
                self.fail(path, "required")
            return None
        moment = parse_aware(obj[key])
        if moment is None:
            self.fail(path, "must be an ISO 8601 timestamp with an offset")
        elif moment <= EARLIEST:
            self.fail(path, "must be after 2000-01-01T00:00:00Z")
        return moment

    def enum(self, value: Any, allowed: tuple[str, ...], path: str) -> None:
        if value not in allowed:
            self.fail(path, f"must be one of {', '.join(allowed)}")

    def object(self, obj: dict[str, Any], key: str, *, nullable: bool = True) -> dict[str, Any] | None:
        """The object under `key`; None when it is absent or (`nullable`: as the service reads the
        report's optional objects) null. Its keys are checked where its shape is fixed."""
        if key not in obj or (nullable and obj[key] is None):
            return None
        value = obj[key]
        if not isinstance(value, dict):
            self.fail(key, "must be an object")
            return None
        if key in OBJECT_KEYS:
            self.keys(value, key, key)
        return value

    def counter_map(self, value: Any, path: str, allowed_keys: tuple[str, ...] | None = None) -> None:
        if not isinstance(value, dict):
            self.fail(path, "must be an object of non-negative integers")
            return
        for name, count in value.items():
            if allowed_keys is not None and name not in allowed_keys:
                self.fail(f"{path}.{name}", f"unknown key; one of {', '.join(allowed_keys)}")
            elif allowed_keys is None:
                self.name(name, f"{path}.{name}")
            if not is_integer(count) or not 0 <= count <= MAX_COUNT:
                self.fail(f"{path}.{name}", f"must be an integer from 0 to {MAX_COUNT}")


def validate_report(report: Any, *, now: datetime | None = None) -> list[FieldError]:
    """Every problem found, as (path, message); an empty list means valid. `now` is the clock the
    run's instants may not be more than a day ahead of (by default this machine's)."""
    check = _Checker()
    if not isinstance(report, dict):
        return [FieldError("", "the report must be a JSON object")]

    source = report.get("source")
    if "source" not in report:
        check.fail("source", "required")
    elif not isinstance(source, str) or not SLUG.match(source):
        check.fail("source", "must be a slug: [a-z0-9][a-z0-9._-]{0,99}")

    run_id = report.get("run_id")
    if "run_id" not in report:
        check.fail("run_id", "required")
    else:
        check.name(run_id, "run_id")

    started = check.timestamp(report, "started_at", "started_at", required=True)
    finished = check.timestamp(report, "finished_at", "finished_at", required=True)
    if started and finished and finished < started:
        check.fail("finished_at", "must not be before started_at")
    now = now or datetime.now(UTC)
    if now.utcoffset() is None:
        # Compared with the report's aware instants, a naive one raised TypeError from deep inside.
        raise ValueError("validate_report: `now` must carry its time zone (e.g. datetime.now(UTC))")
    for key, moment in (("started_at", started), ("finished_at", finished)):
        if moment and moment > now + MAX_AHEAD:
            check.fail(key, f"must be at most 24 hours ahead of this machine's clock ({now.isoformat()})")

    exit_code = report.get("exit_code")
    if exit_code is not None and (not is_integer(exit_code) or abs(exit_code) > MAX_COUNT):
        check.fail("exit_code", f"must be an integer within ±{MAX_COUNT} or null")
    if report.get("crawler_verdict") is not None:
        check.enum(report["crawler_verdict"], CRAWLER_VERDICTS, "crawler_verdict")
    if "paused" in report and not isinstance(report["paused"], bool):
        check.fail("paused", "must be a boolean")
    if report.get("pause_reason") is not None and (
        not isinstance(report["pause_reason"], str) or len(report["pause_reason"]) > MAX_TEXT_LENGTH
    ):
        check.fail("pause_reason", f"must be a string of at most {MAX_TEXT_LENGTH} characters")

    check.count(report, "declared_total", "declared_total", nullable=True)
    check.count(report, "collected", "collected", required=True)
    check.count(report, "written", "written", nullable=True)
    check.count(report, "removed", "removed")
    check.count(report, "records_lost", "records_lost", nullable=True)
    end_reason = report.get("end_reason")
    if end_reason is not None and (not isinstance(end_reason, str) or not 1 <= len(end_reason) <= 100):
        check.fail("end_reason", "must be a string of 1 to 100 characters or null")

    requests = check.object(report, "requests")
    if requests is not None:
        check.count(requests, "total", "requests.total", nullable=True)
        if "by_class" in requests:
            check.counter_map(requests["by_class"], "requests.by_class", REQUEST_CLASSES)
            by_class, total = requests["by_class"], requests.get("total")
            if isinstance(by_class, dict) and all(is_integer(n) for n in by_class.values()):
                counted = sum(by_class.values())
                if is_integer(total) and counted > total:
                    check.fail("requests", f"by_class sums to {counted}, more than total ({total})")
                elif total is None and counted > MAX_COUNT:
                    check.fail("requests", f"by_class sums to {counted}, more than a count holds ({MAX_COUNT})")

    pages = check.object(report, "pages")
    if pages is not None:
        check.count(pages, "expected", "pages.expected", nullable=True)
        check.count(pages, "fetched", "pages.fetched")
        check.count(pages, "lost", "pages.lost")
        lost_urls = pages.get("lost_urls", [])
        lost = pages.get("lost", 0)
        if not isinstance(lost_urls, list) or not all(isinstance(u, str) for u in lost_urls):
            check.fail("pages.lost_urls", "must be a list of strings")
        elif len(lost_urls) > MAX_LOST_URLS:
            check.most(lost_urls, MAX_LOST_URLS, "pages.lost_urls")
        elif (long := next((i for i, u in enumerate(lost_urls) if len(u) > MAX_LOST_URL_LENGTH), None)) is not None:
            check.fail(f"pages.lost_urls[{long}]", f"at most {MAX_LOST_URL_LENGTH} characters")
        elif isinstance(lost, int) and not isinstance(lost, bool) and len(lost_urls) > lost:
            # As the service: lost_urls names lost pages, some or all, never more than were lost.
            check.fail("pages.lost_urls", f"names {len(lost_urls)} lost pages, more than lost ({lost})")

    batches = report.get("failed_batches", [])
    if not isinstance(batches, list):
        check.fail("failed_batches", "must be a list")
    else:
        check.most(batches, MAX_ITEMS, "failed_batches")
        for i, batch in enumerate(batches):
            path = f"failed_batches[{i}]"
            if not isinstance(batch, dict):
                check.fail(path, "must be an object")
                continue
            check.keys(batch, "failed_batches[]", path)
            # rows and error may be left out (0 and ""), as the service reads them; name may not.
            name, error = batch.get("name"), batch.get("error", "")
            check.name(name, f"{path}.name", MAX_BATCH_NAME_LENGTH)
            check.count(batch, "rows", f"{path}.rows")
            if not isinstance(error, str) or len(error) > MAX_TEXT_LENGTH:
                check.fail(f"{path}.error", f"must be a string of at most {MAX_TEXT_LENGTH} characters")

    delivery = check.object(report, "delivery")
    if delivery is not None:
        check.count(delivery, "attempted", "delivery.attempted")
        check.count(delivery, "delivered", "delivery.delivered")
        if "errors" in delivery:
            check.counter_map(delivery["errors"], "delivery.errors")

    snapshot = check.object(report, "snapshot")
    if snapshot is not None:
        check.enum(snapshot.get("action"), SNAPSHOT_ACTIONS, "snapshot.action")
        check.count(snapshot, "rows", "snapshot.rows", nullable=True)

    window = check.object(report, "failure_window")
    if window is not None:
        _validate_failure_window(check, window)

    transitions = report.get("proxy_transitions", [])
    if not isinstance(transitions, list):
        check.fail("proxy_transitions", "must be a list")
    else:
        check.most(transitions, MAX_PROXY_TRANSITIONS, "proxy_transitions")
        for i, transition in enumerate(transitions):
            _validate_transition(check, transition, f"proxy_transitions[{i}]")

    pacing = check.object(report, "pacing")
    if pacing is not None:
        backoff, recovery = pacing.get("backoff"), pacing.get("recovery")
        if not _is_number(backoff) or backoff <= 1:
            check.fail("pacing.backoff", "must be a number > 1")
        if not _is_number(recovery) or not 0 < recovery < 1:
            check.fail("pacing.recovery", "must be a number in (0, 1)")

    for key in ("outcomes", "counters"):
        if key in report:
            check.counter_map(report[key], key)

    fields = check.object(report, "fields")
    if fields is not None:
        _validate_fields(check, fields, report.get("collected"))

    _check_storable(check, report, "")
    meta = check.object(report, "meta", nullable=False)
    if meta is not None:
        if len(meta) > MAX_META_KEYS:
            check.fail("meta", f"at most {MAX_META_KEYS} keys")
        for name, value in meta.items():
            check.name(name, f"meta.{name}")
            if not (isinstance(value, str) or _is_number(value)):
                check.fail(f"meta.{name}", "must be a string or a number")
            elif isinstance(value, str) and len(value) > MAX_META_VALUE_LENGTH:
                check.fail(f"meta.{name}", f"at most {MAX_META_VALUE_LENGTH} characters")
    return check.errors


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _check_storable(check: _Checker, value: Any, path: str) -> None:
    """Text no database holds, anywhere in the report: a NUL character or an unpaired surrogate."""
    if isinstance(value, str):
        if _UNSTORABLE.search(value):
            check.fail(path or "(body)", "contains a NUL character or an unpaired surrogate")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_storable(check, key, f"{path}.{key}" if path else str(key))
            _check_storable(check, item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_storable(check, item, f"{path}[{index}]")


def _validate_fields(check: _Checker, fields: dict[str, Any], collected: Any) -> None:
    if len(fields) > MAX_FIELDS:
        check.fail("fields", f"at most {MAX_FIELDS} fields")
    for name, count in fields.items():
        path = f"fields.{name}"
        if not 1 <= len(name) <= MAX_NAME_LENGTH:
            check.fail(path, f"a field name has 1 to {MAX_NAME_LENGTH} characters")
        elif found := invisible_character(name):
            check.fail(path, f"contains an invisible or direction-changing character ({found})")
        if not is_integer(count) or not 0 <= count <= MAX_COUNT:
            check.fail(path, "must be a non-negative integer")
        elif is_integer(collected) and count > collected:
            check.fail(path, f"a field cannot be filled in more records than were collected ({collected})")


def _validate_failure_window(check: _Checker, window: dict[str, Any]) -> None:
    # Every setting of the window may be null (not told), as the service reads them.
    for key in ("size", "min_samples"):
        check.count(window, key, f"failure_window.{key}", nullable=True)
    if window.get("size") == 0:
        check.fail("failure_window.size", "must be above 0")
    threshold = window.get("threshold")
    if threshold is not None and (not _is_number(threshold) or not 0 < threshold <= 1):
        check.fail("failure_window.threshold", "must be a number in (0, 1]")
    bad_classes = window.get("bad_classes")
    if bad_classes is None:
        bad_classes = []
    if not isinstance(bad_classes, list):
        check.fail("failure_window.bad_classes", "must be a list")
    else:
        for i, name in enumerate(bad_classes):
            check.enum(name, REQUEST_CLASSES, f"failure_window.bad_classes[{i}]")
    events = window.get("events", [])
    if not isinstance(events, list):
        check.fail("failure_window.events", "must be a list")
        events = []
    check.most(events, MAX_ITEMS, "failure_window.events")
    for i, event in enumerate(events):
        path = f"failure_window.events[{i}]"
        if not isinstance(event, dict):
            check.fail(path, "must be an object")
            continue
        check.keys(event, "failure_window.events[]", path)
        check.timestamp(event, "at", f"{path}.at", required=True)
        check.count(event, "seq", f"{path}.seq", required=True)
        check.enum(event.get("kind"), EVENT_KINDS, f"{path}.kind")
        for key in ("sent", "bad", "samples"):
            check.count(event, key, f"{path}.{key}", nullable=True)
        if event.get("ratio") is not None and (not _is_number(event["ratio"]) or not 0 <= event["ratio"] <= 1):
            check.fail(f"{path}.ratio", "must be a number in [0, 1]")
    series = window.get("series", [])
    if not isinstance(series, list):
        check.fail("failure_window.series", "must be a list")
    elif len(series) > MAX_SERIES_POINTS:
        check.fail("failure_window.series", f"at most {MAX_SERIES_POINTS} points")
    else:
        for i, point in enumerate(series):
            if not (
                isinstance(point, list)
                and len(point) == 2
                and is_integer(point[0])
                and point[0] >= 0
                and _is_number(point[1])
                and 0 <= point[1] <= 1
            ):
                check.fail(f"failure_window.series[{i}]", "must be [seq >= 0, ratio in [0, 1]]")


def _validate_transition(check: _Checker, transition: Any, path: str) -> None:
    if not isinstance(transition, dict):
        check.fail(path, "must be an object")
        return
    check.keys(transition, "proxy_transitions[]", path)
    proxy = transition.get("proxy")
    if not isinstance(proxy, str) or not 1 <= len(proxy) <= MAX_KEY_LENGTH or invisible_character(proxy):
        check.name(proxy, f"{path}.proxy")
    elif proxy_id_has_credentials(proxy):
        check.fail(f"{path}.proxy", "looks like it carries credentials (user:pass@); use an opaque id")
    check.timestamp(transition, "at", f"{path}.at", required=True)
    check.enum(transition.get("from"), PROXY_STATES, f"{path}.from")
    check.enum(transition.get("to"), PROXY_STATES, f"{path}.to")
    check.enum(transition.get("reason"), TRANSITION_REASONS, f"{path}.reason")
    check.enum(transition.get("stage"), STAGES, f"{path}.stage")
    if transition.get("until") is not None:
        check.timestamp(transition, "until", f"{path}.until")

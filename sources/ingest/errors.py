"""Why a report or request was refused, in a shape that names every bad field."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError

from completeness.report import SLUG_PATTERN, VISIBLE_PATTERN, invisible_character, json_kind


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str


class ApiError(Exception):
    status = 400
    headers: dict[str, str] = {}

    def __init__(self, detail: str, errors: list[FieldError] | None = None, *, status: int | None = None):
        super().__init__(detail)
        if status is not None:
            self.status = status
        self.detail = detail
        self.errors = errors or []

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail, "errors": [asdict(e) for e in self.errors]}


class ReportInvalid(ApiError):
    status = 422

    def __init__(self, errors: list[FieldError], detail: str = "invalid run report"):
        super().__init__(detail, errors)
        # The report's source and run_id where it was a JSON object that named them: for the log line.
        self.about: dict[str, str | None] = {}


class ReportForbidden(ApiError):
    status = 403


class ReportConflict(ApiError):
    status = 409


class ReportTooLarge(ApiError):
    status = 413


class NotFound(ApiError):
    status = 404


class UnsupportedMediaType(ApiError):
    status = 415


# Long enough for a database restart or failover, short enough that a crawler's spool drains soon.
RETRY_AFTER_SECONDS = 30


class ServiceUnavailable(ApiError):
    status = 503
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}

    def __init__(self, detail: str = "the database is unavailable; retry later (nothing was stored)"):
        super().__init__(detail)


def format_path(loc: tuple[str | int, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":
            continue
        else:
            path += f".{part}" if path else str(part)
    return path or "(body)"


TIMESTAMP_SPELLING = "write it in UTC as 2026-09-14T03:00:00Z, or with its offset (+02:00)"


def error_message(error: Mapping[str, Any]) -> str:
    """A pydantic error's message as the API words it."""
    ctx = error.get("ctx") or {}
    if error.get("type") == "string_pattern_mismatch" and ctx.get("pattern") == VISIBLE_PATTERN:
        # ninja leaves the input out of its errors; a key's error names the key in its location.
        loc = tuple(error.get("loc", ()))
        text = error.get("input", loc[-2] if len(loc) > 1 and loc[-1] == "[key]" else None)
        found = invisible_character(text) if isinstance(text, str) else None
        which = f" ({found})" if found else ""
        return f"contains an invisible or direction-changing character{which}: names and ids are visible text"
    if error.get("type") == "string_pattern_mismatch" and ctx.get("pattern") == SLUG_PATTERN:
        return slug_message(error.get("input"))
    if error.get("type") == "timezone_aware":
        # pydantic's "Input should have timezone info" left the caller to guess the spelling.
        return f"a time without its zone: {TIMESTAMP_SPELLING}"
    if error.get("type") in ("datetime_parsing", "datetime_from_date_parsing"):
        # "Input should be a valid datetime, invalid timezone minute" for "+04", or "..., input is too
        # short" for "yesterday": the reason is kept, with the spelling that is taken.
        reason = str(error.get("msg", "")).partition(", ")[2]
        return f"not an ISO 8601 timestamp{f' ({reason})' if reason else ''}: {TIMESTAMP_SPELLING}"
    if error.get("type") in WRONG_TYPE_ERRORS and "input" in error:
        return wrong_type_message(error["type"], error["input"])
    message: str = error.get("msg", "invalid")
    return message.removeprefix("Value error, ")


def slug_message(value: object) -> str:
    """A source that is no slug, with the slug it was probably meant to be: the pattern alone
    (`String should match pattern '^[a-z0-9][a-z0-9._-]{0,99}$'`) left "AcmeBooks" to be worked out."""
    message = "must be a slug: 1-100 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit"
    if not isinstance(value, str) or not value.isascii():
        # Letters of other scripts have no spelling to suggest (the kit names such a spider by a digest).
        return message
    meant = re.sub(r"[^a-z0-9._-]+", "-", value.strip().lower()).lstrip("._-")[:100]
    if meant and meant != value and re.fullmatch(SLUG_PATTERN, meant):
        return f"{message} (such as {json.dumps(meant)})"
    return message


# What a field of each strict type takes, for a value of another JSON type. pydantic's "Input should
# be a valid integer" answered `"collected": "48"`, and 48 is a valid integer to whoever reads it: the
# quotes were what was wrong, and the message did not say so.
WRONG_TYPE_ERRORS = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "text (a JSON string)",
    "datetime_type": "a timestamp, ISO 8601 text with its offset (2026-09-14T03:00:00Z)",
}
_NUMBER_TEXT = {
    "int_type": re.compile(r"-?(0|[1-9][0-9]*)"),
    "float_type": re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?"),
}


def wrong_type_message(kind: str, value: Any) -> str:
    """A value of the wrong JSON type, named by what it is and what the field takes."""
    expected = WRONG_TYPE_ERRORS[kind]
    if value is None or isinstance(value, bool):
        return f"must be {expected}, not {json_kind(value)}"
    if isinstance(value, str):
        # Escaped as JSON escapes it: the text is the client's, control and direction characters too.
        shown = json.dumps(value[:40]) + ("..." if len(value) > 40 else "")
        hint = ""
        number = _NUMBER_TEXT.get(kind)
        if number is not None and number.fullmatch(value.strip()) and len(value) <= 40:
            hint = f": send the number without quotes ({value.strip()})"
        elif kind == "bool_type" and value.strip().lower() in ("true", "false"):
            hint = f": send it without quotes ({value.strip().lower()})"
        return f"must be {expected}, not the text {shown}{hint}"
    if isinstance(value, float) and kind == "int_type":
        whole = f": write {int(value)}" if value.is_integer() and abs(value) < 2**53 else ""
        return f"must be {expected}, not a decimal ({value!r}){whole}"
    if isinstance(value, int | float):
        shown = repr(value)
        return f"must be {expected}, not the number {shown[:40]}{'...' if len(shown) > 40 else ''}"
    return f"must be {expected}, not {json_kind(value)}"


def unknown_field_message(model: type[BaseModel], loc: tuple[str | int, ...]) -> str | None:
    """A key the object at `loc` does not take, with the ones it does and the nearest of them:
    pydantic's "Extra inputs are not permitted" answered `"pages": {"lsot": 1}` and left the spelling
    to be looked up. None where `loc` leads to no model (a map's keys are checked elsewhere)."""
    names = _field_names(model, loc[:-1])
    if names is None or not isinstance(loc[-1], str):
        return None
    nearest = difflib.get_close_matches(loc[-1], names, n=1)
    guess = f" (did you mean {nearest[0]}?)" if nearest else ""
    return f"unknown field{guess}; the fields here: {', '.join(names)}"


def _misspelt_as(loc: tuple[str | int, ...], given: dict[str, Any]) -> str:
    """A required field left out where a key near its name was sent: a top-level typo is taken as an
    unknown field (docs/api.md), so `"colected": 1200` answered only "collected: Field required"."""
    name = str(loc[-1])
    # Compared without case and separators: runId, RunID and run-id are all run_id misspelt.
    keys = {_bare(key): key for key in given if isinstance(key, str) and key != name}
    nearest = difflib.get_close_matches(_bare(name), keys, n=1, cutoff=0.75)
    if not nearest:
        return ""
    holder = format_path(loc[:-1]) if len(loc) > 1 else "the report"
    return f": {holder} has {json.dumps(keys[nearest[0]])}, not {name}"


def _bare(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _field_names(model: Any, loc: tuple[str | int, ...]) -> list[str] | None:
    current = model
    for part in loc:
        if isinstance(part, int):
            current = next(iter(get_args(_model_or_item(current, list) or current)), None)
            continue
        found = _model_or_item(current, BaseModel)
        fields = found.model_fields if isinstance(found, type) and issubclass(found, BaseModel) else {}
        field = next((f for name, f in fields.items() if (f.alias or name) == part), None)
        if field is None:
            return None
        current = field.annotation
    found = _model_or_item(current, BaseModel)
    if not (isinstance(found, type) and issubclass(found, BaseModel)):
        return None
    return [field.alias or name for name, field in found.model_fields.items()]


def _model_or_item(annotation: Any, kind: type) -> Any:
    """`annotation` itself, or the member of its union (`X | None`) that is a `kind` (a model, or a
    list type); None when it holds none."""
    for candidate in (annotation, *get_args(annotation)):
        origin = get_origin(candidate) or candidate
        if isinstance(origin, type) and issubclass(origin, kind):
            return candidate
    return None


def pydantic_errors(exc: ValidationError, model: type[BaseModel] | None = None) -> list[FieldError]:
    """Each error of `exc` as the API words it; `model`, the one validated, names the fields an
    object takes where a key was refused as unknown."""
    errors: list[FieldError] = []
    for error in exc.errors(include_url=False):
        message = error_message(error)
        if error["type"] == "extra_forbidden" and model is not None:
            message = unknown_field_message(model, tuple(error["loc"])) or message
        elif error["type"] == "missing" and isinstance(error.get("input"), dict) and error["loc"]:
            message += _misspelt_as(tuple(error["loc"]), error["input"])
        if error["loc"] and error["loc"][-1] == "[key]":
            message = f"key not allowed: {message}"
        problems = (error.get("ctx") or {}).get("problems")
        if problems:
            # A check over a whole mapping that found several bad members, each with its own reason.
            errors.extend(FieldError(format_path((*error["loc"], name)), text) for name, text in problems.items())
            continue
        names = (error.get("ctx") or {}).get("names")
        if names:
            # A check over a whole mapping that found several bad members: name each of them.
            errors.extend(FieldError(format_path((*error["loc"], name)), message) for name in names)
            continue
        errors.append(FieldError(format_path(error["loc"]), message))
    return errors


def check_storable(value: object, loc: tuple[str | int, ...] = ()) -> list[FieldError]:
    """Values the database cannot store: strings with NUL characters or unpaired surrogates, and
    numbers that overflowed to infinity (`1e400`)."""
    errors: list[FieldError] = []

    def bad(text: str) -> str | None:
        if "\x00" in text:
            return "contains a NUL character"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains an unpaired surrogate (not valid Unicode)"
        return None

    if isinstance(value, str):
        problem = bad(value)
        if problem:
            errors.append(FieldError(format_path(loc), problem))
    elif isinstance(value, float) and not math.isfinite(value):
        errors.append(FieldError(format_path(loc), "a number JSON cannot hold (too large for a float)"))
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = bad(key)
            if problem:
                errors.append(
                    FieldError(format_path((*loc, key[:50].encode("utf-8", "replace").decode())), f"key {problem}")
                )
            else:
                errors.extend(check_storable(item, (*loc, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            errors.extend(check_storable(item, (*loc, index)))
    return errors


# A timestamp written as a number of seconds: pydantic reads a string of digits as Unix time, so
# "1789000000" was taken as a date in 2026 and "20260915030000" (meant as 2026-09-15 03:00) as the year
# 2612, refused then as "more than 24 hours ahead". The contract says ISO 8601 text with its offset.
_DIGITS_ONLY = re.compile(r"\s*[+-]?[0-9]+(?:\.[0-9]*)?\s*")
_TIMESTAMP_PATHS: tuple[tuple[str, ...], ...] = (
    ("started_at",),
    ("finished_at",),
    ("failure_window", "events", "*", "at"),
    ("proxy_transitions", "*", "at"),
    ("proxy_transitions", "*", "until"),
)


def is_number_text(value: object) -> bool:
    """Digits alone, as text: what pydantic would read as seconds since 1970."""
    return isinstance(value, str) and _DIGITS_ONLY.fullmatch(value) is not None


def timestamps_as_numbers(raw: Mapping[str, Any]) -> list[FieldError]:
    """The report's timestamps sent as digits in text, each named where it is."""
    errors: list[FieldError] = []

    def walk(value: Any, rest: tuple[str, ...], loc: tuple[str | int, ...]) -> None:
        if not rest:
            if is_number_text(value):
                errors.append(
                    FieldError(format_path(loc), f"a timestamp, not a number of seconds: {TIMESTAMP_SPELLING}")
                )
            return
        head, tail = rest[0], rest[1:]
        if head == "*":
            if isinstance(value, list):
                for index, item in enumerate(value):
                    walk(item, tail, (*loc, index))
        elif isinstance(value, Mapping) and head in value:
            walk(value[head], tail, (*loc, head))

    for path in _TIMESTAMP_PATHS:
        walk(raw, path, ())
    return errors

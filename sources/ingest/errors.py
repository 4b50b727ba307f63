"""Why a report or request was refused, in a shape that names every bad field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import ValidationError

from completeness.report import VISIBLE_PATTERN, invisible_character


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
    if error.get("type") == "timezone_aware":
        # pydantic's "Input should have timezone info" left the caller to guess the spelling.
        return "a time without its zone: write it in UTC as 2026-09-14T03:00:00Z, or with its offset (+02:00)"
    message: str = error.get("msg", "invalid")
    return message.removeprefix("Value error, ")


def pydantic_errors(exc: ValidationError) -> list[FieldError]:
    errors: list[FieldError] = []
    for error in exc.errors(include_url=False):
        message = error_message(error)
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

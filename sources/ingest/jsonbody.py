"""JSON request bodies within the contract's limits: at most 32 levels deep, numbers JSON can hold.

Python's parser recurses once per level and overflows the stack near 1,000 levels; it also reads
`1e400` as infinity, which no database column or JSON document can hold. Both are refused here,
before anything is stored.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32

# A JSON string, escapes included: brackets inside strings are no nesting.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST_PAIR = re.compile(rb"[\[{][\]}]")
# Only an exponent of three digits or a number of 309 digits can overflow a float: other bodies
# keep the parser's own float and its speed.
_MAYBE_HUGE = re.compile(rb"\d[eE]\+?\d{3}|\d{309}")


def too_deep(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the body nests arrays and objects deeper than `limit` (or opens more than `limit`
    it never closes): the brackets outside strings are peeled one level per pass, in C."""
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKET)
    for _ in range(limit):
        if not brackets:
            return False
        brackets, removed = _INNERMOST_PAIR.subn(b"", brackets)
        if not removed:
            break
    # Left over: levels beyond the limit, or brackets that never close (no JSON at all, but the
    # parser would still recurse into every one of them).
    return bool(_INNERMOST_PAIR.search(brackets)) or len(brackets) > limit


class _Constant(ValueError):
    pass


def _reject_constant(name: str):
    raise _Constant(f"{name} is not a JSON number")


def loads(body: bytes | str) -> tuple[Any, bool]:
    """The parsed body and whether some number in it overflowed to infinity (the caller names where:
    see sources.ingest.errors.check_storable). Raises ValueError for what is no JSON."""
    overflowed = False
    if not _MAYBE_HUGE.search(body if isinstance(body, bytes) else body.encode()):
        return json.loads(body, parse_constant=_reject_constant), False

    def parse_float(text: str) -> float:
        nonlocal overflowed
        value = float(text)
        if math.isinf(value):
            overflowed = True
        return value

    return json.loads(body, parse_constant=_reject_constant, parse_float=parse_float), overflowed

"""JSON request bodies within the contract's limits: at most 32 levels deep, numbers JSON can hold.

Python's parser recurses once per level and overflows the stack near 1,000 levels; it also reads
`1e400` as infinity, which no database column or JSON document can hold. Both are refused here,
before anything is stored.
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

MAX_DEPTH = 32

# Brackets of either kind, as one: a mismatched pair is no JSON, and the parser stops at it.
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET_OR_QUOTE = bytes(b for b in range(256) if b not in b'[]{}"')
# Only an exponent of three digits or a number of 309 digits can overflow a float: other bodies
# keep the parser's own float and its speed. Looked for with every digit as 0 (one translate and a
# few substring searches, all in C and linear: a regular expression took 140 ms a megabyte).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789E", b"000000000e")
_HUGE_SIGNS = (b"0e000", b"0e+000", b"0" * 309)


def too_deep(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the body nests arrays and objects deeper than `limit` (or opens more than `limit`
    it never closes): the brackets outside strings are peeled one level per pass.

    Linear in the body's length, whatever it holds: every step is a bytes method (replace, split,
    join, translate) that runs in C without backtracking. (A regular expression for strings took
    over 30 s on 128 KB of `\\"`: it scanned to the end from every quote.)
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    # Escapes go first, in the order a parser reads them (an escaped backslash, then an escaped
    # quote); what quotes are left delimit the strings, so every other part of a split lies inside
    # one (a string that never closes runs to the end). Outside strings a backslash is no JSON, and
    # the parser stops there.
    text = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(_AS_SQUARE, _NOT_BRACKET_OR_QUOTE)
    # Two quotes side by side close one string and open the next (or open and close an empty one):
    # dropping them leaves every bracket on its side, and most strings hold no bracket at all.
    text = text.replace(b'""', b"")
    brackets = b"".join(text.split(b'"')[::2]) if b'"' in text else text
    for _ in range(limit):
        if not brackets:
            return False
        # bytes.replace does not rescan what it removed: one level per pass.
        peeled = brackets.replace(b"[]", b"")
        if len(peeled) == len(brackets):
            break
        brackets = peeled
    # Left over: levels beyond the limit, or brackets opened and never closed (no JSON at all, but
    # the parser would still recurse into every one of them; a stray closing one stops it at once).
    return b"[]" in brackets or brackets.count(b"[") > limit


def loads_could_overflow(body: bytes) -> bool:
    """Whether some number in the body might overflow a float (then `loads` checks each one)."""
    digits = body.translate(_DIGITS_AS_ZERO)
    return any(sign in digits for sign in _HUGE_SIGNS)


class _Constant(ValueError):
    pass


def _reject_constant(name: str) -> NoReturn:
    raise _Constant(f"{name} is not a JSON number")


def loads(body: bytes | str) -> tuple[Any, bool]:
    """The parsed body and whether some number in it overflowed to infinity (the caller names where:
    see sources.ingest.errors.check_storable). Raises ValueError for what is no JSON."""
    overflowed = False
    if not loads_could_overflow(body if isinstance(body, bytes) else body.encode()):
        return json.loads(body, parse_constant=_reject_constant), False

    def parse_float(text: str) -> float:
        nonlocal overflowed
        value = float(text)
        if math.isinf(value):
            overflowed = True
        return value

    return json.loads(body, parse_constant=_reject_constant, parse_float=parse_float), overflowed


def why_not_json(exc: ValueError) -> str:
    """Why a body is no JSON, in the words of the 422 that refuses it."""
    if isinstance(exc, UnicodeDecodeError):
        # Python's "'utf-8' codec can't decode byte 0xfc in position 158: invalid start byte" meant a
        # body in Latin-1 or Windows-1252 (a `charset` in its Content-Type changes nothing: JSON between
        # systems is UTF-8, RFC 8259), and did not say so.
        return (
            f"the body must be UTF-8: the byte 0x{exc.object[exc.start]:02x} at position {exc.start} is not"
            " UTF-8 (text in another encoding, such as Latin-1, is encoded as UTF-8 before it is posted)"
        )
    return f"not valid JSON: {exc}"

"""Request classes of the run report and how raw outcomes map onto them."""

from __future__ import annotations

REQUEST_CLASSES: tuple[str, ...] = (
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
)

# 404 (and 410) are the catalogue's normal life, never trouble.
DEFAULT_BAD_CLASSES: tuple[str, ...] = (
    "http_5xx",
    "http_429",
    "timeout",
    "connection_reset",
    "connection_refused",
    "short_body",
)

NOT_FOUND_STATUSES = frozenset({404, 410})


def classify_status(status: int, body_length: int | None = None, min_body_bytes: int = 0) -> str:
    """Class of an HTTP response.

    A 200 with a body shorter than `min_body_bytes` is a stub page that a
    failing site serves instead of an error, so it is `short_body`, not `ok`.
    """
    if status in NOT_FOUND_STATUSES:
        return "not_found"
    if status == 429:
        return "http_429"
    if 500 <= status <= 599:
        return "http_5xx"
    if 400 <= status <= 499:
        return "http_4xx_other"
    if 200 <= status <= 399:
        if status == 200 and body_length is not None and body_length < min_body_bytes:
            return "short_body"
        return "ok"
    return "other"


_EXCEPTION_NAME_CLASSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("timeout", "timedout"), "timeout"),
    (("connectionrefused",), "connection_refused"),
    (
        (
            "connectionreset",
            "connectionlost",
            "connectionaborted",
            "responsenever",
            "brokenpipe",
            "connectiondone",
            "remotedisconnected",
            "partialdownload",
        ),
        "connection_reset",
    ),
)


def classify_exception_name(name: str) -> str:
    """Class of a transport failure, from its (qualified) exception type name.

    Works on names so that stats keys such as
    `downloader/exception_type_count/twisted.internet.error.TCPTimedOutError`
    map the same way as live exceptions.
    """
    short = name.rsplit(".", 1)[-1].lower()
    for needles, request_class in _EXCEPTION_NAME_CLASSES:
        if any(needle in short for needle in needles):
            return request_class
    return "other"


def classify_exception(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        return "connection_reset"
    if isinstance(exc, TimeoutError):
        return "timeout"
    reason = getattr(exc, "reason", None)  # urllib.error.URLError wraps the socket error
    if isinstance(reason, BaseException) and reason is not exc:
        inner = classify_exception(reason)
        if inner != "other":
            return inner
    return classify_exception_name(type(exc).__name__)

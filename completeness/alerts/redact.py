"""Delivery errors without the secrets they quote.

An HTTP client's error names the URL it failed on (`... Max retries exceeded with url:
/services/T000/B000/SECRET`), a receiver may echo its path or query back (`?token=...`), and an
Apprise URL keeps its token in the host (`tgram://<bot token>/<chat>`). Errors are stored and shown on
pages any logged-in user opens, so they are cut down to what helps whoever reads them (the kind of
failure, the status, the host of a web URL) before they are stored, and again when shown (rows stored
before this existed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

HIDDEN = "…"
# scheme://[userinfo@]host[:port][/path][?query][#fragment]: kept as scheme://host, and only the host
# of a web URL (another scheme's host may be its token).
_URL = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]{1,15})://(?:[^\s/?#@'\"<>]*@)?([^\s/?#'\"<>:]*)(?::\d+)?[^\s'\"<>]*")
# urllib3: "with url: /path?query (Caused by ...)"
_URL_FIELD = re.compile(r"\b(url:?\s+)[^\s'\"<>)]+", re.IGNORECASE)
# A path of two or more segments, or a query string, on its own.
_PATH = re.compile(r"(?<![\w.:/])/[^\s'\"<>/]+/[^\s'\"<>)]*")
_QUERY = re.compile(r"\?[^\s'\"<>)]+")
_CREDENTIAL = re.compile(
    r"\b(token|access_token|api_?key|key|secret|password|passwd|pwd|signature|sig|auth|routing_key)"
    r"(\s*[=:]\s*)[^\s&,;'\"<>)]+",
    re.IGNORECASE,
)
_AUTH_HEADER = re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{6,}")
WEB_SCHEMES = {"http", "https"}


def _url(match: re.Match) -> str:
    scheme, host = match.group(1), match.group(2)
    if scheme.lower() in WEB_SCHEMES and host:
        return f"{scheme}://{host}/{HIDDEN}"
    return f"{scheme}://{HIDDEN}"


def secrets_of(target: str, secret: str = "") -> list[str]:
    """The parts of a channel's target (and its signing secret) that must never be shown: its path,
    query and userinfo, and the whole host of a URL that is not a web URL (Apprise keeps tokens there)."""
    found = [secret, target]
    parts = urlsplit(target) if "://" in target else None
    if parts is not None:
        found += [parts.path, parts.query, parts.username or "", parts.password or ""]
        found += [segment for segment in parts.path.split("/") if len(segment) >= 6]
        if parts.scheme.lower() not in WEB_SCHEMES:
            found.append(parts.netloc)
    return [s for s in {*found, *(unquote(s) for s in found)} if len(s) >= 4]


def redact_error(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every given secret and every URL path, query, userinfo and credential cut out."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    text = _URL.sub(_url, text)
    text = _URL_FIELD.sub(lambda m: m.group(1) + HIDDEN, text)
    text = _PATH.sub("/" + HIDDEN, text)
    text = _QUERY.sub("?" + HIDDEN, text)
    text = _CREDENTIAL.sub(lambda m: m.group(1) + m.group(2) + HIDDEN, text)
    return _AUTH_HEADER.sub(lambda m: f"{m.group(1)} {HIDDEN}", text)

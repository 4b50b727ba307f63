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
from typing import Any
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


def _url(match: re.Match[str]) -> str:
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


# A path segment that may be a credential: a run of 16 or more characters with a digit in it (a session
# id, an API key, a signed hash), a UUID, or `name=value` (matrix parameters such as `;jsessionid=`).
_CHUNK_SEPARATOR = re.compile(r"[-_.~]")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_NAMED = re.compile(r"([;,]?[^;,=]*=)[^;,]*")
# A segment named like a credential hides the one after it (`/token/abc123`).
_CREDENTIAL_NAME = re.compile(
    r"(token|access_token|api_?key|key|secret|password|passwd|pwd|signature|sig|auth|session|sid)",
    re.IGNORECASE,
)
# ... and so does a meta entry whose name has one as a part (`api_key`, `X-Auth-Token`, not `author`).
_CREDENTIAL_NAME_PART = re.compile(rf"(?:^|[_.\s-]){_CREDENTIAL_NAME.pattern}(?:$|[_.\s-])")
# A URL in text ends before the punctuation that follows it (`..., https://a/b, and`).
_WEB_URL = re.compile(r"\bhttps?://[^\s'\"<>]*[^\s'\"<>,;.)]", re.IGNORECASE)
_OTHER_URL = re.compile(r"\b(?!https?://)([A-Za-z][A-Za-z0-9+.-]{1,15})://[^\s'\"<>]*[^\s'\"<>,;.)]")


def _segment(segment: str) -> str:
    if "=" in segment:
        return _NAMED.sub(lambda m: m.group(1) + HIDDEN, segment)
    chunks = _CHUNK_SEPARATOR.split(unquote(segment))
    if _UUID.search(segment) or any(len(c) >= 16 and any(ch.isdigit() for ch in c) for c in chunks):
        return HIDDEN
    return segment


# Paging parameters whose value is a plain number are shown: with every value hidden, three lost listing
# pages read alike (`/list?page=…` three times) and on call could not tell which to fetch again.
_PAGING_NAMES = frozenset(
    "page p pg pageno page_no pagenum page_num offset start from skip limit per_page perpage page_size"
    " pagesize size count rows".split()
)
_PAGING_VALUE = re.compile(r"[0-9]{1,9}")


def _query_pair(pair: str) -> str:
    name, _, value = pair.partition("=")
    if name.lower() in _PAGING_NAMES and _PAGING_VALUE.fullmatch(value):
        return pair
    return f"{name}={HIDDEN}"


def redact_url(url: str) -> str:
    """A web URL with what may be a secret hidden and what helps diagnose kept: its userinfo dropped,
    every query and fragment value (but a paging number: `page=3`) and every token-like path segment
    hidden; scheme, host, port, the other path segments and the query's names kept. Not a web URL: its
    scheme only (another scheme's host may be its token)."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return HIDDEN
    if parts.scheme.lower() not in WEB_SCHEMES or not parts.hostname:
        return f"{parts.scheme}://{HIDDEN}" if parts.scheme else redact_error(url)
    segments, hide_next = [], False
    for segment in parts.path.split("/"):
        segments.append(HIDDEN if hide_next and segment else _segment(segment))
        hide_next = bool(_CREDENTIAL_NAME.fullmatch(segment))
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown = f"{parts.scheme}://{host}{port}{'/'.join(segments)}"
    if parts.query:
        shown += "?" + "&".join(_query_pair(pair) for pair in parts.query.split("&") if pair)
    if parts.fragment:
        shown += "#" + HIDDEN
    return shown


def redact_text(text: str) -> str:
    """Free text a crawler sent (a meta value, an end reason, a finding quoting lost URLs) with every web
    URL shown as `redact_url` shows it, any other URL cut to its scheme, and `token=...`-style values
    and authorization headers hidden."""
    text = _WEB_URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _OTHER_URL.sub(lambda m: f"{m.group(1)}://{HIDDEN}", text)
    text = _CREDENTIAL.sub(lambda m: m.group(1) + m.group(2) + HIDDEN, text)
    return _AUTH_HEADER.sub(lambda m: f"{m.group(1)} {HIDDEN}", text)


def redact_named(name: str, value: object) -> object:
    """A value under `name` (a report's meta entry): hidden whole if the name says it is a credential
    (`api_key`, `password`), else its text redacted; numbers and other values as they are."""
    if not isinstance(value, str):
        return value
    if _CREDENTIAL_NAME_PART.search(name.lower()):
        return HIDDEN
    return redact_text(value)


def redact_finding(finding: dict[str, Any]) -> dict[str, Any]:
    """A finding whose message may quote what the crawler sent (lost_pages names lost URLs)."""
    return {**finding, "message": redact_text(str(finding.get("message", "")))}

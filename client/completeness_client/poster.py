"""Post run reports; spool them when they cannot be delivered (no connection, or 5xx/429 throughout).

Posting is idempotent under (source, run_id): the same body again gets 200, a
changed body 409. So every retry sends byte-identical JSON under the same
run_id, and a report that could not be delivered is spooled to a directory and
sent before anything else on the next call: no report is lost.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import exit_codes
from .clock import SYSTEM_CLOCK, Clock, isoformat
from .validation import validate_report

USER_AGENT = "crawler-completeness/0.1"
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
# Refusals of the token, not of the report: it is kept in the spool for a token that may post it (a
# mistyped token, or another crawler's scoped one, moved earlier runs' reports aside for good).
TOKEN_REFUSED = frozenset({401, 403})
# The service's URL names another address (http:// behind SECURE_SSL_REDIRECT): urllib re-sent the POST
# there as a GET without its report, and the service's 405 put the report aside as refused. Not followed:
# said, and the report kept in the spool for a run with the right URL.
MOVED = frozenset({301, 302, 303, 307, 308})
# The runs endpoint never answers 404 (an unknown source is registered or 403): a 404 is a wrong URL
# (a path prefix, /api/v1 twice), not a wrong report, and its report was put aside for good.
WRONG_URL = MOVED | {404}
KEPT_IN_SPOOL = TOKEN_REFUSED | WRONG_URL
_REJECTION_MESSAGES = {
    401: "the service does not know this token (401): check COMPLETENESS_TOKEN",
    403: "this token may not post for this source (403): it is scoped to other sources",
    409: "this run_id was already posted with a different body (409): a changed report needs a new run_id",
    413: "the report is larger than the service accepts (413)",
    422: "the service rejected the report as invalid (422)",
}


def canonical_json(report: dict[str, Any]) -> bytes:
    """One byte sequence per report, so a retry is an identical repeat."""
    return json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def default_spool_dir() -> Path:
    configured = os.environ.get("COMPLETENESS_SPOOL_DIR")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "completeness-client" / "spool"


@dataclass
class PostResult:
    """What became of one report.

    outcome: "judged" (the service answered 200/201 with a verdict), "spooled"
    (not delivered after every attempt, kept for the next call: the service
    could not be reached, or answered 5xx/429, whose status `http_status`
    then holds), "rejected" (the service refused it; not retried; a refusal of
    the token, 401/403, keeps the report in the spool for a token that may post
    it), "invalid" (refused locally before sending), or, for a spooled report
    of an earlier run, "kept" (this token may not post it: left in the spool).
    """

    outcome: str
    exit_code: int
    source: str | None = None
    run_id: str | None = None
    http_status: int | None = None
    verdict: str | None = None
    silent: bool | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    run: str | None = None
    message: str = ""
    errors: list[dict[str, Any]] = field(default_factory=list)
    spool_path: Path | None = None
    flushed: list[PostResult] = field(default_factory=list)
    response: Any = None

    @property
    def repeat(self) -> bool:
        """The service had this report already (a retry whose first answer was
        lost, a spool sent twice): its 200 carries the first post's verdict, and
        nothing new was stored. The status is the only sign (docs/api.md)."""
        return self.outcome == "judged" and self.http_status == 200


class ReportPoster:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        spool_dir: str | os.PathLike[str] | None = None,
        timeout_seconds: float = 10.0,
        max_attempts: int = 4,
        backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not base_url:
            raise ValueError("the service URL is required")
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.endpoint = base_url.rstrip("/") + "/api/v1/runs"
        self.url_problem = _url_problem(base_url)
        self.token = token
        self.spool_dir = Path(spool_dir) if spool_dir is not None else default_spool_dir()
        self.timeout_seconds = timeout_seconds
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self._sleep = sleep
        self._clock = clock

    # -- public ---------------------------------------------------------------

    def post(self, report: dict[str, Any], *, validate: bool = True) -> PostResult:
        """Send spooled reports first, then this one; never raises for
        transport or service trouble: the result says what happened. A
        spooled report of the same source and run_id is an earlier version of
        this one (spooled when the run was stopped): it is not sent, and it
        stays spooled until this one is judged, rejected or spooled over it."""
        source, run_id = report.get("source"), report.get("run_id")
        if validate:
            errors = validate_report(report)
            if errors:
                result = PostResult(
                    outcome="invalid",
                    exit_code=exit_codes.BAD_INPUT,
                    source=source if isinstance(source, str) else None,
                    run_id=run_id if isinstance(run_id, str) else None,
                    message="the report is invalid: " + "; ".join(str(e) for e in errors),
                    errors=[{"path": e.path, "message": e.message} for e in errors],
                )
                return result
        if self.url_problem:
            # No address to try: "could not be reached ... (after 4 attempts)", exit 75, read as an
            # outage to wait out, on every run, while the setting was what needed fixing.
            path = self._spool(report)
            return PostResult(
                outcome="invalid",
                exit_code=exit_codes.BAD_INPUT,
                source=source if isinstance(source, str) else None,
                run_id=run_id if isinstance(run_id, str) else None,
                message=f"{self.url_problem}; the report is kept in the spool ({path}) for a run with the service's URL",
                spool_path=path,
            )
        own = self._spool_name(report)
        flushed, blocked = self._flush_spool(skip=own)
        if blocked is None:
            result = self._send(report)
        else:
            result = PostResult(
                outcome="unreachable",
                exit_code=exit_codes.SPOOLED,
                http_status=blocked.http_status,
                # Said as what happened to which report: "..., sending an earlier run's spooled report"
                # read as if that report were being sent now, and left this run's own post unexplained.
                message=(
                    f"{blocked.message} while sending an earlier run's spooled report"
                    f" ({blocked.source}/{blocked.run_id}), so this run's report was not tried"
                ),
            )
        if result.outcome == "unreachable":
            path = self._spool(report)
            result.outcome = "spooled"
            result.spool_path = path
            result.exit_code = exit_codes.SPOOLED
            result.message = f"{result.message}; the report is spooled to {path}"
        elif result.http_status in KEPT_IN_SPOOL:
            result.spool_path = self._spool(report)
            for_whom = (
                "a token that may post it" if result.http_status in TOKEN_REFUSED else "a run with the service's URL"
            )
            result.message = f"{result.message}; the report is kept in the spool ({result.spool_path}) for {for_whom}"
        else:
            (self.spool_dir / own).unlink(missing_ok=True)
            if result.outcome == "rejected":
                result.spool_path = self._keep_rejected(report, result)
        result.source, result.run_id = source, run_id
        result.flushed = flushed
        return result

    def send_once(self, report: dict[str, Any]) -> PostResult:
        """Send one report now, retried as post() retries it, without the spool: nothing spooled is
        sent first and this one is not spooled when it cannot be delivered (outcome "unreachable").
        For a caller that stops there and runs again, as completeness-backfill does."""
        result = self._send(report)
        result.source, result.run_id = report.get("source"), report.get("run_id")
        return result

    def flush(self) -> list[PostResult]:
        """Send spooled reports only (e.g. from a cron job)."""
        return self._flush_spool()[0]

    def spool(self, report: dict[str, Any]) -> Path:
        """Keep a report for the next `post()` without trying to send it now
        (a crawl that is being killed has no time to)."""
        return self._spool(report)

    def spooled_paths(self) -> list[Path]:
        if not self.spool_dir.is_dir():
            return []
        return sorted(self.spool_dir.glob("*.json"), key=lambda p: (_spooled_at(p), p.name))

    # -- sending --------------------------------------------------------------

    def _send(self, report: dict[str, Any]) -> PostResult:
        body = canonical_json(report)
        last_problem = ""
        last_status: int | None = None
        for attempt in range(1, self.max_attempts + 1):
            retry_after: float | None = None
            detail = ""
            try:
                status, payload = self._request(body)
            except urllib.error.HTTPError as exc:
                status, payload = exc.code, _read_json(exc)
                if status == 429 and _token_refused(exc.headers.get("WWW-Authenticate") if exc.headers else None):
                    # Held back for unknown tokens from this address, and this token is one of them:
                    # no wait makes it valid. Answered as the 401 it is (kept in the spool, exit 77).
                    status = 401
                retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
                detail = _service_detail(payload, exc.headers)
                if status in WRONG_URL:
                    location = exc.headers.get("Location") if exc.headers else None
                    return self._wrong_url(status, location, payload)
            except (urllib.error.URLError, OSError) as exc:
                last_problem = f"the service could not be reached at {self.endpoint}: {_reason(exc)}"
                status, payload, last_status = None, None, None
            if status in (200, 201):
                return self._judged(status, payload)
            if status is not None and status not in RETRYABLE_STATUSES:
                return self._rejected(status, payload)
            if status is not None:
                # It was reached: say what it answered, and why in its own words (a 503's "the
                # database is unavailable; retry later (nothing was stored)").
                last_problem = f"the service answered {status}" + (f": {detail}" if detail else "")
                last_status = status
            if attempt < self.max_attempts:
                delay = min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (attempt - 1))
                if retry_after is not None:
                    delay = min(self.max_backoff_seconds, max(delay, retry_after))
                self._sleep(delay)
        attempts = f"{self.max_attempts} attempt" + ("s" if self.max_attempts > 1 else "")
        return PostResult(
            outcome="unreachable",
            exit_code=exit_codes.SPOOLED,
            http_status=last_status,
            message=f"{last_problem} (after {attempts})",
        )

    def _request(self, body: bytes) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.endpoint,
            data=body,
            method="POST",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": USER_AGENT,
            },
        )
        # urllib's own handlers otherwise (proxies from the environment as it is now, errors); no redirects.
        opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler, _NoRedirect)
        with opener.open(request, timeout=self.timeout_seconds) as response:
            return response.status, _read_json(response)

    def _judged(self, status: int, payload: Any) -> PostResult:
        if not isinstance(payload, dict) or payload.get("verdict") not in ("complete", "incomplete", "paused"):
            # Accepted but unreadable: the run is stored, yet there is no verdict to act on.
            return PostResult(
                outcome="rejected",
                exit_code=exit_codes.BAD_INPUT,
                http_status=status,
                response=payload,
                message=f"the service answered {status} without a readable verdict",
            )
        verdict = payload["verdict"]
        exit_code = payload.get("exit_code")
        if not isinstance(exit_code, int) or isinstance(exit_code, bool):
            exit_code = exit_codes.INCOMPLETE if verdict == "incomplete" else exit_codes.COMPLETE
        return PostResult(
            outcome="judged",
            exit_code=exit_code,
            http_status=status,
            verdict=verdict,
            silent=bool(payload.get("silent", False)),
            findings=list(payload.get("findings") or []),
            run=None if payload.get("run") is None else str(payload.get("run")),
            message=f"verdict {verdict}" + (" (repeat of an identical report)" if status == 200 else ""),
            response=payload,
        )

    def _wrong_url(self, status: int, location: str | None, payload: Any) -> PostResult:
        if status in MOVED:
            message = (
                f"the service answered {status}, redirecting {self.endpoint} to {location or 'another address'}: "
                "set the service's URL (COMPLETENESS_URL) to the address it names (a report is posted, never "
                "redirected)"
            )
        else:
            message = (
                f"nothing at {self.endpoint} takes run reports ({status}): set the service's URL "
                "(COMPLETENESS_URL) to its base address, without /api/v1/runs"
            )
        return PostResult(
            outcome="rejected", exit_code=exit_codes.BAD_INPUT, http_status=status, message=message, response=payload
        )

    def _rejected(self, status: int, payload: Any) -> PostResult:
        message = _REJECTION_MESSAGES.get(status, f"the service rejected the report ({status})")
        errors: list[dict[str, Any]] = []
        if isinstance(payload, dict):
            raw = payload.get("errors") or payload.get("detail")
            if isinstance(raw, list):
                errors = [e if isinstance(e, dict) else {"message": str(e)} for e in raw]
            elif isinstance(raw, str):
                message = f"{message}: {raw}"
        if errors:
            message += ": " + "; ".join(
                f"{e.get('path', e.get('loc', '?'))}: {e.get('message', e.get('msg', ''))}" for e in errors
            )
        code = exit_codes.AUTH if status in (401, 403) else exit_codes.BAD_INPUT
        return PostResult(
            outcome="rejected",
            exit_code=code,
            http_status=status,
            message=message,
            errors=errors,
            response=payload,
        )

    # -- spool ----------------------------------------------------------------

    def _spool_name(self, report: dict[str, Any]) -> str:
        source = re.sub(r"[^a-z0-9._-]", "_", str(report.get("source", "unknown")))[:100]
        digest = hashlib.sha256(str(report.get("run_id", "")).encode()).hexdigest()[:20]
        return f"{source}__{digest}.json"

    def _write_atomically(self, directory: Path, name: str, envelope: dict[str, Any]) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        final = directory / name
        partial = directory / f".{name}.partial"
        partial.write_text(json.dumps(envelope, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(partial, final)  # a crash leaves the old file or the new, never half of one
        return final

    def _spool(self, report: dict[str, Any]) -> Path:
        envelope = {"spooled_at": isoformat(self._clock.now()), "endpoint": self.endpoint, "report": report}
        return self._write_atomically(self.spool_dir, self._spool_name(report), envelope)

    def _keep_rejected(self, report: dict[str, Any], result: PostResult) -> Path:
        """A refused report is kept for an operator, not re-sent: it would be
        refused again."""
        envelope = {
            "rejected_at": isoformat(self._clock.now()),
            "http_status": result.http_status,
            "message": result.message,
            "report": report,
        }
        return self._write_atomically(self.spool_dir / "rejected", self._spool_name(report), envelope)

    def _flush_spool(self, skip: str | None = None) -> tuple[list[PostResult], PostResult | None]:
        """Send spooled reports, oldest first; stops at the first that cannot be
        delivered now, and returns it as the second element (None: all sent).
        One this token may not post stays spooled ("kept")."""
        results: list[PostResult] = []
        if self.url_problem:
            return results, None  # nothing can be sent, and nothing spooled is touched
        for path in self.spooled_paths():
            if path.name == skip:
                continue
            try:
                report = json.loads(path.read_text(encoding="utf-8"))["report"]
            except (OSError, ValueError, KeyError, TypeError):
                target = self.spool_dir / "rejected" / path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
                continue
            result = self._send(report)
            result.source, result.run_id = report.get("source"), report.get("run_id")
            if result.outcome == "unreachable":
                return results, result
            if result.http_status in KEPT_IN_SPOOL:
                result.outcome, result.spool_path = "kept", path
                results.append(result)
                if result.http_status != 403:
                    break  # the token is unknown, or the URL wrong: none of them can be posted
                continue
            if result.outcome == "rejected":
                result.spool_path = self._keep_rejected(report, result)
            path.unlink(missing_ok=True)
            results.append(result)
        return results, None


def _url_problem(base_url: str) -> str | None:
    """Why the service's URL cannot be posted to at all, or None. A host and port without a scheme
    (127.0.0.1:8000, the form ADDR takes) is the likely slip."""
    scheme = base_url.split("://", 1)[0].lower() if "://" in base_url else ""
    if scheme in ("http", "https"):
        return None
    hint = "" if scheme else f", e.g. http://{base_url}"
    return (
        f"the service's URL (COMPLETENESS_URL) {base_url!r} is no http:// or https:// address: "
        f"set it to the service's base address{hint}"
    )


class _AnswerAfterBrokenSend:
    """A server may answer before it has read the whole body and close the connection: the service
    answers a report over its size limit 413 that way. urllib gives up on the broken send ("Broken
    pipe", as if the service were unreachable), so the report was spooled and re-sent, refused
    unseen, ahead of every later report. The answer is read instead; without one, the send's error
    stands."""

    _send_error: OSError | None = None

    def send(self, data: Any) -> None:
        if self._send_error is not None:
            return
        try:
            super().send(data)  # type: ignore[misc]
        except (BrokenPipeError, ConnectionResetError) as exc:
            self._send_error = exc

    def getresponse(self) -> http.client.HTTPResponse:
        try:
            return super().getresponse()  # type: ignore[misc,no-any-return]
        except (OSError, http.client.HTTPException):
            if self._send_error is not None:
                raise self._send_error from None
            raise


class _HTTPConnection(_AnswerAfterBrokenSend, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_AnswerAfterBrokenSend, http.client.HTTPSConnection):
    pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx is raised as an HTTPError and said (WRONG_URL)


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


def _spooled_at(path: Path) -> str:
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("spooled_at", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def _read_json(response: Any) -> Any:
    try:
        raw = response.read()
    except OSError:
        return None
    try:
        return json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, ValueError):
        return {"detail": raw[:500].decode("utf-8", "replace")}


def _service_detail(payload: Any, headers: Any) -> str:
    """The `detail` of an error the service itself answered (its errors are JSON);
    not a proxy's HTML error page, which _read_json keeps as text."""
    content_type = headers.get("Content-Type", "") if headers is not None else ""
    if "json" not in content_type or not isinstance(payload, dict) or not isinstance(payload.get("detail"), str):
        return ""
    detail = " ".join(payload["detail"].split())
    return detail if len(detail) <= 300 else detail[:299] + "…"


def _token_refused(challenge: str | None) -> bool:
    """RFC 6750's `error="invalid_token"` in a WWW-Authenticate challenge."""
    return bool(challenge) and re.search(r'error\s*=\s*"?invalid_token"?', str(challenge), re.IGNORECASE) is not None


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason if reason is not None else exc) or type(exc).__name__

"""/healthz, /readyz and /metrics: answered without a login, for probes and scrapers."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST

from completeness.web.security import from_this_machine
from sources.ops import checks, metrics


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers. Nothing else is asked: a restart cannot fix a database that is down."""
    return JsonResponse({"status": "ok"})


@require_safe
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """What is down, to anyone; where it is (the errors name hosts, ports, paths) to staff only."""
    found = checks.readiness()
    down = [name for name, reason in found.items() if reason is not None]
    lesser = checks.degradation()
    degraded = [name for name, reason in lesser.items() if reason is not None]
    told = (lambda reason: reason) if _is_staff(request) else _kind_only
    alert_path = checks.alert_path() if "database" not in down else None
    if alert_path is not None:
        if "error" in alert_path:
            alert_path["error"] = told(alert_path["error"])
        for job in alert_path.get("jobs", {}).values():
            if job.get("last_error"):
                job["last_error"] = told(job["last_error"])
    body = {
        "status": "unavailable" if down else "degraded" if degraded else "ready",
        "down": down,
        # Answered 200: the service works without them, slower or uncounted (docs/operations.md).
        "degraded": degraded,
        "checks": {
            name: {"ok": reason is None, **({"error": told(reason)} if reason else {})}
            for name, reason in {**found, **lesser}.items()
        },
        "task_engine": settings.TASK_ENGINE,
        # Reported, never failing readiness: a stopped task cluster is not fixed by taking this
        # process out of the load balancer.
        "alert_path": alert_path,
    }
    return JsonResponse(body, status=503 if down else 200)


def _is_staff(request: HttpRequest) -> bool:
    # Only a caller that sent a session cookie is asked for: reading the user asks the database,
    # which may be what is down.
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return False
    try:
        return bool(request.user.is_staff)
    except Exception:
        return False


def _kind_only(reason: str) -> str:
    """`ConnectionError: Error 111 connecting to 10.0.0.5:6379.` -> `ConnectionError`: the kind of
    failure, without the host, port or path the message names."""
    kind = reason.split(":", 1)[0].strip()
    return kind if kind.isidentifier() else "error"


@require_safe
@never_cache
def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = _metrics_refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(metrics.exposition(), content_type=CONTENT_TYPE_LATEST)


def _metrics_refusal(request: HttpRequest) -> HttpResponse | None:
    if from_this_machine(request):
        return None
    token = settings.METRICS_TOKEN
    if not token:
        return HttpResponse(
            "metrics are open to the loopback address only: set METRICS_TOKEN\n", status=403, content_type="text/plain"
        )
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    # Digests of equal length compared in constant time: the answer's timing tells neither how much of
    # the token matched nor how long it is.
    if scheme.lower() != "bearer" or not hmac.compare_digest(_digest(given.strip()), _digest(token)):
        response = HttpResponse("a bearer token (METRICS_TOKEN) is needed\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return None


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()

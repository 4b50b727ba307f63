"""The JSON API of run-report-v1: thin handlers over the ingest and pause services."""

from __future__ import annotations

import re

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from ninja import NinjaAPI, Query, Router, Status
from ninja.errors import ValidationError as NinjaValidationError
from ninja.security import HttpBearer, django_auth

from completeness.report import SLUG_PATTERN, RunReport
from sources import ingest, pausing, tokens
from sources.alerts import acks
from sources.errors import ApiError, FieldError, NotFound, ReportConflict, ReportInvalid, ReportTooLarge, format_path
from sources.models import ApiToken, PauseOrigin, Source
from sources.schemas import (
    AcknowledgeIn,
    AcknowledgementOut,
    ErrorOut,
    PageQuery,
    PauseIn,
    RunOut,
    RunPage,
    SourceOut,
    SourcePage,
    VerdictOut,
)


SLUG = re.compile(SLUG_PATTERN)


class TokenAuth(HttpBearer):
    openapi_description = "A token from `manage.py create_token`, scoped to some sources or to all."

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        return tokens.authenticate(token)


class CompletenessAPI(NinjaAPI):
    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        # The report is parsed by hand (to answer 413 and 422 exactly as the spec says), so
        # ninja does not see its model; the document gets it here.
        report_schema = RunReport.model_json_schema(
            ref_template="#/components/schemas/{model}", by_alias=True, mode="validation"
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update(report_schema.pop("$defs", {}))
        components["RunReport"] = report_schema
        return schema


api = CompletenessAPI(
    title="Completeness monitor",
    version="1",
    description="Run reports in, verdicts out: see run-report-v1 and verdicts in the project's spec.",
    auth=TokenAuth(),
    urls_namespace="api-v1",
)

ERRORS = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


@api.exception_handler(ApiError)
def api_error(request: HttpRequest, exc: ApiError):
    return api.create_response(request, exc.body(), status=exc.status)


@api.exception_handler(NinjaValidationError)
def validation_error(request: HttpRequest, exc: NinjaValidationError):
    errors = [
        FieldError(format_path(tuple(e.get("loc", ()))[1:] or ("(body)",)), e.get("msg", "invalid"))
        for e in exc.errors
    ]
    return api_error(request, ReportInvalid(errors, detail="invalid request"))


def _read_body(request: HttpRequest) -> bytes:
    limit = settings.REPORT_MAX_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    too_large = ReportTooLarge(f"the report is larger than {limit} bytes")
    if declared > limit:
        raise too_large
    body = request.read(limit + 1)
    if len(body) > limit:
        raise too_large
    return body


def _principal_token(request: HttpRequest) -> ApiToken | None:
    return request.auth if isinstance(request.auth, ApiToken) else None


def _visible_sources(request: HttpRequest) -> QuerySet[Source]:
    sources = Source.objects.select_related("last_run", "baseline_run").prefetch_related("tags")
    token = _principal_token(request)
    if token is not None and not token.all_sources:
        sources = sources.filter(tokens=token)
    return sources


def _source(request: HttpRequest, slug: str) -> Source:
    # What is no slug names no source; and PostgreSQL must never see a NUL in a parameter.
    source = _visible_sources(request).filter(slug=slug).first() if SLUG.fullmatch(slug) else None
    if source is None:
        raise NotFound(f"no source '{slug}' (or this token may not see it)")
    return source


def _actor(request: HttpRequest) -> tuple[str, str]:
    token = _principal_token(request)
    if token is not None:
        return PauseOrigin.API, f"token:{token.name}"
    return PauseOrigin.API, f"user:{request.user.get_username()}"


runs = Router(tags=["runs"])
sources = Router(tags=["sources"], auth=[TokenAuth(), django_auth])


@runs.post(
    "/runs",
    response={200: VerdictOut, 201: VerdictOut, 409: ErrorOut, 413: ErrorOut, **ERRORS},
    summary="Post the report of one run",
    description=(
        "201 for a new run, 200 for an identical repeat of the same (source, run_id), 409 when the "
        "body differs. 422 names every bad field. Nothing of a rejected report is stored."
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunReport"}}},
        }
    },
)
def post_run(request: HttpRequest):
    parsed = ingest.parse_report(_read_body(request))
    result = ingest.ingest_report(request.auth, parsed)
    return Status(201 if result.created else 200, VerdictOut.of(result.run, result.ignored_fields))


@sources.get("/sources", response={200: SourcePage, **ERRORS}, summary="Sources with their health and last run")
def list_sources(request: HttpRequest, page: PageQuery = Query(...)):
    items, count = page.slice(_visible_sources(request))
    return SourcePage(items=[SourceOut.of(s) for s in items], count=count, page=page.page, per_page=page.per_page)


@sources.get("/sources/{slug}", response={200: SourceOut, **ERRORS}, summary="One source")
def get_source(request: HttpRequest, slug: str):
    return SourceOut.of(_source(request, slug))


@sources.get("/sources/{slug}/runs", response={200: RunPage, **ERRORS}, summary="Run history, newest first")
def list_runs(request: HttpRequest, slug: str, page: PageQuery = Query(...)):
    source = _source(request, slug)
    items, count = page.slice(source.runs.order_by("-started_at", "-id"))
    return RunPage(items=[RunOut.of(run) for run in items], count=count, page=page.page, per_page=page.per_page)


@sources.post("/sources/{slug}/pause", response={200: SourceOut, **ERRORS}, summary="Pause a source on purpose")
def pause(request: HttpRequest, slug: str, payload: PauseIn):
    source = _source(request, slug)
    if payload.until is not None and payload.until <= timezone.now():
        raise ReportInvalid([FieldError("until", "must be in the future")], detail="invalid request")
    origin, actor = _actor(request)
    pausing.pause_source(source, origin=origin, actor=actor, reason=payload.reason, until=payload.until)
    return SourceOut.of(_source(request, slug))


@sources.post("/sources/{slug}/resume", response={200: SourceOut, **ERRORS}, summary="Lift a pause")
def resume(request: HttpRequest, slug: str):
    source = _source(request, slug)
    origin, actor = _actor(request)
    pausing.resume_source(source, origin=origin, actor=actor, reason="resumed")
    return SourceOut.of(_source(request, slug))


@sources.post(
    "/sources/{slug}/acknowledge",
    response={200: AcknowledgementOut, 409: ErrorOut, **ERRORS},
    summary="Acknowledge a failing or overdue source: no reminders until its health changes",
    description="409 when the source is not failing or overdue (or is paused): there is nothing to acknowledge.",
)
def acknowledge(request: HttpRequest, slug: str, payload: AcknowledgeIn):
    source = _source(request, slug)
    _, actor = _actor(request)
    try:
        return AcknowledgementOut.of(acks.acknowledge(source=source, by=actor, note=payload.note))
    except acks.NothingToAcknowledge as exc:
        raise ReportConflict(str(exc)) from exc


api.add_router("", runs)
api.add_router("", sources)

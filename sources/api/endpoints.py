"""The JSON API of run-report-v1: thin handlers over the ingest and pause services."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Prefetch, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from ninja import NinjaAPI, Query, Router, Status
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationErrorContext
from ninja.errors import ValidationError as NinjaValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.operation import Operation
from ninja.parser import Parser
from ninja.security import HttpBearer, django_auth
from ninja.types import DictStrAny

from completeness.report import SLUG_PATTERN, RunReport, json_kind
from completeness.web import throttle
from sources.alerts import acks
from sources.api import auth
from sources.api.middleware import DATABASE_DOWN, log_database_down
from sources.api.schemas import (
    AcknowledgeIn,
    AcknowledgementOut,
    ErrorOut,
    PageQuery,
    PauseIn,
    RunOut,
    RunPage,
    SettingsIn,
    SourceFilter,
    SourceOut,
    SourcePage,
    VerdictOut,
    WindowIn,
    WindowOut,
)
from sources.ingest import ingest, jsonbody
from sources.ingest.errors import (
    WRONG_TYPE_ERRORS,
    ApiError,
    FieldError,
    NotFound,
    ReportConflict,
    ReportForbidden,
    ReportInvalid,
    ReportTooLarge,
    ServiceUnavailable,
    UnsupportedMediaType,
    check_storable,
    error_message,
    format_path,
    unknown_field_message,
)
from sources.models import ApiToken, PauseOrigin, Run, Source
from sources.ops import metrics
from sources.services import pausing, rule_settings, windows

SLUG = re.compile(SLUG_PATTERN)
log = logging.getLogger("completeness.ingest")


class TokenAuth(HttpBearer):
    openapi_description = (
        "A token from `manage.py create_token`, scoped to some sources or to all. Changing settings and "
        "planning maintenance windows also need the token's `may_configure` (`create_token --may-configure`)."
    )

    def __init__(self, configures: str | None = None) -> None:
        # What the endpoint changes, when it changes how sources are judged: a token without
        # may_configure is refused before its body is read, so the answer is the 403 whatever it sent.
        # One class for both, so the OpenAPI document keeps one bearer scheme.
        super().__init__()
        self.configures = configures

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        # ninja splits the header at single spaces: "Bearer  <token>" (RFC 7235 allows more than one)
        # reached here with a space in front and was answered "unknown, malformed or revoked".
        found = self._known(request, token.strip(" "))
        if found is not None and self.configures and not found.may_configure:
            raise ReportForbidden(
                f"{self.configures} needs a token that may configure, and token '{found.name}' may not: it "
                "posts reports, pauses, resumes and acknowledges. An operator grants it on the token's "
                "admin page (API tokens, 'May configure') or makes a token with `bin/manage create_token "
                "NAME --may-configure`"
            )
        return found

    def _known(self, request: HttpRequest, token: str) -> ApiToken | None:
        # Each limit answers 429 with Retry-After (ninja's Throttled, see http_error). The token is
        # looked up first: unknown tokens from an address (a typo behind the same NAT, a guesser)
        # count only against that address's unknown tokens, never against a valid token sent from
        # it, which is held only to its own rate and its address's rate of valid requests. Tokens
        # are 256 random bits: being answered for a valid one while the address is held back for
        # unknown ones gives a guesser nothing to find.
        address = throttle.client_address(request)
        found = auth.authenticate(token)
        if found is None:
            try:
                throttle.API_FAILED_TOKENS.check(address)
                throttle.API_FAILED_TOKENS.hit(address)
            except Throttled as exc:
                # ninja's "Too many requests." sent whoever mistyped a token to wait and retry, which
                # can never succeed; saying the token is unknown tells no more than the 401 would.
                exc.message = (
                    "too many unknown tokens from this address, and this one is unknown too (malformed or "
                    "revoked?): check the token; a valid one from this address is not held back"
                )
                exc.token_unknown = True  # type: ignore[attr-defined]
                raise
            return None
        throttle.API_PER_ADDRESS.hit(address)
        throttle.API_PER_TOKEN.hit(str(found.pk))
        return found


class CompletenessAPI(NinjaAPI):
    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: DictStrAny | None = None
    ) -> OpenAPISchema:
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

    def validation_error_from_error_contexts(
        self, error_contexts: list[ValidationErrorContext[Any]]
    ) -> NinjaValidationError:
        exc = super().validation_error_from_error_contexts(error_contexts)
        raw = [
            (context.model, error)
            for context in error_contexts
            for error in context.pydantic_validation_error.errors(include_url=False)
        ]
        for error, (model, original) in zip(exc.errors, raw, strict=True):
            # ninja names a query parameter as the client spells it ("page") only where the whole
            # location is one it flattened: an item of a list parameter kept the handler's argument
            # in front ("filters.health[0]"), which is no part of the contract.
            error["loc"] = (model.__ninja_param_source__, *_flat_loc(model, tuple(original["loc"])))
            # ninja drops each error's input. A name refused for an invisible character is answered
            # with the character it found (docs/api.md), and a value of the wrong JSON type with what
            # it is ("not the text \"0.5\""), both read from the input by error_message: put back
            # for those errors alone, as for a report's.
            value = original.get("input")
            if error.get("type") == "string_pattern_mismatch" and isinstance(value, str):
                error["input"] = value
            elif error.get("type") in WRONG_TYPE_ERRORS and "input" in original:
                error["input"] = value
            elif error.get("type") == "extra_forbidden":
                # A key the body does not take, with the ones it does (`untill`: did you mean until?).
                error["msg"] = unknown_field_message(model, tuple(original["loc"])) or error.get("msg")
        return exc

    def get_openapi_operation_id(self, operation: Operation) -> str:
        # ninja names an operation after its function's module; the ids stay those of the document
        # before the endpoints moved into sources/api/, so clients generated from it keep their names.
        return f"sources_api_{operation.view_func.__name__}"


class LimitedJsonParser(Parser):
    """Bodies of the other endpoints under the limits of a report: ninja's own parser recurses
    without bound and reads 1e400 as infinity. Every key and value of a body is checked here for
    what the database cannot hold (NUL, lone surrogates, infinity), so no schema can forget one:
    a 422 naming each, never a 500 at insert."""

    def parse_body(self, request: HttpRequest) -> DictStrAny:
        # As for a report: a form's `reason=x` was read as JSON and refused as "not valid JSON",
        # which pointed at the body's text rather than at its Content-Type.
        _check_content_type(request, "a request body")
        body = request.body
        if jsonbody.too_deep(body):
            raise ValueError(f"nested deeper than {jsonbody.MAX_DEPTH} levels")
        value, _ = jsonbody.loads(body)
        if not isinstance(value, dict):
            # Every body this API takes is an object; ninja would read `[]` or `""` as one with defaults.
            error = FieldError("(body)", f"must be a JSON object, not {json_kind(value)}")
            raise ReportInvalid([error], detail="invalid request")
        unstorable = check_storable(value)
        if unstorable:
            raise ReportInvalid(unstorable, detail="invalid request")
        return value


def _flat_loc(model: Any, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """A location in ninja's model of an operation's parameters as the client names it: the longest
    start of it that ninja flattened, mapped to the flat name, and the rest (list indices) kept."""
    flattened: dict[tuple[str | int, ...], tuple[str, ...]] = getattr(model, "__ninja_flatten_map_reverse__", {})
    for cut in range(len(loc), 0, -1):
        if loc[:cut] in flattened:
            return (*flattened[loc[:cut]], *loc[cut:])
    return loc


api = CompletenessAPI(
    title="Completeness monitor",
    version="1",
    description=(
        "Run reports in, verdicts out. The contract in words: `docs/api.md` (run report v1) and "
        "`docs/verdicts.md` (how runs are judged) in the service's repository. The dashboard: [/](/)."
    ),
    auth=TokenAuth(),
    urls_namespace="api-v1",
    parser=LimitedJsonParser(),
)

ERRORS = {401: ErrorOut, 403: ErrorOut, 422: ErrorOut, 429: ErrorOut, 503: ErrorOut}
# The 403s of the endpoints that change how sources are judged, for a client generated from the document.
NOT_STAFF = "a signed-in user who is not staff, or a session's request without its CSRF token"
SETTINGS_FORBIDDEN = f"Forbidden: a token without `may_configure`, {NOT_STAFF}"
WINDOWS_FORBIDDEN = f"Forbidden: a token without `may_configure` or not for all sources, {NOT_STAFF}"
# Only a path that names a source or a run can name one that is not there (or not the caller's).
NAMED_ERRORS = {**ERRORS, 404: ErrorOut}
# Every body is JSON (LimitedJsonParser).
BODY_ERRORS = {415: ErrorOut}


@api.exception_handler(ApiError)
def api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    response = api.create_response(request, exc.body(), status=exc.status)
    for name, value in exc.headers.items():
        response[name] = value
    return response


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja answers a body it cannot parse with 400; the contract says 422, naming the body (or,
    # when the parser named the bad fields, naming them).
    if isinstance(exc.__cause__, ApiError):
        return api_error(request, exc.__cause__)
    if exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
        bad_body = FieldError("(body)", jsonbody.why_not_json(exc.__cause__))
        return api_error(request, ReportInvalid([bad_body], detail="invalid request"))
    error = ApiError(
        _unauthorized(request) if isinstance(exc, AuthenticationError) else str(exc), status=exc.status_code
    )
    if isinstance(exc, Throttled) and exc.wait:
        error.headers = {"Retry-After": str(int(exc.wait))}
    challenge = _challenge(request, exc)
    if challenge:
        error.headers = {**error.headers, "WWW-Authenticate": challenge}
    return api_error(request, error)


def _log_refused(token: ApiToken, exc: ReportInvalid) -> None:
    """One line naming whose report was refused and why: Django's own said "Unprocessable Entity:
    /api/v1/runs", and an operator asked why a crawler's runs never showed had nothing to search for.
    Values are quoted (repr) as the client sent them, so a newline in one cannot forge a line."""
    source, run_id = exc.about.get("source"), exc.about.get("run_id")
    reasons = "; ".join(f"{e.path}: {e.message}" for e in exc.errors[:3])
    more = f" (and {len(exc.errors) - 3} more)" if len(exc.errors) > 3 else ""
    log.warning(
        "report refused (422): source=%r run_id=%r token=%r: %s%s",
        source,
        run_id,
        token.name,
        reasons[:1000],
        more,
        extra={"source": source, "run_id": run_id, "token": token.name, "status": 422},
    )


def _challenge(request: HttpRequest, exc: HttpError) -> str:
    """RFC 6750's WWW-Authenticate: every 401 carries one, and `invalid_token` says the token itself
    is refused, also on the 429 for an unknown token held back. A client reading only the status took
    that 429 as a rate to wait out, retried and spooled a report no retry could post."""
    if getattr(exc, "token_unknown", False):
        return 'Bearer error="invalid_token"'
    if not isinstance(exc, AuthenticationError):
        return ""
    scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
    return 'Bearer error="invalid_token"' if scheme.lower() == "bearer" and token.strip() else "Bearer"


def _unauthorized(request: HttpRequest) -> str:
    """What to fix, in place of ninja's bare "Unauthorized": the header, or the token in it."""
    header = request.META.get("HTTP_AUTHORIZATION", "").strip()
    if not header:
        return "no token: send the header Authorization: Bearer <token> (bin/manage create_token prints one)"
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return "send the token as Authorization: Bearer <token>"
    return "the token is unknown, malformed or revoked"


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return api_error(request, NotFound("not found"))


def database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    log_database_down(exc)
    return api_error(request, ServiceUnavailable())


for _exc in DATABASE_DOWN:
    # ninja's ExcHandler admits an exception class as the second argument too; it only ever passes one.
    api.add_exception_handler(_exc, database_unavailable)  # type: ignore[arg-type]


@api.exception_handler(NinjaValidationError)
def validation_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    errors = [FieldError(format_path(_field_loc(tuple(e.get("loc", ())))), _message(e)) for e in exc.errors]
    return api_error(request, ReportInvalid(errors, detail="invalid request"))


def _message(error: DictStrAny) -> str:
    # A body left out reached pydantic as a missing field, "(body): Field required".
    if error.get("type") == "missing" and _field_loc(tuple(error.get("loc", ()))) == ("(body)",):
        return "no body: send a JSON object"
    return error_message(error)


def _check_content_type(request: HttpRequest, what: str = "a run report") -> None:
    # Parameters (charset) are allowed; Django has split them off and lower-cased the type.
    if request.content_type != "application/json":
        sent = f"not {request.content_type}" if request.content_type else "this one had no Content-Type"
        raise UnsupportedMediaType(f"{what} is sent as Content-Type: application/json; {sent}")


def _field_loc(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    # ("query", "page") names `page`; ("body", "payload", "reason") names `reason`, as the body's
    # fields are named to the caller (the handler's parameter name is no part of the contract).
    if loc[:1] == ("body",):
        return loc[2:] or ("(body)",)
    return loc[1:] or ("(body)",)


def _read_body(request: HttpRequest) -> bytes:
    limit = settings.REPORT_MAX_BYTES
    # What makes a report large, and who can change the limit: "larger than 1048576 bytes" left a
    # crawler with 6,000 proxy transitions (the contract allows 50,000) to guess what to send less of.
    too_large = ReportTooLarge(
        f"the report is larger than {limit} bytes, this service's limit (REPORT_MAX_BYTES): send fewer"
        " proxy_transitions (about 180 bytes each), pages.lost_urls or failure_window events and series,"
        " or ask its operator to raise the limit"
    )
    stream = request
    if request.META.get("CONTENT_LENGTH"):
        try:
            declared = int(request.META["CONTENT_LENGTH"])
        except ValueError:
            declared = 0
        if declared > limit:
            raise too_large
    elif request.META.get("wsgi.input_terminated"):
        # A chunked body has no length, and Django reads a body without one as empty. The server
        # (gunicorn) ends this stream where the body ends, so it is read directly, under one limit.
        stream = request.META["wsgi.input"]
    body = stream.read(limit + 1)
    if len(body) > limit:
        raise too_large
    return body


def _principal_token(request: HttpRequest) -> ApiToken | None:
    # ninja sets `auth` on the request it authenticated; Django's HttpRequest does not declare it.
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiToken) else None


def _redacted(request: HttpRequest) -> bool:
    """A session that is not staff reads runs without the credentials a crawler's text may quote."""
    return _principal_token(request) is None and not request.user.is_staff


# What RunOut never shows and a report may fill up to its size limit (a megabyte each): a page of
# 200 sources read two runs each, a page of 200 runs one.
RUN_BULK = ("raw", "lost_urls", "failed_batches", "requests_by_class", "delivery_errors", "meta")


def _visible_sources(request: HttpRequest) -> QuerySet[Source]:
    # The runs of a page's sources by primary key, not joined: a join reads every source's two runs
    # before the sort picks a page (144 ms for the last page of 20,000 sources, docs/benchmarks.md).
    runs = Run.objects.defer(*RUN_BULK)
    sources = Source.objects.prefetch_related(
        Prefetch("last_run", queryset=runs), Prefetch("baseline_run", queryset=runs), "tags"
    )
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

# OpenAPI links from a stored or repeated run to what a client does next with its source: they tell
# a reader (and Schemathesis's stateful phase, tests/test_fuzz_api.py) that the answer's `source` is
# the slug those endpoints take.
_SOURCE_LINKS = {
    name: {"operationId": f"sources_api_{operation}", "parameters": {"slug": "$response.body#/source"}}
    for name, operation in [
        ("GetSource", "get_source"),
        ("ListRuns", "list_runs"),
        ("Pause", "pause"),
        ("Resume", "resume"),
        ("ChangeSettings", "change_settings"),
        ("Acknowledge", "acknowledge"),
        ("ListWindows", "source_windows"),
    ]
}
_SOURCE_LINKS["GetRun"] = {
    "operationId": "sources_api_get_run",
    "parameters": {"slug": "$response.body#/source", "run_id": "$response.body#/run_id"},
}
sources = Router(tags=["sources"], auth=[TokenAuth(), django_auth])


@runs.post(
    "/runs",
    response={200: VerdictOut, 201: VerdictOut, 409: ErrorOut, 413: ErrorOut, 415: ErrorOut, **ERRORS},
    summary="Post the report of one run",
    description=(
        "201 for a new run, 200 for a repeat of the same (source, run_id) with an equal report, 409 when "
        "the report differs. 422 names every bad field. Nothing of a rejected report is stored."
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunReport"}}},
        },
        # ninja keys the generated responses by int: the same keys merge into them.
        "responses": {201: {"links": _SOURCE_LINKS}, 200: {"links": _SOURCE_LINKS}},
    },
)
def post_run(request: HttpRequest) -> Status[VerdictOut]:
    _check_content_type(request)
    token = _principal_token(request)
    assert token is not None, "the runs router authenticates by token only"
    with metrics.INGEST_SECONDS.time():
        try:
            parsed = ingest.parse_report(_read_body(request))
        except ReportInvalid as exc:
            _log_refused(token, exc)
            raise
        result = ingest.ingest_report(token, parsed)
    run = result.run
    if result.created:
        metrics.report_stored(run)
    log.info(
        "report %s: source=%s run_id=%s run=%s verdict=%s silent=%s",
        "stored" if result.created else "repeated",
        parsed.report.source,
        run.run_id,
        run.pk,
        run.verdict,
        run.silent,
        extra={
            "source": parsed.report.source,
            "run_id": run.run_id,
            "run": run.pk,
            "verdict": run.verdict,
            "silent": run.silent,
            "new_run": result.created,
        },
    )
    return Status(201 if result.created else 200, VerdictOut.of(run, result.ignored_fields))


# ninja types Query as a generic alias for the checker, not as the call its documentation shows (as here).
@sources.get("/sources", response={200: SourcePage, **ERRORS}, summary="Sources with their health and last run")
def list_sources(
    request: HttpRequest,
    page: PageQuery = Query(...),  # type: ignore[type-arg]
    filters: SourceFilter = Query(...),  # type: ignore[type-arg]
) -> SourcePage:
    chosen = _visible_sources(request)
    if filters.health:
        chosen = chosen.filter(health__in=filters.health)
    items, count = page.slice(chosen)
    return SourcePage(
        items=[SourceOut.of(s, _redacted(request)) for s in items], count=count, page=page.page, per_page=page.per_page
    )


@sources.get("/sources/{slug}", response={200: SourceOut, **NAMED_ERRORS}, summary="One source")
def get_source(request: HttpRequest, slug: str) -> SourceOut:
    return SourceOut.of(_source(request, slug), _redacted(request))


# Query: as above.
@sources.get("/sources/{slug}/runs", response={200: RunPage, **NAMED_ERRORS}, summary="Run history, newest first")
def list_runs(request: HttpRequest, slug: str, page: PageQuery = Query(...)) -> RunPage:  # type: ignore[type-arg]
    source = _source(request, slug)
    items, count = page.slice(source.runs.order_by("-started_at", "-id").defer(*RUN_BULK))
    return RunPage(
        items=[RunOut.of(run, _redacted(request)) for run in items], count=count, page=page.page, per_page=page.per_page
    )


# {path:...}: a run_id may hold a slash ("2026-09-15/night"); the answer of POST /runs links here.
@sources.get(
    "/sources/{slug}/runs/{path:run_id}", response={200: RunOut, **NAMED_ERRORS}, summary="One run, by its run_id"
)
def get_run(request: HttpRequest, slug: str, run_id: str) -> RunOut:
    source = _source(request, slug)
    run = source.runs.defer(*RUN_BULK).filter(run_id=run_id).first() if "\x00" not in run_id else None
    if run is None:
        raise NotFound(f"no run '{run_id}' of source '{slug}'")
    return RunOut.of(run, _redacted(request))


@sources.post(
    "/sources/{slug}/pause",
    response={200: SourceOut, **NAMED_ERRORS, **BODY_ERRORS},
    summary="Pause a source on purpose",
)
def pause(request: HttpRequest, slug: str, payload: PauseIn) -> SourceOut:
    source = _source(request, slug)
    # As the page's form takes it: a reason of spaces only paused the source as "Paused:    ." on its page.
    reason = payload.reason.strip()
    problems = [] if reason else [FieldError("reason", "must say why the source is paused (not only spaces)")]
    problem = pausing.until_problem(payload.until, timezone.now()) if payload.until is not None else None
    if problem:
        problems.append(FieldError("until", problem))
    if problems:
        raise ReportInvalid(problems, detail="invalid request")
    origin, actor = _actor(request)
    pausing.pause_source(source, origin=origin, actor=actor, reason=reason, until=payload.until)
    return SourceOut.of(_source(request, slug), _redacted(request))


@sources.post("/sources/{slug}/resume", response={200: SourceOut, **NAMED_ERRORS}, summary="Lift a pause")
def resume(request: HttpRequest, slug: str) -> SourceOut:
    source = _source(request, slug)
    origin, actor = _actor(request)
    pausing.resume_source(source, origin=origin, actor=actor, reason="resumed")
    return SourceOut.of(_source(request, slug), _redacted(request))


@sources.patch(
    "/sources/{slug}/settings",
    response={200: SourceOut, **NAMED_ERRORS, **BODY_ERRORS},
    auth=[TokenAuth(configures="changing a source's settings"), django_auth],
    summary="Change a source's settings",
    description=(
        "Needs a token covering the source that may configure (`create_token --may-configure`), or a staff "
        "user: 403 otherwise, before the body is read. A bad value is 422 naming it; nothing is written."
    ),
    openapi_extra={"responses": {403: {"description": SETTINGS_FORBIDDEN}}},
)
def change_settings(request: HttpRequest, slug: str, payload: SettingsIn) -> SourceOut:
    source = _source(request, slug)
    if _principal_token(request) is None and not request.user.is_staff:
        # As on the source page: a logged-in operator reads and pauses, staff change how runs are judged.
        raise ReportForbidden("only staff change a source's settings")
    try:
        rule_settings.update_rule_settings(source, **payload.changes())
    except ValidationError as exc:
        raise ReportInvalid(
            [
                FieldError(SETTING_PATHS.get(name, name), message)
                for name, messages in exc.message_dict.items()
                for message in messages
            ],
            detail="invalid settings",
        ) from None
    return SourceOut.of(_source(request, slug), _redacted(request))


# The model's names of the two durations, as the API spells them.
SETTING_PATHS = {"expected_interval": "expected_interval_seconds", "grace": "grace_seconds"}


@sources.post(
    "/sources/{slug}/acknowledge",
    response={200: AcknowledgementOut, 409: ErrorOut, **NAMED_ERRORS, **BODY_ERRORS},
    summary="Acknowledge a failing or overdue source: no reminders until its health changes",
    description="409 when the source is not failing or overdue (or is paused): there is nothing to acknowledge.",
)
def acknowledge(request: HttpRequest, slug: str, payload: AcknowledgeIn) -> AcknowledgementOut:
    source = _source(request, slug)
    _, actor = _actor(request)
    try:
        return AcknowledgementOut.of(acks.acknowledge(source=source, by=actor, note=payload.note))
    except acks.NothingToAcknowledge as exc:
        raise ReportConflict(str(exc)) from exc


@sources.get(
    "/sources/{slug}/windows",
    response={200: list[WindowOut], **NAMED_ERRORS},
    summary="Maintenance windows covering a source, open now or ahead, soonest first",
)
def source_windows(request: HttpRequest, slug: str) -> list[WindowOut]:
    return [WindowOut(**window) for window in windows.upcoming(_source(request, slug))]


@sources.post(
    "/windows",
    response={201: WindowOut, **ERRORS, **BODY_ERRORS},
    auth=[TokenAuth(configures="planning a maintenance window"), django_auth],
    summary="Plan a maintenance window",
    description=(
        "Pauses the sources it covers (listed, by tag, by region) from starts_at to ends_at, and every week "
        "after when weekly. Needs a token for all sources that may configure (`create_token --may-configure`), "
        "or a staff user: 403 otherwise."
    ),
    openapi_extra={"responses": {403: {"description": WINDOWS_FORBIDDEN}}},
)
def create_window(request: HttpRequest, payload: WindowIn) -> Status[WindowOut]:
    token = _principal_token(request)
    if (token is not None and not token.all_sources) or (token is None and not request.user.is_staff):
        raise ReportForbidden("maintenance windows need a token for all sources or a staff user")
    _, actor = _actor(request)
    # The answer describes the window as of before it was checked: a one-off window that ends in the
    # meantime still has the occurrence it was created with, not none.
    now = timezone.now()
    try:
        window = windows.create_window(
            name=payload.name,
            reason=payload.reason,
            starts_at=payload.starts_at,
            ends_at=payload.ends_at,
            weekly=payload.weekly,
            source_slugs=payload.sources,
            tag_names=payload.tags,
            region=payload.region,
            created_by=actor,
        )
    except ValidationError as exc:
        errors = [FieldError(field, message) for field, messages in exc.message_dict.items() for message in messages]
        raise ReportInvalid(errors, detail="invalid window") from exc
    upcoming = windows.upcoming_of(window, now)
    assert upcoming is not None, "the window was checked to end after now"
    return Status(201, WindowOut(**upcoming))


api.add_router("", runs)
api.add_router("", sources)

"""Schemathesis over GET /api/v1/openapi.json, in process through the WSGI application: whatever it
sends, with a valid token, the API answers no 5xx, no status the document does not declare, and
bodies of the documented shape.

Bounded (FUZZ_EXAMPLES per operation, about half a minute on either database) so that it runs in CI
on both; FUZZ_EXAMPLES=2000 locally for a long hunt."""

import json
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from completeness.wsgi import application
from sources.api import auth
from sources.ingest import ingest
from tests.conftest import make_token, report

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))


# Loaded at collection, through the application: the document needs no database. (Schemathesis's
# from_fixture loader reads a node attribute pytest 9 no longer has.)
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    # Random slugs name no source: half the time the fuzz asks about the one that has runs.
    if not path_parameters or "slug" not in path_parameters:
        return st.just(path_parameters)
    return st.sampled_from([path_parameters, {**path_parameters, "slug": "shop"}])


@schema.hook
def flatmap_body(context, body):
    # Random instants are almost never plausible (year 2000 to a day ahead), so nearly every report
    # would stop at 422 before judging and storing: half of them get instants of yesterday.
    if not context.operation.path.endswith("/runs") or not isinstance(body, dict):
        return st.just(body)
    yesterday = {"started_at": "2026-11-29T03:00:00Z", "finished_at": "2026-11-29T04:00:00Z"}
    return st.sampled_from([body, {**body, **yesterday}])


@pytest.fixture(autouse=True)
def fuzzable(db, settings):
    # Hundreds of requests a minute from one address and token are what a fuzzer is, not an attack.
    settings.API_RATE_PER_ADDRESS = "off"
    settings.API_RATE_PER_TOKEN = "off"
    settings.API_FAILED_TOKENS_PER_ADDRESS = "off"
    # The requests run inside the test's transaction, which closing the connection at the end of
    # each request would end (Django's own test client disconnects these for the same reason).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def bearer(db) -> dict:
    token = make_token("fuzz")
    # Something for the {slug} endpoints to find besides the fuzzer's own reports.
    # Through the service, not Django's test client: that client reconnects the signal handlers
    # the fixture above took off.
    ingest.ingest_report(auth.authenticate(token), ingest.parse_report(json.dumps(report(source="shop")).encode()))
    return {"Authorization": f"Bearer {token}"}


@schema.parametrize()
@hypothesis_settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_answers_every_request_with_a_declared_status_and_no_server_error(case, bearer):
    # And every answer has the documented shape. Not Schemathesis's negative-data check: it counts
    # 413 for a body both too large and invalid as a failure, where the contract puts size first.
    case.call_and_validate(
        headers=bearer, checks=[not_a_server_error, status_code_conformance, response_schema_conformance]
    )

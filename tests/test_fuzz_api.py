"""Schemathesis over GET /api/v1/openapi.json, in process through the WSGI application: whatever it
sends, with a valid token, the API answers no 5xx, no status the document does not declare, and
bodies of the documented shape.

A stateful phase follows the document's links (a stored run's `source` to that source's endpoints),
and hand-made inputs that once broke the server are explicit examples: each is a 4xx JSON answer and stores
nothing. Bounded (FUZZ_EXAMPLES per operation, FUZZ_SCENARIOS sequences of at most 6 calls, the
stateful phase derandomized; about a minute on either database) so that it runs in CI on both;
FUZZ_EXAMPLES=2000 FUZZ_SCENARIOS=500 locally for a long hunt."""

import json
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
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
FUZZ_SCENARIOS = int(os.environ.get("FUZZ_SCENARIOS", "15"))
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


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
    # A third are valid reports of the fuzz's source under a new run id: their 201 (or 200) is where
    # the stateful phase follows the document's links to the source's endpoints.
    if not context.operation.path.endswith("/runs") or not isinstance(body, dict):
        return st.just(body)
    yesterday = {"started_at": "2026-11-29T03:00:00Z", "finished_at": "2026-11-29T04:00:00Z"}
    valid = st.integers(0, 10**6).map(lambda n: report(source="shop", run_id=f"fuzz-{n}", **yesterday))
    return st.one_of(st.sampled_from([body, {**body, **yesterday}]), valid)


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
    token = make_token("fuzz", may_configure=True)
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
    case.call_and_validate(headers=bearer, checks=CHECKS)


class Workflow(schema.as_state_machine()):
    """Sequences along the links: post a run, then read, pause, resume, configure or acknowledge its
    source with generated parameters and bodies; every answer declared, documented, and no 5xx."""

    headers: dict = {}
    called: list[str] = []

    def setup(self):
        # Each sequence starts from the same database, so that Hypothesis can replay and shrink one:
        # a run stored by an earlier sequence would turn the same post into a repeat.
        self.savepoint = transaction.savepoint()

    def teardown(self):
        transaction.savepoint_rollback(self.savepoint)

    def after_call(self, response, case):
        self.called.append(f"{case.operation.label} {response.status_code}")

    def get_call_kwargs(self, case):
        return {"headers": self.headers}

    def validate_response(self, response, case, additional_checks=None, **kwargs):
        case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)


def test_sequences_along_the_documents_links_answer_no_server_error(bearer):
    Workflow.headers, Workflow.called = bearer, []
    Workflow.run(
        settings=hypothesis_settings(
            max_examples=FUZZ_SCENARIOS,
            stateful_step_count=6,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
    )
    # The links were followed: calls beyond posting runs, on the source a stored run named.
    followed = [call for call in Workflow.called if "{slug}" in call]
    print(len(Workflow.called), "calls,", len(followed), "along links:", sorted(set(followed)))
    assert followed, Workflow.called


# --- hand-made inputs that once broke the server, as explicit examples ---------------------------------------

RUNS = ("/api/v1/runs", "POST", None)
SETTINGS = ("/api/v1/sources/{slug}/settings", "PATCH", "shop")
ACKNOWLEDGE = ("/api/v1/sources/{slug}/acknowledge", "POST", "shop")
EXAMPLES = {
    "NUL in a field_minimums key": (SETTINGS, {"field_minimums": {"pri\x00ce": 0.5}}),
    "by_class counts past 2^31, told a total of 5": (
        RUNS,
        report(run_id="big", requests={"total": 5, "by_class": {"ok": 2**31 - 1, "http_5xx": 2**31 - 1}}),
    ),
    "a by_class count past 2^31": (RUNS, report(run_id="big", requests={"by_class": {"ok": 2**31}})),
    "false as a share": (SETTINGS, {"min_completeness": False}),
    '"0.5" as a share': (SETTINGS, {"drop_threshold": "0.5"}),
    "5.0 as a number of days": (SETTINGS, {"learn_days": 5.0}),
    'acknowledge ""': (ACKNOWLEDGE, ""),
    "acknowledge []": (ACKNOWLEDGE, []),
    "acknowledge 123": (ACKNOWLEDGE, 123),
    "a run id with U+200B": (RUNS, report(run_id="run\u200b1")),
    "128 KB of escaped quotes": (RUNS, report(run_id='"' * 65_000)),
}


def stored() -> list:
    """Everything an example could have written."""
    from sources.models import Acknowledgement, Run, Source

    return [
        list(Source.objects.order_by("pk").values()),
        list(Run.objects.order_by("pk").values_list("pk", "run_id")),
        Acknowledgement.objects.count(),
    ]


@pytest.fixture
def failing_shop(bearer):
    # A source with a problem, so that a well-formed acknowledgement would be stored.
    ingest.ingest_report(
        auth.authenticate(bearer["Authorization"].split()[1]),
        ingest.parse_report(json.dumps(report(source="shop", run_id="run-2", collected=100)).encode()),
    )
    return bearer


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_hand_made_input_is_a_4xx_json_answer_and_stores_nothing(name, failing_shop):
    (path, method, slug), body = EXAMPLES[name]
    case = schema[path][method].Case(
        path_parameters={"slug": slug} if slug else None, body=body, media_type="application/json"
    )
    before = stored()
    response = case.call(headers=failing_shop)
    case.validate_response(response, checks=CHECKS)
    assert 400 <= response.status_code < 500, response.text
    answer = response.json()
    assert answer["detail"] and isinstance(answer["errors"], list), answer
    assert stored() == before


def test_a_recovery_of_the_least_float_is_judged_with_finite_numbers(bearer):
    # Not refused: the equilibrium is computed in logarithms, and this is a valid input.
    body = report(run_id="tiny", pacing={"backoff": 2.0, "recovery": 5e-324}, requests={"total": 10})
    case = schema["/api/v1/runs"]["POST"].Case(body=body, media_type="application/json")
    response = case.call(headers=bearer)
    case.validate_response(response, checks=CHECKS)
    assert response.status_code == 201, response.text
    assert "NaN" not in response.text and "Infinity" not in response.text

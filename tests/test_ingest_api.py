"""POST /api/v1/runs: status codes, idempotency, what is stored."""

import json

import pytest

from sources.models import FailureWindowEvent, ProxyTransition, Run, Source
from tests.conftest import assert_error_body, make_token, report, stored_rows

FULL = report(
    run_id="full-1",
    declared_total=1000,
    collected=990,
    written=990,
    removed=5,
    crawler_verdict="complete",
    requests={"total": 1100, "by_class": {"ok": 1080, "not_found": 5, "http_5xx": 15}},
    pages={"expected": 20, "fetched": 20, "lost": 0, "lost_urls": []},
    failed_batches=[],
    delivery={"attempted": 990, "delivered": 990, "errors": {}},
    snapshot={"action": "replaced", "rows": 990},
    failure_window={
        "size": 200,
        "threshold": 0.35,
        "min_samples": 50,
        "bad_classes": ["http_5xx", "timeout"],
        "events": [
            {"at": "2026-09-15T03:10:00Z", "seq": 400, "kind": "tripped", "ratio": 0.41, "samples": 200},
            {"at": "2026-09-15T03:15:00Z", "seq": 400, "kind": "probe", "sent": 20, "bad": 2},
            {"at": "2026-09-15T03:15:05Z", "seq": 400, "kind": "resumed"},
        ],
        "series": [[0, 0.0], [200, 0.1], [400, 0.41]],
    },
    proxy_transitions=[
        {
            "proxy": "pool-ae/exit-0193",
            "at": "2026-09-15T03:11:02Z",
            "from": "eligible",
            "to": "cooling",
            "reason": "connect_refused",
            "stage": "connect",
            "until": "2026-09-15T03:16:02Z",
        },
        {
            "proxy": "pool-ae/exit-0193",
            "at": "2026-09-15T03:16:02Z",
            "from": "cooling",
            "to": "probe_allowed",
            "reason": "cooldown_expired",
            "stage": "probe",
        },
    ],
    pacing={"backoff": 2.0, "recovery": 0.9},
    outcomes={"generated": 900, "rejected": 100},
    counters={"hosts": 3},
    meta={"crawler": "scrapy 2.19", "workers": 4},
)


def test_a_full_report_is_stored_field_by_field(api):
    response = api.post_run(FULL)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["verdict"] == "complete" and body["exit_code"] == 0
    assert body["completeness"] == pytest.approx(990 / 995)
    run = Run.objects.get(pk=body["run"])
    assert (run.declared_total, run.collected, run.written, run.removed) == (1000, 990, 990, 5)
    assert run.requests_by_class["http_5xx"] == 15 and run.requests_total == 1100
    assert (run.pages_expected, run.pages_fetched, run.pages_lost) == (20, 20, 0)
    assert (run.delivery_attempted, run.delivery_delivered) == (990, 990)
    assert (run.snapshot_action, run.snapshot_rows) == ("replaced", 990)
    assert (run.breaker_threshold, run.breaker_peak_ratio, run.breaker_last_event) == (0.35, 0.41, "resumed")
    assert run.outcome_rates == {"generated": 9000, "rejected": 1000}
    assert run.counters == {"hosts": 3} and run.meta["workers"] == 4
    assert run.raw == FULL
    assert FailureWindowEvent.objects.filter(run=run).count() == 3
    transitions = list(ProxyTransition.objects.filter(run=run).values_list("from_state", "to_state", "reason"))
    assert transitions == [("eligible", "cooling", "connect_refused"), ("cooling", "probe_allowed", "cooldown_expired")]
    first = ProxyTransition.objects.filter(run=run).first()
    assert (
        first.at.isoformat() == "2026-09-15T03:11:02+00:00" and first.until.isoformat() == "2026-09-15T03:16:02+00:00"
    )
    event = FailureWindowEvent.objects.filter(run=run).first()
    assert (event.at.isoformat(), event.kind, event.ratio, event.samples) == (
        "2026-09-15T03:10:00+00:00",
        "tripped",
        0.41,
        200,
    )


def test_identical_repeat_is_200_and_stores_nothing_new(api):
    first = api.post_run(FULL)
    # Same body, keys in another order and other white space: still the same report.
    reordered = json.dumps(dict(reversed(list(FULL.items()))), indent=2)
    again = api.post_run(reordered)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert Run.objects.count() == 1 and FailureWindowEvent.objects.count() == 3


def test_changed_body_under_the_same_run_id_is_409(api):
    api.post_run(report(collected=1000))
    response = api.post_run(report(collected=999))
    assert response.status_code == 409
    assert "run-1" in response.json()["detail"]
    assert Run.objects.get().collected == 1000


def test_same_run_id_for_another_source_is_another_run(api):
    first, second = api.post_run(report(source="a", collected=100)), api.post_run(report(source="b", collected=200))
    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["run"] != second.json()["run"]
    stored = Run.objects.order_by("source__slug").values_list("source__slug", "run_id", "collected")
    assert list(stored) == [("a", report()["run_id"], 100), ("b", report()["run_id"], 200)]


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer",
        "Bearer nope",
        "Bearer cmpl_000000000000_x",
        "Basic abc",
        "Bearer cmpl_\x00\x00_x",
        "Bearer cmpl_000000000000_" + "a" * 43,
        "Bearer " + "x" * 5000,
    ],
)
def test_missing_or_unknown_token_is_401(client, db, header):
    headers = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.post("/api/v1/runs", data=json.dumps(report()), content_type="application/json", **headers)
    assert response.status_code == 401
    # RFC 6750: a 401 names the scheme, and `invalid_token` where a bearer token was sent and refused.
    sent_a_token = (header or "").lower().startswith("bearer ") and (header or "")[7:].strip()
    assert response["WWW-Authenticate"] == ('Bearer error="invalid_token"' if sent_a_token else "Bearer")
    assert not Run.objects.exists() and not Source.objects.exists()


def test_revoked_token_is_401(api):
    from django.utils import timezone

    from sources.models import ApiToken

    ApiToken.objects.update(revoked_at=timezone.now())
    assert_error_body(api.post_run(report()), 401)
    assert stored_rows() == dict.fromkeys(stored_rows(), 0)


def test_scoped_token_posting_for_another_source_is_403(api):
    scoped = make_token("shop-only", ["shop"])
    assert api.post_run(report(source="shop"), token=scoped).status_code == 201
    response = api.post_run(report(source="elsewhere"), token=scoped)
    assert response.status_code == 403
    assert not Source.objects.filter(slug="elsewhere").exists()


def test_all_sources_token_registers_an_unknown_source_with_defaults(api):
    assert api.post_run(report(source="brand-new")).status_code == 201
    source = Source.objects.get(slug="brand-new")
    assert (source.min_completeness, source.drop_threshold, source.rule_modes) == (0.99, 0.25, {})


def test_body_over_the_limit_is_413(api, settings):
    settings.REPORT_MAX_BYTES = 2048
    big = report(meta={"pad": "x" * 1000}, pages={"fetched": 1, "lost": 1, "lost_urls": ["https://e.x/" + "p" * 1500]})
    response = api.post_run(big)
    assert response.status_code == 413
    assert not Run.objects.exists()


def test_chunked_body_over_the_limit_is_413_without_a_length(api, settings, rf):
    from sources.api.endpoints import _read_body
    from sources.ingest.errors import ReportTooLarge

    settings.REPORT_MAX_BYTES = 100
    request = rf.post("/api/v1/runs", data=b"x" * 500, content_type="application/json")
    del request.META["CONTENT_LENGTH"]
    with pytest.raises(ReportTooLarge):
        _read_body(request)


def test_unknown_top_level_fields_are_named_back(api):
    response = api.post_run(report(declared_totl=10))
    assert response.status_code == 201
    assert response.json()["ignored_fields"] == ["declared_totl"]


def test_response_carries_verdict_findings_and_exit_code(api):
    api.post_run(
        report(run_id="a", collected=9000, started_at="2026-09-14T03:00:00Z", finished_at="2026-09-14T04:00:00Z")
    )
    body = api.post_run(report(run_id="b", collected=1200)).json()
    assert body["verdict"] == "incomplete" and body["silent"] is True and body["exit_code"] == 3
    assert body["baseline"] == 9000
    [finding] = body["findings"]
    assert finding == {
        "rule": "drop",
        "mode": "enforce",
        "expected": 9000,
        "actual": 1200,
        "message": finding["message"],
    }
    assert finding["message"].startswith("collected 1,200, 86.7% below the last complete snapshot (9,000)")

from __future__ import annotations

import pytest

from completeness_client import ManualClock, ProxyCredentialsError, ProxyPool, ProxyState, ProxyUnavailable
from completeness_client.proxies import proxy_id_has_credentials
from completeness_client.validation import validate_report


def pool_of(clock: ManualClock, *ids: str, budget: float = 60.0) -> ProxyPool:
    return ProxyPool(list(ids), latency_budget_seconds=budget, max_cooldown_factor=4, clock=clock)


def lease_of(pool: ProxyPool, proxy_id: str):
    for _ in range(20):
        lease = pool.acquire()
        if lease.proxy == proxy_id:
            return lease
    raise AssertionError(f"{proxy_id} never leased")


def test_healthy_proxies_stay_eligible_and_rotate():
    clock = ManualClock()
    pool = pool_of(clock, "pool-ae/exit-1", "pool-ae/exit-2")
    seen = []
    for _ in range(4):
        lease = pool.acquire()
        seen.append(lease.proxy)
        pool.succeeded(lease)
    assert seen == ["pool-ae/exit-1", "pool-ae/exit-2", "pool-ae/exit-1", "pool-ae/exit-2"]
    assert pool.transitions == []


@pytest.mark.parametrize(
    "reason, stage",
    [
        ("connect_refused", "connect"),
        ("connect_timeout", "connect"),
        ("auth_rejected", "auth"),
        ("slow_body", "body"),
        ("destination_http_error", "request"),
    ],
)
def test_temporary_failure_cools_with_reason_and_stage(reason, stage):
    clock = ManualClock()
    pool = pool_of(clock, "p1")
    pool.failed(pool.acquire(), reason)
    assert pool.state("p1") is ProxyState.COOLING
    transition = pool.transitions[-1]
    assert transition == {
        "proxy": "p1",
        "at": "2026-09-14T03:00:00Z",
        "from": "eligible",
        "to": "cooling",
        "reason": reason,
        "stage": stage,
        "until": "2026-09-14T03:01:00Z",
    }


def test_explicit_stage_is_kept():
    clock = ManualClock()
    pool = pool_of(clock, "p1")
    pool.failed(pool.acquire(), "connect_timeout", stage="tls")
    assert pool.transitions[-1]["stage"] == "tls"
    clock.advance(60)
    lease = pool.acquire()
    with pytest.raises(ValueError):
        pool.failed(lease, "connect_timeout", stage="moon")
    with pytest.raises(ValueError):
        pool.failed(lease, "tired")


def test_failure_kinds_are_counted_apart():
    clock = ManualClock()
    pool = pool_of(clock, "p1", "p2")
    pool.failed(lease_of(pool, "p1"), "connect_refused")
    pool.failed(lease_of(pool, "p2"), "slow_body")
    clock.advance(60)
    lease = pool.acquire()
    assert lease.proxy == "p1" and lease.is_probe
    pool.failed(lease, "auth_rejected")
    assert pool.failure_counts() == {
        "p1": {"connect_refused": 1, "auth_rejected": 1},
        "p2": {"slow_body": 1},
    }


def test_cooling_proxy_is_not_leased_before_its_deadline():
    clock = ManualClock()
    pool = pool_of(clock, "p1")
    pool.failed(pool.acquire(), "connect_refused")
    with pytest.raises(ProxyUnavailable):
        pool.acquire()
    assert pool.seconds_until_available() == pytest.approx(60)
    clock.advance(59.9)
    with pytest.raises(ProxyUnavailable):
        pool.acquire()


def test_expired_cooldown_allows_exactly_one_probe_no_thundering_herd():
    clock = ManualClock()
    pool = pool_of(clock, "p1")
    pool.failed(pool.acquire(), "connect_refused")
    clock.advance(60)
    probe = pool.acquire()
    assert probe.is_probe and probe.proxy == "p1"
    assert pool.state("p1") is ProxyState.PROBE_ALLOWED
    assert pool.transitions[-1]["reason"] == "cooldown_expired"
    assert pool.transitions[-1]["from"] == "cooling" and pool.transitions[-1]["to"] == "probe_allowed"
    # The whole waiting queue asks at once: nobody else gets the proxy.
    for _ in range(50):
        with pytest.raises(ProxyUnavailable):
            pool.acquire()
    assert pool.seconds_until_available() is None


def test_successful_probe_makes_it_eligible():
    clock = ManualClock()
    pool = pool_of(clock, "p1")
    pool.failed(pool.acquire(), "connect_timeout")
    clock.advance(60)
    pool.succeeded(pool.acquire())
    assert pool.state("p1") is ProxyState.ELIGIBLE
    last = pool.transitions[-1]
    assert (last["from"], last["to"], last["reason"], last["stage"]) == (
        "probe_allowed",
        "eligible",
        "probe_succeeded",
        "probe",
    )
    assert not pool.acquire().is_probe


def test_failed_probe_cools_again_longer_within_a_bound():
    clock = ManualClock()
    pool = pool_of(clock, "p1")  # budget 60 s, bound 4 budgets = 240 s
    pool.failed(pool.acquire(), "connect_refused")
    waits = [60.0]
    for _ in range(4):
        clock.advance(waits[-1])
        probe = pool.acquire()
        assert probe.is_probe
        pool.failed(probe, "connect_refused")
        assert pool.transitions[-1]["reason"] == "probe_failed"
        assert pool.transitions[-1]["stage"] == "connect"
        waits.append(pool.seconds_until_available())
    assert waits == [60.0, 120.0, 240.0, 240.0, 240.0]
    assert pool.state("p1") is ProxyState.COOLING  # never excluded for temporary trouble
    # After recovery the next failure starts from the base cooldown again.
    clock.advance(240)
    pool.succeeded(pool.acquire())
    pool.failed(pool.acquire(), "slow_body")
    assert pool.seconds_until_available() == pytest.approx(60)


def test_failed_probe_says_where_it_failed():
    # A provider gone (refused at connect) and an exit still slow (body) must not read alike.
    clock = ManualClock()
    pool = pool_of(clock, "gone", "slow")
    pool.failed(pool.acquire(), "connect_refused")
    pool.failed(pool.acquire(), "slow_body")
    clock.advance(60)
    pool.failed(pool.acquire(), "connect_refused")
    pool.failed(pool.acquire(), "slow_body")
    probe_failures = {t["proxy"]: t["stage"] for t in pool.transitions if t["reason"] == "probe_failed"}
    assert probe_failures == {"gone": "connect", "slow": "body"}
    clock.advance(120)
    pool.succeeded(pool.acquire())
    assert pool.transitions[-1]["reason"] == "probe_succeeded" and pool.transitions[-1]["stage"] == "probe"


def test_late_failure_of_a_cooling_proxy_is_counted_not_retransitioned():
    clock = ManualClock()
    pool = pool_of(clock, "p1")
    first, second = pool.acquire(), pool.acquire()  # two requests in flight
    pool.failed(first, "connect_refused")
    pool.failed(second, "connect_refused")
    assert len(pool.transitions) == 1
    assert pool.failure_counts()["p1"]["connect_refused"] == 2


def test_only_operator_or_permanent_condition_excludes_and_the_record_stays():
    clock = ManualClock()
    pool = pool_of(clock, "p1", "p2", "p3")
    for _ in range(10):  # many temporary failures: still not excluded
        try:
            lease = pool.acquire()
        except ProxyUnavailable:
            clock.advance(300)
            continue
        if lease.proxy == "p3":
            pool.failed(lease, "connect_refused")
        else:
            pool.succeeded(lease)
    assert pool.state("p3") in (ProxyState.COOLING, ProxyState.PROBE_ALLOWED)

    pool.remove("p1")
    pool.failed(lease_of(pool, "p2"), "account_revoked")
    assert pool.state("p1") is ProxyState.EXCLUDED
    assert pool.state("p2") is ProxyState.EXCLUDED
    assert pool.record("p1").excluded_reason == "operator_removed"
    assert pool.record("p2").failures["account_revoked"] == 1
    removed = [t for t in pool.transitions if t["to"] == "excluded"]
    assert [(t["proxy"], t["reason"], t["stage"]) for t in removed] == [
        ("p1", "operator_removed", "operator"),
        ("p2", "account_revoked", "auth"),
    ]
    clock.advance(10_000)
    for _ in range(5):
        lease = pool.acquire()
        assert lease.proxy == "p3"
        pool.succeeded(lease)


def test_proxy_ids_with_credentials_are_refused():
    clock = ManualClock()
    for bad in ("http://user:pass@10.0.0.1:8080", "user:pass@proxy.example:1", "alice@proxy"):
        assert proxy_id_has_credentials(bad)
        with pytest.raises(ProxyCredentialsError):
            ProxyPool([bad], clock=clock)
    for good in ("pool-ae/exit-0193", "http://10.0.0.1:8080", "de-residential-7"):
        assert not proxy_id_has_credentials(good)
    pool = ProxyPool({"pool-de/1": "http://user:secret@10.0.0.1:8080"}, clock=clock)
    lease = pool.acquire()
    assert lease.endpoint == "http://user:secret@10.0.0.1:8080"
    pool.failed(lease, "auth_rejected")
    assert "secret" not in repr(pool.to_report())


def test_transitions_validate_as_report_field():
    clock = ManualClock()
    pool = pool_of(clock, "p1", "p2")
    pool.failed(lease_of(pool, "p1"), "connect_refused")
    clock.advance(60)
    pool.succeeded(pool.acquire())
    pool.revoke("p2")
    report = {
        "source": "s",
        "run_id": "r",
        "started_at": "2026-09-14T03:00:00Z",
        "finished_at": "2026-09-14T04:00:00Z",
        "collected": 0,
        "proxy_transitions": pool.to_report(),
    }
    assert validate_report(report) == []
    assert {t["reason"] for t in report["proxy_transitions"]} == {
        "connect_refused",
        "cooldown_expired",
        "probe_succeeded",
        "account_revoked",
    }

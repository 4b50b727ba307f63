from __future__ import annotations

import pytest

from completeness_client import BreakerState, FailureWindowBreaker, ManualClock, validate_report
from completeness_client.validation import _Checker, _validate_failure_window


def make(clock: ManualClock, **overrides) -> FailureWindowBreaker:
    settings = dict(size=200, threshold=0.35, min_samples=50, pause_seconds=300, probe_size=20, max_failed_probes=3)
    settings.update(overrides)
    return FailureWindowBreaker(clock=clock, **settings)


def feed(breaker: FailureWindowBreaker, request_class: str, count: int) -> None:
    for _ in range(count):
        admission = breaker.admit()
        assert admission.allowed, breaker.state
        breaker.record(request_class, admission)


def run_probe(breaker: FailureWindowBreaker, classes: list[str]) -> None:
    admissions = []
    for _ in classes:
        admission = breaker.admit()
        assert admission.allowed and admission.probe_round is not None
        admissions.append(admission)
    for request_class, admission in zip(classes, admissions, strict=True):
        breaker.record(request_class, admission)


def trip(breaker: FailureWindowBreaker, clock: ManualClock) -> None:
    feed(breaker, "ok", 30)
    while breaker.state is BreakerState.RUNNING:
        feed(breaker, "http_5xx", 1)
    assert breaker.state is BreakerState.PAUSED


def test_defaults_match_the_issue():
    breaker = FailureWindowBreaker()
    assert (breaker.size, breaker.threshold, breaker.min_samples) == (200, 0.35, 50)
    assert (breaker.pause_seconds, breaker.probe_size, breaker.max_failed_probes) == (300, 20, 3)
    assert "not_found" not in breaker.bad_classes


def test_no_trip_below_min_samples_even_when_everything_fails():
    clock = ManualClock()
    breaker = make(clock)
    feed(breaker, "timeout", 49)
    assert breaker.state is BreakerState.RUNNING
    assert breaker.ratio == 1.0 and breaker.events == []
    # ... and the 50th bad sample trips it: the bound is exactly min_samples.
    feed(breaker, "timeout", 1)
    assert breaker.state is BreakerState.PAUSED
    assert breaker.events[0]["kind"] == "tripped" and breaker.events[0]["samples"] == 50


def test_404s_never_trip_it():
    clock = ManualClock()
    breaker = make(clock)
    feed(breaker, "not_found", 500)
    assert breaker.state is BreakerState.RUNNING and breaker.ratio == 0.0
    assert breaker.events == []


def test_200_stub_trips_it_while_full_pages_beside_it_do_not():
    clock = ManualClock()
    healthy = make(clock)
    feed(healthy, "ok", 200)
    assert healthy.state is BreakerState.RUNNING

    stubbed = make(clock)
    feed(stubbed, "ok", 40)
    feed(stubbed, "short_body", 21)  # 21/61 = 0.344
    assert stubbed.state is BreakerState.RUNNING
    feed(stubbed, "short_body", 1)  # 22/62 = 0.355
    assert stubbed.state is BreakerState.PAUSED
    event = stubbed.events[0]
    assert event["kind"] == "tripped" and event["seq"] == 62 and event["ratio"] >= 0.35


def test_ratio_just_below_threshold_stays_running():
    clock = ManualClock()
    breaker = make(clock)
    # 34% bad, spread evenly: no stretch of the run reaches 0.35 once 50 samples are in.
    for i in range(400):
        feed(breaker, "http_5xx" if int((i + 1) * 0.34) > int(i * 0.34) else "ok", 1)
    assert breaker.state is BreakerState.RUNNING
    assert breaker.samples == 200


def test_window_is_rolling_by_count():
    clock = ManualClock()
    breaker = make(clock)
    feed(breaker, "http_5xx", 15)  # early burst, diluted below threshold by min_samples
    feed(breaker, "ok", 185)
    assert breaker.ratio == pytest.approx(15 / 200)
    feed(breaker, "ok", 15)  # pushes the burst out of the window
    assert breaker.ratio == 0.0 and breaker.samples == 200
    assert breaker.state is BreakerState.RUNNING


def test_paused_admits_nothing_until_the_pause_is_over():
    clock = ManualClock()
    breaker = make(clock)
    trip(breaker, clock)
    admission = breaker.admit()
    assert not admission.allowed and not admission.stopped
    assert admission.wait_seconds == pytest.approx(300)
    clock.advance(299.9)
    assert not breaker.admit().allowed
    clock.advance(0.1)
    assert breaker.admit().allowed
    assert breaker.state is BreakerState.PROBING


def test_probe_is_bounded():
    clock = ManualClock()
    breaker = make(clock)
    trip(breaker, clock)
    clock.advance(300)
    granted = [breaker.admit() for _ in range(20)]
    assert all(a.allowed for a in granted)
    extra = breaker.admit()
    assert not extra.allowed and extra.wait_seconds is None and not extra.stopped
    # Still bounded while results trickle in.
    for admission in granted[:19]:
        breaker.record("ok", admission)
    assert not breaker.admit().allowed
    breaker.record("ok", granted[19])
    assert breaker.state is BreakerState.RUNNING


def test_good_probe_resumes_where_the_run_stopped():
    clock = ManualClock()
    breaker = make(clock)
    trip(breaker, clock)
    trip_seq = breaker.seq
    clock.advance(300)
    run_probe(breaker, ["ok"] * 18 + ["http_5xx"] * 2)
    assert breaker.state is BreakerState.RUNNING
    kinds = [e["kind"] for e in breaker.events]
    assert kinds == ["tripped", "probe", "resumed"]
    assert breaker.events[1] == {**breaker.events[1], "sent": 20, "bad": 2, "seq": trip_seq}
    assert breaker.events[2]["seq"] == trip_seq + 20
    # The run continues and is judged afresh: healthy traffic does not re-trip.
    feed(breaker, "ok", 100)
    assert breaker.state is BreakerState.RUNNING


def test_failed_probe_pauses_again_and_does_not_advance_seq():
    clock = ManualClock()
    breaker = make(clock)
    trip(breaker, clock)
    seq = breaker.seq
    clock.advance(300)
    run_probe(breaker, ["short_body"] * 7 + ["ok"] * 13)  # 0.35: not below threshold
    assert breaker.state is BreakerState.PAUSED
    assert breaker.events[-1] == {**breaker.events[-1], "kind": "probe", "sent": 20, "bad": 7, "seq": seq}


def test_three_failed_probes_in_a_row_stop_for_good():
    clock = ManualClock()
    breaker = make(clock)
    trip(breaker, clock)
    for _ in range(3):
        clock.advance(300)
        run_probe(breaker, ["http_5xx"] * 20)
    assert breaker.state is BreakerState.STOPPED and breaker.stopped
    assert [e["kind"] for e in breaker.events] == ["tripped", "probe", "probe", "probe", "stopped"]
    clock.advance(10_000)
    assert breaker.admit().stopped


def test_two_failed_probes_then_a_good_one_do_not_stop():
    clock = ManualClock()
    breaker = make(clock)
    trip(breaker, clock)
    for _ in range(2):
        clock.advance(300)
        run_probe(breaker, ["timeout"] * 20)
    clock.advance(300)
    run_probe(breaker, ["ok"] * 20)
    assert breaker.state is BreakerState.RUNNING
    # "in a row": the count starts over after a resume.
    feed(breaker, "http_5xx", 30)  # window: 20 ok + 30 bad = 0.6
    assert breaker.state is BreakerState.PAUSED
    for _ in range(2):
        clock.advance(300)
        run_probe(breaker, ["timeout"] * 20)
    assert breaker.state is BreakerState.PAUSED


def test_outcomes_of_requests_in_flight_at_the_trip_are_not_probe_results():
    clock = ManualClock()
    breaker = make(clock, probe_size=2)
    in_flight = [breaker.admit() for _ in range(5)]
    trip(breaker, clock)
    clock.advance(300)
    probe = [breaker.admit(), breaker.admit()]
    for admission in in_flight:  # late, all bad
        breaker.record("timeout", admission)
    assert breaker.state is BreakerState.PROBING and breaker.late_outcomes == 5
    for admission in probe:
        breaker.record("ok", admission)
    assert breaker.state is BreakerState.RUNNING


def test_events_are_spec_shaped_with_aware_timestamps():
    clock = ManualClock()
    breaker = make(clock, series_every=10)
    trip(breaker, clock)
    clock.advance(300)
    run_probe(breaker, ["ok"] * 20)
    report = breaker.to_report()
    checker = _Checker()
    _validate_failure_window(checker, report)
    assert checker.errors == []
    assert report["events"][0]["at"] == "2026-09-14T03:00:00Z"
    assert report["events"][1]["at"] == "2026-09-14T03:05:00Z"
    assert report["series"][0] == [0, 0.0] and report["series"][1] == [10, 0.0]
    assert set(report) == {"size", "threshold", "min_samples", "bad_classes", "events", "series"}
    assert (
        validate_report(
            {
                "source": "s",
                "run_id": "r",
                "started_at": "2026-09-14T03:00:00Z",
                "finished_at": "2026-09-14T04:00:00Z",
                "collected": 1,
                "failure_window": report,
            }
        )
        == []
    )


def test_series_reaches_the_trip_and_the_resume_between_two_samples():
    # An outage that trips and heals between two samples (every 200 requests) drew a line flat at
    # 0% under the trip's mark; the run page's chart must show the peak that tripped it.
    clock = ManualClock()
    breaker = make(clock, series_every=200)
    trip(breaker, clock)
    tripped = breaker.events[-1]
    clock.advance(300)
    run_probe(breaker, ["ok"] * 20)
    assert breaker.series == [[0, 0.0], [tripped["seq"], tripped["ratio"]], [tripped["seq"] + 20, 0.0]]
    assert max(ratio for _, ratio in breaker.series) >= breaker.threshold


def test_series_of_a_healthy_run_has_only_its_samples():
    clock = ManualClock()
    breaker = make(clock, series_every=200)
    feed(breaker, "ok", 450)
    assert breaker.series == [[0, 0.0], [200, 0.0], [400, 0.0]]


def test_series_stays_bounded():
    clock = ManualClock()
    breaker = make(clock, series_every=1, size=10, min_samples=10)
    feed(breaker, "ok", 25_000)
    assert len(breaker.series) <= 10_000
    assert breaker.series[-1][0] <= 25_000


def test_refuses_counting_404_as_bad_and_unknown_classes():
    with pytest.raises(ValueError):
        FailureWindowBreaker(bad_classes=["http_5xx", "not_found"])
    with pytest.raises(ValueError):
        FailureWindowBreaker(bad_classes=["http_5xx", "exploded"])
    with pytest.raises(ValueError):
        FailureWindowBreaker().record("exploded")


def test_wait_while_paused_sleeps_through_the_pause_only():
    clock = ManualClock()
    breaker = make(clock)
    slept: list[float] = []
    assert breaker.wait_while_paused(sleep=slept.append) and slept == []  # running: no wait
    trip(breaker, clock)
    clock.advance(100)

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    assert breaker.wait_while_paused(sleep=sleep)
    assert slept == [pytest.approx(200)]
    for _ in range(3):
        clock.advance(300)
        run_probe(breaker, ["http_5xx"] * 20)
    assert breaker.wait_while_paused(sleep=sleep) is False


def test_configurable_minimum_body_makes_a_200_stub_bad_and_a_full_200_good():
    clock = ManualClock()
    breaker = make(clock, min_body_bytes=1024)
    assert breaker.record_response(200, 5000) == "ok"
    assert breaker.record_response(200, 180) == "short_body"
    assert breaker.record_response(404, 10) == "not_found"
    assert breaker.record_exception(TimeoutError()) == "timeout"
    assert breaker.record_exception(ConnectionResetError()) == "connection_reset"
    for _ in range(60):
        breaker.record_response(200, 5000)
    assert breaker.state is BreakerState.RUNNING
    for _ in range(40):
        breaker.record_response(200, 180)
    assert breaker.state is BreakerState.PAUSED
    lenient = make(clock)  # no minimum configured: the same bodies are fine
    for _ in range(100):
        lenient.record_response(200, 180)
    assert lenient.state is BreakerState.RUNNING


def test_probe_requests_that_never_report_back_are_replaced_after_the_probe_timeout():
    clock = ManualClock()
    breaker = make(clock, probe_size=3, probe_timeout_seconds=60)
    trip(breaker, clock)
    clock.advance(300)
    granted = [breaker.admit() for _ in range(3)]
    breaker.record("ok", granted[0])  # the other two vanish (dropped, cancelled)
    clock.advance(59)
    assert not breaker.admit().allowed  # within the timeout: still waiting for them
    clock.advance(1)
    replacements = [breaker.admit(), breaker.admit()]
    assert all(a.allowed for a in replacements) and not breaker.admit().allowed
    assert breaker.lost_probe_requests == 2
    for admission in replacements:
        breaker.record("ok", admission)
    assert breaker.state is BreakerState.RUNNING
    assert breaker.events[-2] == {**breaker.events[-2], "kind": "probe", "sent": 3, "bad": 0}

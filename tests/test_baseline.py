"""The last good snapshot: what drop compares with, and what may become it."""

from sources.models import Run, Source
from tests.conftest import report


def day(n: int) -> dict:
    return {"started_at": f"2026-09-{n:02d}T03:00:00Z", "finished_at": f"2026-09-{n:02d}T04:00:00Z"}


def post(api, n: int, **fields):
    return api.post_run(report(run_id=f"run-{n}", **day(n), **fields)).json()


def test_incomplete_runs_never_become_the_baseline(api):
    post(api, 1, collected=9000)
    assert post(api, 2, collected=1200)["verdict"] == "incomplete"
    third = post(api, 3, collected=7000)
    assert third["baseline"] == 9000 and third["verdict"] == "complete"


def test_paused_runs_never_become_the_baseline(api):
    post(api, 1, collected=500)
    post(api, 2, collected=0, paused=True, pause_reason="migration")
    assert Source.objects.get().baseline_collected == 500
    assert post(api, 3, collected=100)["findings"][0]["expected"] == 500


def test_a_complete_run_against_its_declared_total_becomes_the_baseline_even_when_smaller(api):
    post(api, 1, collected=9000)
    shrunk = post(api, 2, collected=4000, declared_total=4000)
    assert shrunk["verdict"] == "complete"
    assert Source.objects.get().baseline_collected == 4000
    assert post(api, 3, collected=3900)["verdict"] == "complete"


def test_a_late_report_is_judged_against_the_baseline_of_its_own_time(api):
    post(api, 1, collected=1000)
    post(api, 5, collected=5000)
    late = post(api, 3, collected=900)
    assert late["baseline"] == 1000 and late["verdict"] == "complete"
    source = Source.objects.get()
    # The newer run stays the baseline and the latest run.
    assert source.baseline_collected == 5000
    assert source.last_run.run_id == "run-5"


def test_a_late_incomplete_report_does_not_turn_a_healthy_source_red(api):
    post(api, 1, collected=1000)
    post(api, 5, collected=1000)
    assert post(api, 3, collected=10)["verdict"] == "incomplete"
    assert Source.objects.get().health == "ok"


def test_judging_reads_a_bounded_amount_of_history(api, django_assert_max_num_queries):
    post(api, 1, collected=1000)
    for n in range(2, 30):
        post(api, n, collected=1000 + n)
    # The baseline lives on the source: history length does not enter the query count.
    # token, source lock with the repeat check, run, breaker events, proxy transitions, the proxies'
    # current state, flip, the flip's channels, source update (+ the test's savepoint pair)
    events = {"events": [{"at": "2026-09-30T03:10:00Z", "seq": 1, "kind": "tripped"}]}
    transitions = [
        {
            "proxy": "p1",
            "at": "2026-09-30T03:10:00Z",
            "from": "eligible",
            "to": "cooling",
            "reason": "slow_body",
            "stage": "body",
        }
    ]
    with django_assert_max_num_queries(12):
        body = post(api, 30, collected=100, failure_window=events, proxy_transitions=transitions)
    assert body["baseline"] == 1029
    assert Run.objects.count() == 30


def test_a_complete_run_without_heartbeat_channels_costs_five_queries(api, django_assert_num_queries):
    post(api, 1, collected=1000)
    # token, source lock (with the repeat check and the heartbeat-channel count), the source's recent
    # runs (for its own normal), run, source update, + the test's savepoint pair: no heartbeat scope
    # query when no heartbeat channel exists.
    with django_assert_num_queries(7):
        assert post(api, 2, collected=1000)["verdict"] == "complete"


def test_a_re_run_of_one_slot_is_judged_against_the_run_that_arrived_first(api):
    # Same started_at, new run_id: the first run of the slot is the earlier one (verdicts.md), not
    # the run before the slot (500, against which 400 would pass).
    slot = day(2)
    post(api, 1, collected=500)
    assert api.post_run(report(run_id="slot-a", **slot, collected=1000)).json()["verdict"] == "complete"
    rerun = api.post_run(report(run_id="slot-b", **slot, collected=400)).json()
    assert rerun["baseline"] == 1000 and rerun["verdict"] == "incomplete"
    assert [f["rule"] for f in rerun["findings"]] == ["drop"]


def test_a_re_run_of_the_first_slot_has_the_first_run_as_baseline(api):
    slot = day(1)
    assert api.post_run(report(run_id="slot-a", **slot, collected=1000)).json()["baseline"] is None
    rerun = api.post_run(report(run_id="slot-b", **slot, collected=400)).json()
    assert rerun["baseline"] == 1000 and rerun["verdict"] == "incomplete"


def test_a_late_re_run_of_an_old_slot_reads_its_baseline_from_history(api):
    post(api, 1, collected=500)
    post(api, 3, collected=1000)
    post(api, 9, collected=5000)
    # A re-run of day 3's slot arrives after day 9: the baseline of its time is day 3's first run.
    rerun = api.post_run(report(run_id="day3-again", **day(3), collected=400)).json()
    assert rerun["baseline"] == 1000 and rerun["verdict"] == "incomplete"

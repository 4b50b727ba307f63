from __future__ import annotations

from completeness_client import judge_completeness
from completeness_client.snapshot import evidence_of_loss, guard_snapshot


class Store:
    def __init__(self) -> None:
        self.published = 9000

    def replace_with(self, rows: int):
        def replace() -> int:
            self.published = rows
            return rows

        return replace


def test_complete_run_replaces():
    store = Store()
    decision = judge_completeness(collected=8990, declared_total=9000, removed=10)
    assert decision.replace and decision.reasons == ()
    assert guard_snapshot(decision, store.replace_with(8990)) == {"action": "replaced", "rows": 8990}
    assert store.published == 8990


def test_partial_run_keeps_the_previous_snapshot():
    store = Store()
    decision = judge_completeness(collected=1200, declared_total=9000)
    assert not decision.replace and "collected 1200 of 9000 declared" in decision.reasons
    assert guard_snapshot(decision, store.replace_with(1200)) == {"action": "kept_previous", "rows": None}
    assert store.published == 9000


def test_lost_page_failed_batch_or_breaker_stop_keep_previous():
    for kwargs in (
        {"pages_lost": 1},
        {"failed_batches": [{"name": "b1", "rows": 500, "error": "x"}]},
        {"breaker_stopped": True},
    ):
        decision = judge_completeness(collected=9000, declared_total=9000, **kwargs)
        assert not decision.replace, kwargs
        assert decision.action == "kept_previous"


def test_at_a_tolerance_of_1_the_declared_total_met_exactly_replaces_and_one_short_does_not():
    assert judge_completeness(collected=9000, declared_total=9000, min_completeness=1.0).replace
    assert not judge_completeness(collected=8999, declared_total=9000, min_completeness=1.0).replace


def test_without_declared_total():
    assert judge_completeness(collected=50).replace
    assert not judge_completeness(collected=50, require_declared_total=True).replace


def test_a_run_that_did_not_finish_keeps_previous_and_a_finished_one_replaces():
    assert not judge_completeness(collected=9000, declared_total=9000, finish_reason="closespider_itemcount").replace
    assert not judge_completeness(collected=9000, declared_total=9000, finish_reason="shutdown").replace
    assert judge_completeness(collected=9000, declared_total=9000, finish_reason="finished").replace


def test_lost_records_keep_previous_even_when_the_count_is_within_the_tolerance():
    within = {"collected": 8950, "declared_total": 9000, "min_completeness": 0.99}
    assert judge_completeness(**within).replace
    decision = judge_completeness(**within, records_lost=50)
    assert not decision.replace and "50 record(s) lost after retries" in decision.reasons


def test_tolerance_both_ways():
    assert judge_completeness(collected=8910, declared_total=9000, min_completeness=0.99).replace
    assert not judge_completeness(collected=8909, declared_total=9000, min_completeness=0.99).replace


def test_nothing_collected_and_no_total_never_replaces_but_a_declared_empty_source_does():
    assert not judge_completeness(collected=0).replace
    assert judge_completeness(collected=0, declared_total=0).replace


def test_by_default_a_run_is_complete_at_the_services_own_99_percent():
    # At 1.0 a count off by one (200 of 201) made the crawler say incomplete where the service's own
    # default calls the run complete; its crawler_reported rule then believed the crawler.
    assert evidence_of_loss(collected=199, declared_total=201) == []
    assert judge_completeness(collected=199, declared_total=201).replace
    assert evidence_of_loss(collected=198, declared_total=201) == ["collected 198 of 201 declared"]
    assert evidence_of_loss(collected=200, declared_total=201, min_completeness=1.0) == [
        "collected 200 of 201 declared"
    ]


def test_a_run_whose_every_record_was_gone_is_not_published():
    # A site that moved its record URLs: every one answers 404, all "removed", nothing short of the
    # declared total, and the empty result replaced the published snapshot.
    store = Store()
    decision = judge_completeness(collected=0, declared_total=200, removed=200)
    assert decision.reasons == ("collected 0 of 200 declared: 200 declared records answered 404/410",)
    assert guard_snapshot(decision, store.replace_with(0)) == {"action": "kept_previous", "rows": None}
    assert store.published == 9000
    # No evidence of loss for the crawler's verdict (the service judges it: mass_removal), and a source
    # that declares 0 is empty indeed.
    assert evidence_of_loss(collected=0, declared_total=200, removed=200) == []
    assert judge_completeness(collected=0, declared_total=0).replace


def test_a_run_that_lost_a_quarter_of_its_records_to_404s_is_not_published():
    # Not only all of them: 7,800 of 9,000 record pages answering 404 after a deploy left 1,200, every
    # one of what was "left", and that replaced the published 9,000.
    decision = judge_completeness(collected=1200, declared_total=9000, removed=7800)
    assert decision.reasons == ("collected 1200 of 9000 declared: 7800 declared records answered 404/410",)
    # Beside it: a quarter exactly is still attrition, as is a large removed count with everything
    # announced collected (the count is off, nothing is missing).
    assert judge_completeness(collected=6750, declared_total=9000, removed=2250).replace
    assert judge_completeness(collected=8950, declared_total=9000, removed=4000).replace
    assert not judge_completeness(collected=6749, declared_total=9000, removed=2251).replace

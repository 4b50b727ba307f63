from __future__ import annotations

from completeness_client import judge_completeness
from completeness_client.snapshot import guard_snapshot


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
    for kwargs in ({"pages_lost": 1}, {"failed_batches": [{"name": "b1", "rows": 500, "error": "x"}]},
                   {"breaker_stopped": True}):
        decision = judge_completeness(collected=9000, declared_total=9000, **kwargs)
        assert not decision.replace, kwargs
        assert decision.action == "kept_previous"


def test_declared_total_met_exactly_replaces_and_one_short_does_not():
    assert judge_completeness(collected=9000, declared_total=9000).replace
    assert not judge_completeness(collected=8999, declared_total=9000).replace


def test_without_declared_total():
    assert judge_completeness(collected=50).replace
    assert not judge_completeness(collected=50, require_declared_total=True).replace

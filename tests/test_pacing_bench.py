"""The pacing bench (bench/pacing.py) at a small size, so that it cannot rot: the same functions as
`python bench/pacing.py`. The burst figures are exact (no randomness); the settled shares are drawn,
and held only to what a few thousand answers show."""

from bench.pacing import after_a_burst, settled_share


def test_a_burst_of_eight_refusals_costs_one_raise_once_per_round_trip_and_eight_before():
    assert after_a_burst(8, 0.99, per_round_trip=False) == (60.0, 477)
    assert after_a_burst(8, 0.99, per_round_trip=True) == (0.5, 1)


def test_one_request_at_a_time_settles_at_the_same_share_under_both_policies():
    shares = {once: settled_share(1, 0.9, per_round_trip=once, answers=4000, seed=3) for once in (False, True)}
    assert shares[False] == shares[True]
    assert 0.10 < shares[True] < 0.17  # p* = 13.2%

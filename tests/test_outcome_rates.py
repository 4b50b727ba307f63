from completeness.verdicts import outcome_rates


def test_rates_per_ten_thousand_of_everything_considered():
    assert outcome_rates({"generated": 9000, "url_filters_rejected": 600, "score_too_low": 400}) == {
        "generated": 9000,
        "url_filters_rejected": 600,
        "score_too_low": 400,
    }


def test_nothing_considered_gives_zero_rates_not_an_error():
    assert outcome_rates({"generated": 0, "url_filters_rejected": 0}) == {"generated": 0, "url_filters_rejected": 0}
    assert outcome_rates({}) == {}


def test_rates_round_exactly_as_the_spec_writes_it():
    # round(10000 * 1 / 3) == 3333; round(10000 * 2 / 3) == 6667
    assert outcome_rates({"a": 1, "b": 2}) == {"a": 3333, "b": 6667}
    # Exact halves round to even, as Python's round() does, never by float noise.
    assert outcome_rates({"a": 1, "b": 19999}) == {"a": 0, "b": 10000}
    assert outcome_rates({"a": 3, "b": 19997}) == {"a": 2, "b": 9998}

"""The fit bench (bench/fit.py) at its smallest, so that it cannot rot: every shape fits a normal and
the bench prints a figure for it. No bound on time here (docs/benchmarks.md has the measured ones)."""

from bench.fit import SHAPES, main


def test_every_shape_fits_and_the_bench_prints_its_cost(capsys):
    costs = main(["--number", "1", "--repeat", "1"])
    assert set(costs) == set(SHAPES) and all(cost > 0 for cost in costs.values())
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(SHAPES) and all(line.endswith("ms a fit") for line in printed)

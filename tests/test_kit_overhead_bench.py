"""The crawler kit overhead bench (bench/kit_overhead.py) at its smallest, so that it cannot rot: the
same code path as `python bench/kit_overhead.py`, 20 books and one crawl each way. Figures only: no
bound on time here (docs/benchmarks.md has the measured ones)."""

import pytest

pytest.importorskip("scrapy")

from bench.kit_overhead import run_bench, summary


def test_both_crawls_collect_every_book_and_the_bench_prints_figures(tmp_path):
    result = run_bench(books=20, runs=1, timeout=120, workdir=tmp_path)
    assert [(crawl.kind, crawl.items) for crawl in result.crawls] == [("plain", 20), ("kit", 20)]
    assert [crawl.collected for crawl in result.crawls] == [None, 20]  # the kit's report, built offline
    assert (tmp_path / "kit-1" / "report.json").exists() and not (tmp_path / "plain-1" / "report.json").exists()
    assert all(crawl.cpu_seconds > 0 and crawl.wall_seconds > 0 for crawl in result.crawls)
    lines = summary(result)
    assert lines[-1].startswith("kit / plain, medians: CPU ") and result.cpu_ratio > 0

"""Crawler kit overhead: the CPU a whole crawl costs with the kit's ADDONS line and without it.

    python bench/kit_overhead.py                      # 2,000 books, 4 crawls each way
    python bench/kit_overhead.py --books 5000 --runs 6 --concurrency 8

The kit's CPU overhead should stay within 10% of plain Scrapy: a monitor that costs a crawl much more
is switched off. The spider is the
booksbot-shaped one of the kit's tests (client/tests/third_party/books.py), unchanged, crawling the
local copy of its site on 127.0.0.1 (client/tests/toscrape_site.py, in this process's threads, so the
site's own CPU is not counted): `--books` detail pages and one listing page per 20 books. Each crawl
is its own process, built by the tests' runner command (client/tests/scrapy_e2e_support.py,
`crawl_command()`):

- plain: `scrapy runspider books.py`, no ADDONS and no kit setting;
- kit: `completeness-scrapy runspider books.py` with `ADDONS = {"completeness_client.scrapy_kit.Addon": 0}`
  and the kit's default settings, offline (no service URL or token: the report is built, validated and
  written to a file, not posted), as a scheduler would run it.

Both with Scrapy's default concurrency (16) and LOG_LEVEL INFO. The two alternate (plain, kit, then kit,
plain, ...) so that whatever else the machine does falls on both alike. Each crawl's user + system CPU
seconds are the process's own (getrusage(RUSAGE_CHILDREN) before and after waiting for it), start-up
included; wall time is measured around it. Every crawl must collect every book (the kit's report must
say so too), else the bench stops. Prints min / median / max for both and the ratio of the medians;
asserts nothing about time. tests/test_kit_overhead_bench.py runs the same code on 20 books.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENT_TESTS = ROOT / "client" / "tests"
if str(CLIENT_TESTS) not in sys.path:
    sys.path.insert(0, str(CLIENT_TESTS))

from scrapy_e2e_support import crawl_command  # noqa: E402
from toscrape_site import ToScrapeConfig, ToScrapeSite, local_spider  # noqa: E402

ADDONS = {"completeness_client.scrapy_kit.Addon": 0}
# The kit's own defaults (client/README.md), not the fast breaker crawl_command() gives the tests.
KIT_DEFAULTS = {
    "COMPLETENESS_BREAKER_SIZE": 200,
    "COMPLETENESS_BREAKER_MIN_SAMPLES": 50,
    "COMPLETENESS_BREAKER_THRESHOLD": 0.35,
    "COMPLETENESS_BREAKER_PAUSE_SECONDS": 300,
    "COMPLETENESS_BREAKER_PROBE_SIZE": 20,
    "COMPLETENESS_BREAKER_MAX_FAILED_PROBES": 3,
    "COMPLETENESS_BREAKER_SERIES_EVERY": 200,
}
ITEMS = re.compile(r"'item_scraped_count': (\d+)")
FINISH = re.compile(r"'finish_reason': '(\w+)'")


@dataclass
class Crawl:
    kind: str  # "plain" or "kit"
    cpu_seconds: float  # user + system of the crawl's process
    wall_seconds: float
    items: int  # Scrapy's item_scraped_count
    collected: int | None  # the kit's report: collected (None for plain)


@dataclass
class Result:
    books: int
    crawls: list[Crawl] = field(default_factory=list)

    def of(self, kind: str) -> list[Crawl]:
        return [crawl for crawl in self.crawls if crawl.kind == kind]

    def median(self, kind: str, what: str = "cpu_seconds") -> float:
        return statistics.median(getattr(crawl, what) for crawl in self.of(kind))

    @property
    def cpu_ratio(self) -> float:
        """The kit's median CPU over plain Scrapy's."""
        return self.median("kit") / self.median("plain")

    @property
    def wall_ratio(self) -> float:
        return self.median("kit", "wall_seconds") / self.median("plain", "wall_seconds")


def _plain(command: list[str]) -> list[str]:
    """The same crawl as `scrapy runspider`, without the kit's runner and without any kit setting."""
    scrapy = shutil.which("scrapy", path=os.path.dirname(sys.executable))
    launcher = [scrapy] if scrapy else [sys.executable, "-m", "scrapy"]
    rest = command[command.index("runspider") :]
    plain = [*launcher, rest[0], rest[1]]
    pairs = iter(rest[2:])
    for flag, value in zip(pairs, pairs, strict=False):
        if not (flag == "-s" and value.startswith(("COMPLETENESS_", "ADDONS="))):
            plain += [flag, value]
    return plain


def crawl_once(
    kind: str, site_url: str, spider_file: Path, workdir: Path, *, books: int, concurrency: int, timeout: float
) -> Crawl:
    settings = {"CONCURRENT_REQUESTS": concurrency, "LOG_LEVEL": "INFO", **KIT_DEFAULTS}
    if kind == "kit":
        settings["ADDONS"] = ADDONS
    # Offline: no service URL or token; the kit writes its report to workdir/report.json.
    command, env, report_path = crawl_command(
        "", "", site_url, workdir=workdir, source="kit-overhead", settings=settings, spider_file=spider_file
    )
    if kind == "plain":
        command = _plain(command)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    log = done.stdout + done.stderr
    items = ITEMS.findall(log)
    finish = FINISH.findall(log)
    problem = None
    if done.returncode != 0:
        problem = f"exit code {done.returncode}"
    elif not items or int(items[-1]) != books or finish[-1:] != ["finished"]:
        problem = f"collected {items[-1:] or 'nothing'} of {books}, finish reason {finish[-1:]}"
    collected = None
    if kind == "kit" and problem is None:
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        if report is None:
            problem = "the kit wrote no report"
        elif (report["collected"], report["crawler_verdict"], report["end_reason"]) != (books, "complete", "finished"):
            problem = (
                f"the kit's report says collected {report['collected']}, {report['crawler_verdict']}, "
                f"{report['end_reason']}"
            )
        else:
            collected = report["collected"]
    if problem:
        raise RuntimeError(f"{kind} crawl: {problem}\n{log[-3000:]}")
    return Crawl(kind, cpu, wall, int(items[-1]), collected)


def run_bench(
    books: int = 2000,
    runs: int = 4,
    *,
    concurrency: int = 16,
    timeout: float = 300,
    workdir: Path | None = None,
    progress=None,
) -> Result:
    """`runs` crawls each way, alternating: plain then kit in even rounds, kit then plain in odd ones."""
    result = Result(books)
    with (
        tempfile.TemporaryDirectory(prefix="kit-overhead-") as scratch,
        ToScrapeSite(ToScrapeConfig(books=books)) as site,
    ):
        base = workdir or Path(scratch)
        spider_file = local_spider("books", site.url, base)
        for number in range(runs):
            for kind in ("plain", "kit") if number % 2 == 0 else ("kit", "plain"):
                crawl = crawl_once(
                    kind,
                    site.url,
                    spider_file,
                    base / f"{kind}-{number + 1}",
                    books=books,
                    concurrency=concurrency,
                    timeout=timeout,
                )
                result.crawls.append(crawl)
                if progress:
                    progress(number + 1, crawl)
    return result


def summary(result: Result) -> list[str]:
    lines = [
        f"booksbot-shaped spider, {result.books:,} books, {len(result.of('plain'))} crawls each way",
        f"{'':6} {'CPU s min / median / max':>28}   {'wall s min / median / max':>28}",
    ]
    for kind in ("plain", "kit"):
        cpu = sorted(crawl.cpu_seconds for crawl in result.of(kind))
        wall = sorted(crawl.wall_seconds for crawl in result.of(kind))
        lines.append(
            f"{kind:6} {cpu[0]:8.2f} / {statistics.median(cpu):6.2f} / {cpu[-1]:6.2f}"
            f"   {wall[0]:8.2f} / {statistics.median(wall):6.2f} / {wall[-1]:6.2f}"
        )
    lines.append(
        f"kit / plain, medians: CPU {result.cpu_ratio:.3f} ({result.cpu_ratio - 1:+.1%}), "
        f"wall {result.wall_ratio:.3f} ({result.wall_ratio - 1:+.1%})"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--books", type=int, default=2000, help="books on the local site (default 2,000)")
    parser.add_argument("--runs", type=int, default=4, help="crawls each way (default 4)")
    parser.add_argument("--concurrency", type=int, default=16, help="CONCURRENT_REQUESTS (default 16, Scrapy's)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one crawl may take (default 300)")
    parser.add_argument("--quiet", action="store_true", help="no line per crawl")
    args = parser.parse_args(argv)
    if args.books < 1 or args.runs < 1:
        parser.error("--books and --runs must be at least 1")

    def progress(number: int, crawl: Crawl) -> None:
        print(
            f"  round {number}: {crawl.kind:5} {crawl.cpu_seconds:6.2f} s CPU {crawl.wall_seconds:6.2f} s wall "
            f"{crawl.items} items",
            flush=True,
        )

    result = run_bench(
        args.books,
        args.runs,
        concurrency=args.concurrency,
        timeout=args.timeout,
        progress=None if args.quiet else progress,
    )
    print("\n".join(summary(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

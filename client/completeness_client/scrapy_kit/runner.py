"""`completeness-scrapy`: run a Scrapy command and exit with the verdict.

Scrapy itself exits 0 whatever the crawl collected. This runner takes the same
arguments as `scrapy` (`completeness-scrapy crawl myspider -a x=1`,
`completeness-scrapy runspider spider.py`), runs it in this process, and then
exits with the exit code the CompletenessExtension recorded: 0 complete or
paused, 3 incomplete, 75 report spooled (or a JOBDIR crawl stopped, resumable: see
jobdir), 77 token refused, 65 report rejected.
A non-zero exit of Scrapy itself (bad arguments, bootstrap failure) wins.

Reports spooled by earlier runs and delivered now are printed with their
run_id and verdict; their verdicts are those runs', not part of this exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .. import exit_codes
from ..summary import describe, describe_findings, describe_flushed
from .extension import recorded_exit_codes, recorded_exit_reasons, recorded_results, switched_off_crawls


def combine(codes: Sequence[int]) -> int:
    """One process exit code for all crawls of the process: any incomplete
    run makes it 3; otherwise the first other problem; else 0."""
    if exit_codes.INCOMPLETE in codes:
        return exit_codes.INCOMPLETE
    return next((code for code in codes if code != 0), 0)


def main(argv: Sequence[str] | None = None) -> int:
    from scrapy.cmdline import execute

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        execute(["scrapy", *args])
        scrapy_code = 0
    except SystemExit as exc:
        scrapy_code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if scrapy_code:
        return scrapy_code
    for result in recorded_results():
        for earlier in result.flushed:
            print(describe_flushed(earlier), *describe_findings(earlier), sep="\n")
        print(f"this run: {describe(result)}")
    codes = recorded_exit_codes()
    if not codes and switched_off_crawls():
        print("completeness-scrapy: the kit is switched off (COMPLETENESS_ENABLED = False): no report was posted")
        return scrapy_code
    if not codes and args and args[0] in ("crawl", "runspider"):
        print(
            f"completeness-scrapy: exit {exit_codes.BAD_INPUT}: no verdict was recorded: the kit was not "
            'enabled (ADDONS = {"completeness_client.scrapy_kit.Addon": 0} in the project\'s settings, or in '
            "the spider's custom_settings for runspider), or it failed while closing (see the log above)",
            file=sys.stderr,
        )
        return exit_codes.BAD_INPUT
    for reason in recorded_exit_reasons():
        print(f"completeness-scrapy: {reason}")
    code = combine(codes)
    if len(codes) > 1:
        print(f"completeness-scrapy: exit {code}: the combined code of {len(codes)} crawls")
    return code


if __name__ == "__main__":
    sys.exit(main())

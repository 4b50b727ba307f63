"""`completeness-report FILE.json`: post a run report and exit with the verdict.

Exit codes (see exit_codes.py): 0 complete or paused, 3 incomplete, 2 bad
command line, 65 bad input or report rejected by the service, 75 report not
delivered: service unreachable or answering 5xx/429 (report spooled, sent
first next time), 77 token refused (401/403).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from . import exit_codes
from .poster import PostResult, ReportPoster
from .summary import describe, describe_findings, describe_flushed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="completeness-report",
        description="Post a crawler run report and exit with the verdict's exit code.",
        epilog=(
            "exit codes: 0 complete or paused, 3 incomplete, 2 usage, 65 bad input or "
            "rejected report, 75 not delivered (report spooled), 77 token refused"
        ),
    )
    parser.add_argument("file", help="the run report (JSON); '-' reads standard input")
    parser.add_argument(
        "--url", default=os.environ.get("COMPLETENESS_URL"), help="service base URL (default: $COMPLETENESS_URL)"
    )
    parser.add_argument(
        "--token", default=os.environ.get("COMPLETENESS_TOKEN"), help="API token (default: $COMPLETENESS_TOKEN)"
    )
    parser.add_argument(
        "--spool-dir",
        default=None,
        help="where undeliverable reports wait (default: $COMPLETENESS_SPOOL_DIR, "
        "else $XDG_CACHE_HOME/completeness-client/spool, else ~/.cache/completeness-client/spool)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per HTTP attempt")
    parser.add_argument("--attempts", type=int, default=4, help="HTTP attempts before spooling")
    parser.add_argument("--json", action="store_true", help="print the service's answer as JSON")
    return parser


def _load(path: str) -> Any:
    if path == "-":
        return json.load(sys.stdin)
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _describe(result: PostResult, out: TextIO) -> None:
    for earlier in result.flushed:
        print(describe_flushed(earlier), file=out)
        for line in describe_findings(earlier):
            print(line, file=out)
    print(describe(result), file=out)
    for line in describe_findings(result):
        print(line, file=out)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.url or not args.token:
        print(
            "completeness-report: the service URL and token are required "
            "(--url/--token or COMPLETENESS_URL/COMPLETENESS_TOKEN)",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    try:
        report = _load(args.file)
    except (OSError, ValueError) as exc:
        print(f"completeness-report: cannot read {args.file}: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    poster = ReportPoster(
        args.url, args.token, spool_dir=args.spool_dir, timeout_seconds=args.timeout, max_attempts=max(1, args.attempts)
    )
    result = poster.post(report)
    _describe(result, sys.stderr if result.outcome != "judged" else sys.stdout)
    if args.json and result.response is not None:
        print(json.dumps(result.response, indent=2))
    return result.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

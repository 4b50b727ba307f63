"""completeness-backfill: post a crawler's past runs, oldest first, before its first live report.

The service judges each report against the runs of its source that it already has and that started
before it. Posted newest first, a history has its newest run judged against nothing (a loss in it
passes) and every older one against nothing either; posted in file order, it is only as ordered as
the files' names. So this reads every report first, refuses the whole backfill if one is invalid
(nothing is posted), sorts them by `started_at` and posts them one by one. It stops at the first
report the service could not take (unreachable, 5xx, 429 past its patience, or a token it refuses),
spooling nothing: running the same command again is safe, since each report already stored is
answered as a repeat.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from . import exit_codes
from .poster import ReportPoster
from .summary import describe, describe_findings
from .validation import parse_aware, validate_report

# A backfill of many sources meets the service's rate limit (600 reports a minute per token by
# default): waiting out a 429's Retry-After of up to a minute is the normal case, not a failure.
ATTEMPTS = 6
MAX_BACKOFF_SECONDS = 65.0


@dataclass(frozen=True)
class Located:
    where: str  # "runs.jsonl:12", "runs.json[3]", "run.json"
    report: Any


@dataclass
class Outcomes:
    """What became of one source's reports: their verdicts, "refused", and how many were repeats."""

    counts: Counter[str] = field(default_factory=Counter)
    repeats: int = 0


class InputError(Exception):
    pass


def read_reports(path: str, stdin: TextIO = sys.stdin) -> list[Located]:
    """The reports of one file: a JSON object (one report), a JSON array of reports, or JSON Lines."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {name}: {exc}") from exc
    try:
        whole = json.loads(text)
    except ValueError:
        return list(_json_lines(name, text))
    if isinstance(whole, list):
        return [Located(f"{name}[{index}]", item) for index, item in enumerate(whole)]
    return [Located(name, whole)]


def _json_lines(name: str, text: str) -> Iterable[Located]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield Located(f"{name}:{number}", json.loads(line))
        except ValueError as exc:
            raise InputError(
                f"{name}:{number}: not JSON ({exc}); a file holds one report, an array of them, or one per line"
            ) from exc


def oldest_first(reports: Sequence[Located]) -> list[Located]:
    """Sorted by `started_at` as instants (offsets differ between crawlers); equal starts keep their
    order, as the service orders a re-run of one slot by arrival. Only valid reports come here."""
    return sorted(reports, key=lambda located: _started(located.report))


def _started(report: dict[str, Any]) -> datetime:
    started = parse_aware(report["started_at"])
    assert started is not None, "validated before sorting"
    return started


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="completeness-backfill",
        description=(
            "Post a crawler's past run reports, oldest first, so that each is judged against the runs "
            "before it. Reads every file before posting anything."
        ),
        epilog=(
            "A FILE holds one report (a JSON object), an array of them, or one per line (JSON Lines); "
            "'-' reads standard input. Exit codes: 0 every report judged (whatever its verdict: these are "
            "past runs), 2 usage, 65 a file unreadable or a report invalid (nothing posted) or refused by "
            "the service (the others posted), 75 the service could not take a report (stopped there: run "
            "the same command again), 77 token refused."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="report files")
    parser.add_argument(
        "--url", default=os.environ.get("COMPLETENESS_URL"), help="service base URL (default: $COMPLETENESS_URL)"
    )
    parser.add_argument(
        "--token", default=os.environ.get("COMPLETENESS_TOKEN"), help="API token (default: $COMPLETENESS_TOKEN)"
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per HTTP attempt")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="read, check and sort the reports, say what would be posted, post nothing",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, sleep: Callable[[float], None] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.dry_run and (not args.url or not args.token):
        print(
            "completeness-backfill: the service URL and token are required "
            "(--url/--token or COMPLETENESS_URL/COMPLETENESS_TOKEN)",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    try:
        reports = [located for path in args.files for located in read_reports(path)]
    except InputError as exc:
        print(f"completeness-backfill: {exc}; nothing was posted", file=sys.stderr)
        return exit_codes.BAD_INPUT
    invalid = [(located, validate_report(located.report)) for located in reports]
    invalid = [(located, errors) for located, errors in invalid if errors]
    if invalid:
        for located, errors in invalid:
            print(f"{located.where}: " + "; ".join(str(error) for error in errors), file=sys.stderr)
        print(
            f"completeness-backfill: {len(invalid)} of {len(reports)} reports invalid; nothing was posted",
            file=sys.stderr,
        )
        return exit_codes.BAD_INPUT
    ordered = oldest_first(reports)
    if args.dry_run:
        _summarise(ordered, None, sys.stdout)
        return exit_codes.COMPLETE
    options: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
    poster = ReportPoster(
        args.url,
        args.token,
        timeout_seconds=args.timeout,
        max_attempts=ATTEMPTS,
        max_backoff_seconds=MAX_BACKOFF_SECONDS,
        **options,
    )
    return _post_all(poster, ordered)


def _post_all(poster: ReportPoster, ordered: Sequence[Located]) -> int:
    outcomes: dict[str, Outcomes] = defaultdict(Outcomes)
    refused = 0
    for index, located in enumerate(ordered):
        # Not spooled when it cannot be delivered: a later live run of some crawler would send it,
        # out of order. The backfill stops there instead, and is run again.
        result = poster.send_once(located.report)
        tally = outcomes[located.report["source"]]
        if result.outcome == "judged":
            tally.counts[result.verdict or "?"] += 1
            tally.repeats += result.repeat
            if result.verdict == "incomplete" and not result.repeat:
                # Without describe()'s "-> exit 3": a past run's verdict is not this command's exit.
                silent = " SILENT (the crawler claimed success)" if result.silent else ""
                print(f"{located.where}: {result.source}/{result.run_id}: incomplete{silent}")
                for line in describe_findings(result):
                    print(line)
            continue
        print(f"{located.where}: {describe(result)}", file=sys.stderr)
        if result.exit_code in (exit_codes.AUTH, exit_codes.SPOOLED):
            _summarise(ordered[:index], outcomes, sys.stdout)
            print(
                f"completeness-backfill: stopped at {located.where}, report {index + 1} of {len(ordered)}; "
                "run the same command again once that is fixed: the reports already stored are answered "
                "as repeats",
                file=sys.stderr,
            )
            return result.exit_code
        tally.counts["refused"] += 1
        refused += 1
    _summarise(ordered, outcomes, sys.stdout)
    if refused:
        print(f"completeness-backfill: the service refused {refused} of {len(ordered)} reports", file=sys.stderr)
        return exit_codes.BAD_INPUT
    return exit_codes.COMPLETE


def _summarise(reports: Sequence[Located], outcomes: dict[str, Outcomes] | None, out: TextIO) -> None:
    """One line per source: its runs' span and, once posted, what became of them (None: a dry run)."""
    starts: dict[str, list[datetime]] = defaultdict(list)
    for located in reports:
        starts[located.report["source"]].append(_started(located.report))
    for source, moments in sorted(starts.items()):
        first, last = (f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}" for moment in (min(moments), max(moments)))
        line = f"{source}: {len(moments)} runs started {first} to {last} UTC"
        if outcomes is None:
            line += ", would be posted oldest first"
        else:
            tally = outcomes[source]
            line += ": " + ", ".join(f"{count} {outcome}" for outcome, count in sorted(tally.counts.items()))
            if tally.repeats:
                line += f" ({tally.repeats} already stored: repeats)"
        print(line, file=out)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

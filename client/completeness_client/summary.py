"""One-line descriptions of post results, shared by the CLI and the Scrapy kit."""

from __future__ import annotations

from .poster import WRONG_URL, PostResult


def describe(result: PostResult) -> str:
    label = f"{result.source}/{result.run_id}"
    if result.outcome == "judged":
        silent = " SILENT (the crawler claimed success)" if result.silent else ""
        return f"{label}: {result.verdict}{silent}{_repeat(result)} -> exit {result.exit_code}"
    return f"{label}: {result.outcome}: {result.message} -> exit {result.exit_code}"


def _repeat(result: PostResult) -> str:
    # A repeat is no new judgement: the verdict is the one the first post of this report got.
    if not result.repeat:
        return ""
    return ", a repeat (the service had this report already: its verdict then, nothing new stored)"


def describe_flushed(result: PostResult) -> str:
    """A spooled report of an earlier run, delivered now (or left in the spool:
    this token may not post it). Its verdict is that run's; the current run's
    exit code does not include it."""
    if result.outcome == "kept":
        who = "the service's URL" if result.http_status in WRONG_URL else "a token that may post it"
        return (
            f"spooled report of an earlier run, left in the spool: {result.source}/{result.run_id}: "
            f"{result.message}; a run with {who} sends it (not this run's exit code)"
        )
    return f"spooled report of an earlier run, sent now: {describe(result)} (not this run's exit code)"


def describe_findings(result: PostResult) -> list[str]:
    return [f"  [{f.get('mode', '?')}] {f.get('rule', '?')}: {f.get('message', '')}" for f in result.findings]


def exit_reason(result: PostResult) -> str:
    """Why a posted report gives the exit code it gives, in one line."""
    if result.outcome == "judged":
        rules = sorted({f.get("rule", "?") for f in result.findings if f.get("mode", "enforce") == "enforce"})
        why = f"the service judged the run {result.verdict}"
        if result.verdict == "paused":
            # "judged the run paused" read as a verdict on the crawl; the run was not judged at all.
            why = "the source is paused in the service: the run was recorded, not judged, and alerts nobody"
        if result.verdict == "incomplete" and rules:
            why += " (" + ", ".join(rules) + ")"
        return why + _repeat(result)
    if result.outcome == "spooled":
        # The message says whether the service could not be reached or what it answered.
        return f"{result.message}; the next run sends it"
    if result.outcome == "rejected":
        return f"the service refused the report: {result.message}"
    return f"the report was not sent: {result.message}"

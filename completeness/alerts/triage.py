"""What the person paged reads first: who owns the source, its runbook, the next step, where to
acknowledge. Carried by the alerts that open or repeat a problem (event["oncall"]), from the source.
"""

from __future__ import annotations

from typing import Any

from completeness.alerts.severity import PROBLEM_ALERTS, Severity

# Per severity: the first thing to do, before any digging. The runbook, when the source has one, says
# the rest; these hold for every crawler.
NEXT_STEPS = {
    Severity.DATA_LOSS: (
        "Restore the last complete snapshot for its consumers (a partial run replaced it), then find why the"
        " run stopped short and re-run it."
    ),
    Severity.FAILING: (
        # The run the alert names and links (run.url): after a resume, runs made while paused came later.
        "Open the run this alert links: its findings say what is missing against what was expected."
        " Fix the cause and re-run, or accept the run as the new baseline if the site really shrank."
    ),
    Severity.OVERDUE: (
        "Check that the crawler's scheduler started it and that it can reach the monitor: no report arrived in time."
    ),
}
# A failing run its own crawler called short (a timeout, a breaker stop, lost pages, failed writes): "accept
# it as the new baseline if the site really shrank" sent on call after a site that had not shrunk.
CRAWLER_KNEW_STEP = (
    "Open the run this alert links: its findings say what is missing against what was expected."
    " The crawler itself reported the run short: fix what they name (the site, the proxies, the store)"
    " and re-run; a run cut short is no new baseline."
)


def carries_oncall(kind: str) -> bool:
    return kind in PROBLEM_ALERTS


def oncall_facts(
    *,
    kind: str,
    severity: Severity,
    owner: str,
    team: str,
    runbook_url: str,
    acknowledge_url: str,
    crawler_knew: bool = False,
) -> dict[str, Any] | None:
    """{"owner", "team", "runbook_url", "next_step", "acknowledge_url"} for a problem alert; None otherwise.
    `crawler_knew`: the run it fails for was called incomplete by its crawler (not silent)."""
    if not carries_oncall(kind):
        return None
    step = NEXT_STEPS.get(severity, NEXT_STEPS[Severity.FAILING])
    if severity is Severity.FAILING and crawler_knew:
        step = CRAWLER_KNEW_STEP
    if runbook_url:
        step = f"Follow the runbook ({runbook_url}). {step}"
    return {
        "owner": owner or None,
        "team": team or None,
        "runbook_url": runbook_url or None,
        "next_step": step,
        "acknowledge_url": acknowledge_url,
    }

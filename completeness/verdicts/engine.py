from __future__ import annotations

from completeness.report import RunReport
from completeness.verdicts.rules import CHECKS, completeness_ratio, declared_share_floor, snapshot_overwritten
from completeness.verdicts.types import NO_HISTORY, RULES, Finding, History, Judgement, Mode, RuleSettings, Verdict


def judge(
    report: RunReport,
    settings: RuleSettings,
    history: History = NO_HISTORY,
    *,
    source_paused: bool = False,
) -> Judgement:
    """Judge one run from its report, its source's settings and what the caller read of its past:
    the last good run and the trend window's reference."""
    ratio = completeness_ratio(report)
    if report.paused or source_paused:
        # A deliberate pause collects nothing by design: judging it would only invent alarms.
        return Judgement(Verdict.PAUSED, silent=False, findings=(), completeness=ratio, expectation=history.expectation)

    findings = []
    for rule, check in CHECKS.items():
        draft = check(report, settings, history)
        if draft is not None:
            findings.append(Finding(rule, settings.mode_of(rule), draft.message, draft.expected, draft.actual))

    if any(f.enforced for f in findings):
        draft = snapshot_overwritten(report, history.baseline_collected)
        if draft is not None:
            findings.append(Finding("snapshot_overwritten", Mode.ENFORCE, draft.message, draft.expected, draft.actual))

    findings.sort(key=lambda f: RULES.index(f.rule))
    verdict = Verdict.INCOMPLETE if any(f.enforced for f in findings) else Verdict.COMPLETE
    return Judgement(
        verdict,
        silent=verdict is Verdict.INCOMPLETE and crawler_claimed_success(report),
        findings=tuple(findings),
        completeness=ratio,
        expectation=history.expectation,
        completeness_floor=declared_share_floor(settings, history) if ratio is not None else None,
    )


def crawler_claimed_success(report: RunReport) -> bool:
    return report.exit_code in (0, None) and report.crawler_verdict != "incomplete"

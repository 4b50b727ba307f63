"""Crawler kit for the data-completeness monitoring service (run report v1)."""

from .breaker import Admission, BreakerState, FailureWindowBreaker
from .classes import DEFAULT_BAD_CLASSES, REQUEST_CLASSES, classify_exception, classify_status
from .clock import ManualClock, SystemClock
from .fields import FieldCoverage, is_filled
from .poster import PostResult, ReportPoster
from .proxies import ProxyCredentialsError, ProxyLease, ProxyPool, ProxyState, ProxyUnavailable, proxy_failure_reason
from .report import RunReport
from .retry_budget import BudgetExhausted, RetryBudget, call_with_budget
from .snapshot import SnapshotDecision, evidence_of_loss, guard_snapshot, judge_completeness
from .validation import FieldError, ReportInvalid, validate_report

__all__ = [
    "Admission",
    "BreakerState",
    "BudgetExhausted",
    "DEFAULT_BAD_CLASSES",
    "FailureWindowBreaker",
    "FieldCoverage",
    "FieldError",
    "ManualClock",
    "PostResult",
    "ProxyCredentialsError",
    "ProxyLease",
    "ProxyPool",
    "ProxyState",
    "ProxyUnavailable",
    "REQUEST_CLASSES",
    "ReportInvalid",
    "ReportPoster",
    "RetryBudget",
    "RunReport",
    "SnapshotDecision",
    "SystemClock",
    "call_with_budget",
    "classify_exception",
    "classify_status",
    "evidence_of_loss",
    "guard_snapshot",
    "is_filled",
    "judge_completeness",
    "proxy_failure_reason",
    "validate_report",
]
__version__ = "0.1.0"

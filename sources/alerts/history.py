"""History: changes of health caused by reports received long after their runs finished (a backfill of
a crawler's past runs, a spool emptied days later; completeness.alerts.policy.is_history).

Each is recorded and shown, but sent to nobody when it happens: a month of history with two old
incidents sent four alerts, "failing" and "ok again after 0 s" twice, for problems long over. Once a
source's history has stopped arriving for HISTORY_SETTLES, the minute job tells each channel where
the source stands, against what that channel last heard: a problem it has not heard of, or the end
of one it has. History that ends where the channels already stand sends nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from completeness.alerts.policy import HISTORY_SETTLES, OK, PROBLEMS, Alert
from sources.alerts import outbox
from sources.models import Flip, Notification, Source

# Sources told per pass: a backfill of thousands of sources is told over a few minutes' passes.
SOURCES_PER_PASS = 200


def history_after() -> timedelta | None:
    """How long after its run finished a report is history (settings.ALERTS_HISTORY_AFTER_SECONDS)."""
    seconds = settings.ALERTS_HISTORY_AFTER_SECONDS
    return None if seconds is None else timedelta(seconds=seconds)


def announce_history(now: datetime | None = None) -> int:
    """Tell the channels where each source whose history settled stands; returns the notifications written."""
    now = now or timezone.now()
    settled = now - HISTORY_SETTLES
    waiting = Flip.objects.filter(announced=False, at__lte=settled).order_by("at")
    source_ids = list(dict.fromkeys(waiting.values_list("source_id", flat=True)[: SOURCES_PER_PASS * 10]))
    written = 0
    for source_id in source_ids[:SOURCES_PER_PASS]:
        written += len(_announce(source_id, settled))
    return written


@transaction.atomic
def _announce(source_id: int, settled: datetime) -> list[Notification]:
    # Under the source's row lock, as every flip is written: a report arriving now waits for this.
    source = Source.objects.select_for_update(of=("self",)).select_related("last_run").filter(pk=source_id).first()
    if source is None:
        return []
    pending = Flip.objects.filter(source=source, announced=False)
    latest = pending.order_by("-at", "-id").select_related("run").first()
    if latest is None or latest.at > settled:
        return []  # told already, or more history arrived since: it settles first
    first = pending.order_by("at", "id").first()
    assert first is not None  # latest is one of them
    pending.update(announced=True)
    if source.paused:
        return []  # a pause is a decision, not news; its end tells where the source stands
    ran = f" (runs up to {latest.run.started_at:%Y-%m-%d %H:%M} UTC)" if latest.run is not None else ""
    cause = f"after history posted late{ran}: {source.slug} is {source.health}"
    if source.health in PROBLEMS:
        # From where the source stood before its history began: what its channels last heard.
        change = (first.old_health, source.health)
        return outbox.tell(source, Alert(source.health), latest, cause=cause, change=change, unheard_only=True)
    if source.health == OK:
        problem = (
            Flip.objects.filter(source=source, new_health__in=PROBLEMS)
            .order_by("-at", "-id")
            .values_list("new_health", flat=True)
            .first()
        )
        return outbox.tell(source, Alert.RESOLVED, latest, cause=cause, change=(problem or OK, OK))
    return []

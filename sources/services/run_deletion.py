"""Deleting runs by hand (the admin): the runs go, and each of their sources points at what is left.

The source row carries its latest run and its latest judged run (what the pages and the API read as
its present). Deleting that run nulls the reference (on_delete), and a source with a month of runs read
"No runs reported yet." Retention never deletes those runs; an operator removing a test report may.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

from completeness.verdicts import Verdict
from sources.models import Run, Source


@transaction.atomic
def delete_runs(runs: QuerySet[Run]) -> int:
    """Deletes `runs` and what goes with them; returns how many runs. Health is left as it is: deleting a
    run judges nothing, and the next report (or an operator's acceptance) settles it."""
    source_ids = sorted(set(runs.values_list("source_id", flat=True)))
    # Locked as ingest locks them, so a report arriving meanwhile does not point at a run just deleted.
    sources = list(Source.objects.select_for_update(of=("self",)).filter(pk__in=source_ids).order_by("pk"))
    _, by_model = runs.delete()
    for source in sources:
        source.refresh_from_db(fields=["last_run", "last_judged_run"])
        changed = []
        if source.last_run_id is None:
            # Run's own ordering is the latest first, by start then by arrival, as ingest orders them.
            latest = source.runs.only("started_at", "verdict").first()
            source.last_run = latest
            source.last_run_started_at = latest.started_at if latest else None
            source.last_verdict = latest.verdict if latest else ""
            changed += ["last_run", "last_run_started_at", "last_verdict"]
        if source.last_judged_run_id is None:
            judged = source.runs.exclude(verdict=Verdict.PAUSED).only("pk").first()
            source.last_judged_run = judged
            changed.append("last_judged_run")
        if changed:
            source.save(update_fields=changed)
    return by_model.get(Run._meta.label, 0)

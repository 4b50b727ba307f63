"""Each proxy's current state (models.ProxyCurrent): its latest transition by `least(at, received_at)`,
then by id, the order of sources/pages/selectors/proxies.py.

One statement per report: the report's transitions are ranked per proxy and the newest replaces a
proxy's row only if it is newer, so reports arriving out of order, or two at once, leave the newest.
Rows are written in proxy order, so two reports naming the same proxies lock them in the same order.
"""

from __future__ import annotations

from django.db import connection

_LATEST = """
    SELECT proxy, id, moment FROM (
        SELECT proxy, id, {least}(at, received_at) AS moment,
               ROW_NUMBER() OVER (PARTITION BY proxy ORDER BY {least}(at, received_at) DESC, id DESC) AS newest
        FROM sources_proxytransition WHERE {where}
    ) ranked WHERE newest = 1 ORDER BY proxy
"""
_UPSERT = """
    INSERT INTO sources_proxycurrent (proxy, transition_id, moment) {latest}
    ON CONFLICT (proxy) DO UPDATE SET transition_id = excluded.transition_id, moment = excluded.moment
    WHERE excluded.moment > sources_proxycurrent.moment
       OR (excluded.moment = sources_proxycurrent.moment AND excluded.transition_id > sources_proxycurrent.transition_id)
"""


def _least() -> str:
    # SQLite's two-argument min() is its LEAST; its timestamps are text of one format, ordered as text.
    return "LEAST" if connection.vendor == "postgresql" else "MIN"


def record(run_id: int) -> None:
    """Move each proxy a run reported on to its newest transition (called by ingest)."""
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT.format(latest=_LATEST.format(least=_least(), where="run_id = %s")), [run_id])


def rebuild() -> None:
    """Every proxy's row from all stored transitions: for data written around ingest (tests, benchmarks)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM sources_proxycurrent")
        cursor.execute(_UPSERT.format(latest=_LATEST.format(least=_least(), where="1 = 1")))

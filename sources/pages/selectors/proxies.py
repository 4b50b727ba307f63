"""Read-side queries of the proxies page and of the source page's proxy chart.

Bounded whatever is stored: an unbounded version loaded all of 120,000 transitions, took 29.7 s
and rendered 81 MB. Each query returns at most a page of proxies, a pool table, a
capped history per proxy or a count per hour: the work of picking each proxy's latest transition
and counting is done by the database, not by a Python loop over every transition.

Two choices hold it together:

- **A transition happened at `at`, but never after it arrived.** `at` is the crawler's word and is
  not checked against the clock; a transition dated years ahead would stay its proxy's latest, and
  in "the last 30 days", forever. So the order of transitions is `least(at, received_at)`, and the
  windows (the history, the charts) are by arrival (`received_at`, indexed).
- **Charts get changes per hour, not transitions.** Per bucket, how many proxies entered each state
  minus how many left it; the page adds them up from a known count at one end of the window.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict, get_args

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    CharField,
    Count,
    DateTimeField,
    F,
    Q,
    QuerySet,
    Value,
    When,
    Window,
)
from django.db.models.functions import Greatest, Least, Left, RowNumber, StrIndex, TruncDay, TruncHour
from django.utils import timezone

from completeness.report import ProxyState
from sources.models import ProxyTransition, Source

PROXY_STATES = get_args(ProxyState)
# Meant to be permanent: a revoked account, an operator's removal, credentials a human must fix.
PERMANENT_REASONS = frozenset({"account_revoked", "operator_removed", "auth_rejected"})
NO_POOL = "(no pool)"

PROXY_HISTORY = timedelta(days=30)
PROXY_HISTORY_ROWS = 20
PROXIES_PER_PAGE = 50
# Pools are named by the crawlers (the part of a proxy's id before "/"), so there may be any number.
POOLS_SHOWN = 100
LOST_NAMED = 20
# Hourly counts up to a quarter (2,160 buckets, then thinned like any line); daily beyond.
HOURLY_UP_TO = timedelta(days=92)

# When a transition happened, as far as the pages are concerned.
MOMENT = Least(F("at"), F("received_at"), output_field=DateTimeField())
POOL = Case(
    When(proxy__contains="/", then=Left("proxy", StrIndex("proxy", Value("/")) - 1)),
    default=Value(NO_POOL),
    output_field=CharField(),
)
LOST = Q(to_state="excluded") & ~Q(reason__in=PERMANENT_REASONS)
_NEWEST_FIRST = [MOMENT.desc(), F("id").desc()]


def _state_counts(prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}{state}": Count("pk", filter=Q(to_state=state)) for state in PROXY_STATES}


class PoolAndLoss(TypedDict):
    pool: str
    lost: bool


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    CurrentTransition = WithAnnotations[ProxyTransition, PoolAndLoss]
    CurrentTransitions = QuerySet[CurrentTransition]


def current_transitions() -> CurrentTransitions:
    """Each proxy's latest transition (its current state and why), with `pool` and `lost`: one row per
    proxy through ProxyCurrent, kept at ingest (sources/ingest/proxy_current.py)."""
    return ProxyTransition.objects.filter(current__isnull=False).annotate(
        pool=POOL,
        lost=Case(When(LOST, then=Value(True)), default=Value(False)),
    )


@dataclass(frozen=True)
class ProxyFilters:
    pool: str = ""
    state: str = ""
    lost_only: bool = False

    def apply(self, current: CurrentTransitions) -> CurrentTransitions:
        if self.pool:
            current = current.filter(pool=self.pool)
        if self.state:
            current = current.filter(to_state=self.state)
        if self.lost_only:
            current = current.filter(LOST)
        return current


@dataclass(frozen=True)
class ProxyTotals:
    proxies: int
    states: dict[str, int]
    lost: int
    pools: int


def totals() -> ProxyTotals:
    """Proxies per current state, lost by mistake and pools, in one aggregate."""
    found = current_transitions().aggregate(
        proxies=Count("pk"),
        lost=Count("pk", filter=LOST),
        pools=Count("pool", distinct=True),
        **_state_counts("state_"),
    )
    return ProxyTotals(
        proxies=found["proxies"],
        lost=found["lost"],
        pools=found["pools"],
        states={state: found[f"state_{state}"] for state in PROXY_STATES},
    )


def pool_table() -> list[Mapping[str, Any]]:
    """Per pool (at most POOLS_SHOWN, by name): its proxies per current state and those lost by mistake."""
    return list(
        current_transitions()
        .values("pool")
        .annotate(proxies=Count("pk"), lost_count=Count("pk", filter=LOST), **_state_counts())
        .order_by("pool")[:POOLS_SHOWN]
    )


def lost_named(limit: int = LOST_NAMED) -> list[tuple[str, str]]:
    """The first proxies (by id) excluded for a reason that passes, with that reason."""
    return list(current_transitions().filter(LOST).order_by("proxy").values_list("proxy", "reason")[:limit])


def proxy_page(filters: ProxyFilters, page: str | int | None) -> Page[CurrentTransition]:
    rows = filters.apply(current_transitions()).select_related("source").order_by("pool", "proxy")
    # get_page turns a bad or out-of-range page number into the first or last page, never an error.
    return Paginator(rows, PROXIES_PER_PAGE).get_page(page)


@dataclass(frozen=True)
class History:
    transitions: list[ProxyTransition]
    total: int  # transitions of the proxy that arrived in the window, shown or not


def recent_history(proxies: list[str], now: datetime | None = None) -> dict[str, History]:
    """The newest PROXY_HISTORY_ROWS transitions of each proxy among those that arrived in the last
    PROXY_HISTORY, and how many arrived: at most that many rows per proxy, in one query."""
    if not proxies:
        return {}
    since = (now or timezone.now()) - PROXY_HISTORY
    rows = (
        ProxyTransition.objects.filter(proxy__in=proxies, received_at__gte=since)
        .annotate(
            rank=Window(RowNumber(), partition_by=[F("proxy")], order_by=_NEWEST_FIRST),
            arrived=Window(Count("pk"), partition_by=[F("proxy")]),
        )
        .filter(rank__lte=PROXY_HISTORY_ROWS)
        .order_by("proxy", "rank")
        .only("proxy", "at", "received_at", "from_state", "to_state", "reason", "stage")
    )
    found: dict[str, History] = {}
    for t in rows:
        found.setdefault(t.proxy, History([], t.arrived)).transitions.append(t)
    return found


Changes = list[tuple[datetime, dict[str, int]]]


def state_changes(transitions: QuerySet[ProxyTransition], since: datetime, now: datetime) -> Changes:
    """Per hour (per day for spans over HOURLY_UP_TO), oldest first: for each state, the proxies that
    entered it minus those that left it, among `transitions` that arrived since `since`. A
    transition dated before `since` counts at `since`."""
    bucket = TruncHour if now - since <= HOURLY_UP_TO else TruncDay
    moment = Greatest(MOMENT, Value(since, output_field=DateTimeField()), output_field=DateTimeField())
    counts = {}
    for state in PROXY_STATES:
        counts[f"in_{state}"] = Count("pk", filter=Q(to_state=state))
        counts[f"out_{state}"] = Count("pk", filter=Q(from_state=state))
    # Rows keyed by the bucket and by the counts named above, which the checker cannot list.
    rows: Iterable[Mapping[str, Any]] = (
        transitions.filter(received_at__gte=since)
        .order_by()
        .annotate(bucket=bucket(moment))
        .values("bucket")
        .annotate(**counts)
        .order_by("bucket")
    )
    return [(row["bucket"], {s: row[f"in_{s}"] - row[f"out_{s}"] for s in PROXY_STATES}) for row in rows]


def fleet_changes(now: datetime) -> Changes:
    return state_changes(ProxyTransition.objects.all(), now - PROXY_HISTORY, now)


def source_proxy_steps(source: Source, since: datetime, now: datetime) -> tuple[dict[str, int], Changes]:
    """The source page's chart: the proxies the source reported on since `since`, each counted from
    the start in the state its first transition there left, and the changes per bucket after."""
    arrived = ProxyTransition.objects.filter(source=source, received_at__gte=since)
    first = arrived.annotate(
        rank=Window(RowNumber(), partition_by=[F("proxy")], order_by=[MOMENT.asc(), F("id").asc()]),
    ).filter(rank=1)
    start = dict(
        ProxyTransition.objects.filter(pk__in=first.values("pk"))
        .order_by()
        .values_list("from_state")
        .annotate(n=Count("pk"))
        .values_list("from_state", "n")
    )
    return start, state_changes(arrived, since, now)

"""The proxies page: each proxy's current state, its recent history, and capacity lost by mistake.

A proxy excluded for a temporary reason (a timeout, a slow body, a refused connection) is capacity
the pool lost by mistake: the cause passes, the exclusion does not. A revoked account or an operator's
removal is meant to be permanent and is not flagged.

What the page holds does not grow with what is stored: counts per state and per pool, a page of
proxies, each with its newest transitions, and the capacity chart's changes per hour
(sources/pages/selectors/proxies.py says how).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core.paginator import Page
from django.utils import timezone

from sources.models import ProxyTransition
from sources.pages.selectors import proxies as proxy_selectors
from sources.pages.selectors.proxies import NO_POOL, PERMANENT_REASONS, ProxyFilters, ProxyTotals

if TYPE_CHECKING:
    from sources.pages.selectors.proxies import CurrentTransition


def lost_by_mistake(state: str, reason: str) -> bool:
    return state == "excluded" and reason not in PERMANENT_REASONS


def pool_of(proxy: str) -> str:
    return proxy.split("/", 1)[0] if "/" in proxy else NO_POOL


@dataclass
class ProxyRow:
    proxy: str
    latest: ProxyTransition
    history: list[ProxyTransition] = field(default_factory=list)
    # Transitions that arrived in the history's window; more than are listed when it is long.
    arrived: int = 0

    @property
    def state(self) -> str:
        return self.latest.to_state

    @property
    def lost_by_mistake(self) -> bool:
        return lost_by_mistake(self.latest.to_state, self.latest.reason)


@dataclass
class ProxyBoard:
    totals: ProxyTotals
    pools: list[Mapping[str, Any]]
    lost_named: list[tuple[str, str]]
    page: Page[CurrentTransition]
    rows_by_pool: list[tuple[str, list[ProxyRow]]]
    end: dict[str, int]
    changes: proxy_selectors.Changes

    @property
    def pools_not_shown(self) -> int:
        return self.totals.pools - len(self.pools)

    @property
    def lost_not_named(self) -> int:
        return self.totals.lost - len(self.lost_named)


def proxy_board(filters: ProxyFilters, page: str | int | None, now: datetime | None = None) -> ProxyBoard:
    now = now or timezone.now()
    totals = proxy_selectors.totals()
    result = proxy_selectors.proxy_page(filters, page)
    latest = list(result.object_list)
    histories = proxy_selectors.recent_history([t.proxy for t in latest], now)
    rows_by_pool: dict[str, list[ProxyRow]] = {}
    for t in latest:
        history = histories.get(t.proxy)
        row = ProxyRow(t.proxy, t, history.transitions if history else [], history.total if history else 0)
        rows_by_pool.setdefault(t.pool, []).append(row)
    return ProxyBoard(
        totals=totals,
        pools=proxy_selectors.pool_table(),
        lost_named=proxy_selectors.lost_named() if totals.lost else [],
        page=result,
        rows_by_pool=list(rows_by_pool.items()),
        end=totals.states,
        changes=proxy_selectors.fleet_changes(now),
    )

"""The proxies page: each proxy's current state, its recent history, and capacity lost by mistake.

A proxy excluded for a temporary reason (a timeout, a slow body, a refused connection) is capacity
the pool lost by mistake: the cause passes, the exclusion does not. A revoked account or an operator's
removal is meant to be permanent and is not flagged.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from sources import selectors
from sources.models import ProxyTransition

PERMANENT_REASONS = frozenset({"account_revoked", "operator_removed", "auth_rejected"})


def lost_by_mistake(state: str, reason: str) -> bool:
    return state == "excluded" and reason not in PERMANENT_REASONS


def pool_of(proxy: str) -> str:
    return proxy.split("/", 1)[0] if "/" in proxy else "(no pool)"


@dataclass
class ProxyRow:
    proxy: str
    latest: ProxyTransition
    history: list[ProxyTransition] = field(default_factory=list)

    @property
    def state(self) -> str:
        return self.latest.to_state

    @property
    def lost_by_mistake(self) -> bool:
        return lost_by_mistake(self.latest.to_state, self.latest.reason)


@dataclass
class ProxyBoard:
    pools: list[tuple[str, list[ProxyRow]]]
    states: dict[str, int]
    lost_by_mistake: list[ProxyRow]
    window_transitions: list[ProxyTransition]
    window_initial: dict[str, str]


def proxy_board(now: datetime | None = None) -> ProxyBoard:
    now = now or timezone.now()
    latest = selectors.latest_proxy_transitions()
    recent = selectors.recent_proxy_transitions(now)
    by_proxy: dict[str, list[ProxyTransition]] = defaultdict(list)
    for t in recent:
        by_proxy[t.proxy].append(t)

    rows = [
        ProxyRow(t.proxy, t, list(reversed(by_proxy.get(t.proxy, [])[-selectors.PROXY_HISTORY_ROWS:])))
        for t in latest
    ]
    pools: dict[str, list[ProxyRow]] = defaultdict(list)
    for row in rows:
        pools[pool_of(row.proxy)].append(row)
    states: dict[str, int] = defaultdict(int)
    for row in rows:
        states[row.state] += 1

    # State of each proxy when the chart's period starts: before its first change in the period,
    # or, for a proxy that did not change in the period, the state it has had since.
    initial = {t.proxy: t.to_state for t in latest}
    for proxy, transitions in by_proxy.items():
        initial[proxy] = transitions[0].from_state
    return ProxyBoard(
        pools=sorted(pools.items()),
        states=dict(states),
        lost_by_mistake=[row for row in rows if row.lost_by_mistake],
        window_transitions=recent,
        window_initial=initial,
    )

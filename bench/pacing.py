"""The kit's adaptive delay (client/completeness_client/scrapy_kit/pacing.py), simulated: where it
settles, and what a burst of refusals at a crawl's start costs.

The site fails each request with a probability that grows with the rate the slot's delay allows; up to
`concurrency` requests are in flight, each answered after `latency` seconds. Printed per policy:

- the failure share the delay settles at, beside p* = ln(1/recovery) / (ln(backoff) + ln(1/recovery)),
  the equilibrium the service's `pacing_equilibrium` rule reads from the reported factors;
- after `concurrency` refusals at once at the start, the delay they leave and how many successes it
  takes to fall back under half a second.

The policies: "every failure" (each failure raises: the kit before 2026-12-05), and "once per round
trip" (a failure of a request sent before the slot's last raise raises only if a success came since).

    .venv/bin/python bench/pacing.py
    .venv/bin/python bench/pacing.py --concurrency 16 --recovery 0.95
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "client"))

from completeness_client.scrapy_kit.pacing import Pacing

START_DELAY = 0.25
SETTLED = 0.5  # seconds: "back to normal"


class Slot:
    delay = START_DELAY


def settled_share(concurrency: int, recovery: float, *, per_round_trip: bool, answers: int, seed: int) -> float:
    """The failure share over `answers` answers, the first tenth left out (the delay finding its level)."""
    rng = random.Random(seed)
    now = [0.0]
    pacing = Pacing(enabled=True, recovery=recovery, start_delay=0.001, monotonic=lambda: now[0])
    slot = Slot()
    in_flight: list[tuple[float, int, float, bool]] = []
    next_send, sent, answered, failed = 0.0, 0, 0, 0
    latency = 1.0
    while answered < answers:
        send_at = max(next_send, now[0]) if len(in_flight) < concurrency else math.inf
        if in_flight and in_flight[0][0] < send_at:
            now[0], _, sent_at, failure = heapq.heappop(in_flight)
            answered += 1
            if answered > answers // 10:
                failed += failure
            pacing.observe("site", slot, "http_429" if failure else "ok", sent_at=sent_at if per_round_trip else None)
            continue
        now[0] = send_at
        # Failures grow with the square of the rate the delay allows, 1% at 20 requests a second.
        failure = rng.random() < min(0.95, 0.01 * (1.0 / max(slot.delay, 1e-6) / 20.0) ** 2)
        heapq.heappush(in_flight, (now[0] + latency, sent, now[0], failure))
        sent += 1
        next_send = now[0] + slot.delay
    return failed / (answers - answers // 10)


def after_a_burst(concurrency: int, recovery: float, *, per_round_trip: bool) -> tuple[float, int]:
    """The delay `concurrency` refusals at once leave, and the successes until it is under SETTLED."""
    now = [0.0]
    pacing = Pacing(enabled=True, recovery=recovery, start_delay=START_DELAY, monotonic=lambda: now[0])
    slot = Slot()
    sent = [pacing.sent_at() for _ in range(concurrency)]
    now[0] = 1.0
    for index, at in enumerate(sent):
        pacing.observe("site", slot, "http_429", url=f"/p/{index}", sent_at=at if per_round_trip else None)
    left = slot.delay
    successes = 0
    while slot.delay >= SETTLED:
        pacing.observe("site", slot, "ok")
        successes += 1
    return left, successes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 8, 16])
    parser.add_argument("--recovery", type=float, nargs="*", default=[0.99, 0.9])
    parser.add_argument("--answers", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(
        "| recovery | p* | in flight | settles at: every failure | once per round trip |"
        " after a burst: every failure | once per round trip |"
    )
    print("|---|---|---|---|---|---|---|")
    for recovery in args.recovery:
        p_star = math.log(1 / recovery) / (math.log(2.0) + math.log(1 / recovery))
        for concurrency in args.concurrency:
            shares = [
                settled_share(concurrency, recovery, per_round_trip=once, answers=args.answers, seed=args.seed)
                for once in (False, True)
            ]
            bursts = [after_a_burst(concurrency, recovery, per_round_trip=once) for once in (False, True)]
            print(
                f"| {recovery} | {p_star:.2%} | {concurrency} | {shares[0]:.2%} | {shares[1]:.2%} | "
                + " | ".join(
                    f"{delay:.2f} s, {successes} success{'es' * (successes != 1)}" for delay, successes in bursts
                )
                + " |"
            )


if __name__ == "__main__":
    main()

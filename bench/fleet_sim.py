"""A simulated fleet of crawled sources: ordinary variation and injected silent losses, with ground truth.

Pure and deterministic: the numbers depend only on (seed, sources, days). The first simulated day is a
Monday, so weekday rhythms fall on the same days whatever the date the fleet is generated on; only the
calendar dates move (by whole weeks). No Django, nothing of the service: bench/fleet.py posts the
reports through the HTTP API, bench/fleet_score.py judges the same numbers with the peer methods.

Ordinary variation (all runs exit 0, crawler_verdict null or "complete", snapshot "replaced"):

- steady inventories (500-20,000 records, 0.5-2% log-normal run-to-run spread);
- noisy inventories (~8% spread);
- weekly inventories, 10-14% lower on Saturdays and Sundays;
- new-item feeds with a weekday rhythm (Saturday 40% of a weekday, Sunday 30-35%), a few dozen to a
  few hundred items a day, Poisson noise;
- exact declared totals (collected == declared_total - removed, up to 0.1% loss) and approximate ones
  (collected / (declared - removed) hovers around a mean of 0.988-0.995 with a 0.4-point spread: now
  above, now below 0.99);
- sources running four times a day, the night run 10-20% lower; the rest daily at their own hour;
- promotions that end (+30-60% for 1-3 weeks, then back), on a sixth of the inventories;
- slow drift of 0.1-0.2% a day up or down on 40% of the sources (the rest within 0.05%);
- field counts on 80% of the sources: 2-4 steady fields filled 96-99%, and on some sources 1-2 optional
  fields whose coverage wanders between 10% and 45% (a bounded random walk).

Silent losses (exit 0, nothing failed, only the numbers tell), about one per source, never in the first
two weeks, none during a promotion (nor the week after it), at least a week apart on one source:

- partial: one run collects 25-75% of normal;
- branch: 8-20% gone for 3-7 runs (steady sources mostly; also weekly and four-a-day ones, never the
  noisy ones, where 8% is within ordinary spread);
- field: a steady field's coverage falls to 0-40% for 2-5 runs;
- decline: 2.5% a day for 10-15 days, then either recovers at once or stays at its lowest for 3-7
  more days before it recovers (the low days belong to the loss too);
- stalled: a new-item feed collects 0-5% of normal for 2-4 runs;
- declared: on a declared source, collected is 4-10% short of declared_total - removed for 1-4 runs.

Each run's ground truth is healthy (loss None) or the id of the loss it belongs to; the runs after a
loss are healthy again, back at the source's normal level.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

# Source kinds and their share of a fleet (largest remainder, so a small fleet still has each kind).
KIND_SHARES = {
    "steady": 0.24,
    "noisy": 0.11,
    "weekly": 0.15,
    "feed": 0.20,
    "declared-exact": 0.10,
    "declared-approx": 0.10,
    "four-a-day": 0.10,
}
INVENTORIES = ("steady", "noisy", "weekly", "four-a-day")
# Loss kinds and their share of the losses.
LOSS_SHARES = {"partial": 0.20, "branch": 0.20, "field": 0.16, "decline": 0.12, "stalled": 0.14, "declared": 0.18}
LOSSES_PER_SOURCE = 75 / 72
LEARNING_DAYS = 14  # no loss before this day; scoring starts here (week 3)
STEADY_FIELDS = ("title", "price", "url", "image")
OPTIONAL_FIELDS = ("discount", "rating_count")


@dataclass
class Spec:
    """One source's parameters, drawn from the seed."""

    index: int
    slug: str
    kind: str
    per_day: int
    hour: int
    minute: int
    duration: int  # minutes
    level: float  # records (inventories) or weekday items (feeds)
    spread: float  # log-normal sigma of run-to-run noise
    drift: float  # per day, multiplicative
    weekend: tuple[float, float] = (1.0, 1.0)  # Saturday, Sunday factors
    night: float = 1.0  # four-a-day: factor of the first (night) run of the day
    share_mu: float = 1.0  # declared-approx: mean of collected / (declared - removed)
    share_sd: float = 0.0
    removed_rate: float = 0.0
    promotion: tuple[int, int, float] | None = None  # first day, days, lift
    steady_fields: dict[str, float] = field(default_factory=dict)
    optional_fields: tuple[str, ...] = ()
    crawler_verdict: str | None = None

    @property
    def declared(self) -> bool:
        return self.kind.startswith("declared")

    @property
    def traits(self) -> list[str]:
        """What besides its kind makes this source's normal: for breaking false alarms down."""
        traits = []
        if self.promotion:
            traits.append("promotion")
        if abs(self.drift) >= 0.001:
            traits.append("drift")
        if self.optional_fields:
            traits.append("optional fields")
        return traits


@dataclass
class Loss:
    id: str
    kind: str
    slug: str
    runs: list[int]  # indexes into the source's runs
    detail: str


@dataclass
class Run:
    slug: str
    kind: str
    index: int  # within the source
    day: int
    slot: int  # 0..per_day-1
    weekday: int  # 0 Monday .. 6 Sunday
    started_at: datetime
    report: dict
    loss: str | None = None  # id of the loss this run belongs to, None when healthy
    # What a healthy run at this slot collects on average, noise and loss left out (a declared
    # source's total): the simulator's own parameters, which only the ideal judge may read.
    mean: float = 0.0

    @property
    def key(self) -> tuple[str, int]:
        return (self.slug, self.index)

    @property
    def collected(self) -> int:
        return self.report["collected"]

    @property
    def share(self) -> float | None:
        declared = self.report.get("declared_total")
        if declared is None:
            return None
        return self.collected / max(declared - self.report.get("removed", 0), 1)

    def coverage(self, name: str) -> float:
        """Share of the collected records with `name` filled; 0 when the report omits it."""
        fields = self.report.get("fields") or {}
        return fields.get(name, 0) / self.collected if self.collected else 0.0


@dataclass
class Fleet:
    seed: int
    days: int
    first_day: datetime
    specs: list[Spec]
    runs: list[Run]  # all sources interleaved, in the order of started_at
    losses: list[Loss]
    variant: str = "default"

    def by_source(self) -> dict[str, list[Run]]:
        out: dict[str, list[Run]] = {spec.slug: [] for spec in self.specs}
        for run in self.runs:
            out[run.slug].append(run)
        return out


def first_monday(now: datetime, days: int) -> datetime:
    """The Monday 00:00 UTC from which `days` days of runs all start at least a day before `now`."""
    end = (now - timedelta(days=1)).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = end - timedelta(days=days)
    return start - timedelta(days=start.weekday())


def simulate(
    sources: int = 72,
    days: int = 84,
    seed: int = 1,
    *,
    tag: str = "f",
    losses: int | None = None,
    now: datetime | None = None,
    variant: str = "default",
) -> Fleet:
    """The fleet: `sources` sources over `days` days, `losses` silent losses (default about one a source).

    `tag` goes into every slug and run id (make it unique per run of the bench); it does not change
    the numbers. `variant` names the parameter ranges (`VARIANTS`).
    """
    if days < LEARNING_DAYS + 14:
        raise ValueError(f"days must be at least {LEARNING_DAYS + 14}: two weeks to learn, two to lose")
    start = first_monday(now or datetime.now(UTC), days)
    kinds = _allocate(KIND_SHARES, sources, random.Random(f"{seed}:kinds"))
    specs = [_spec(index, kind, days, seed, tag, VARIANTS[variant]) for index, kind in enumerate(kinds)]
    n_losses = round(sources * LOSSES_PER_SOURCE) if losses is None else losses
    plan = _plan_losses(specs, days, n_losses, random.Random(f"{seed}:losses"))
    runs: list[Run] = []
    for spec in specs:
        runs.extend(_runs(spec, days, start, plan.get(spec.slug, []), seed))
    runs.sort(key=lambda run: (run.started_at, run.slug))
    loss_list = [loss for spec in specs for loss in plan.get(spec.slug, [])]
    loss_list.sort(key=lambda loss: loss.id)
    return Fleet(seed=seed, days=days, first_day=start, specs=specs, runs=runs, losses=loss_list, variant=variant)


def _allocate(shares: dict[str, float], total: int, rng: random.Random) -> list[str]:
    """`total` items split by `shares` (largest remainder), in a shuffled order."""
    exact = {name: share * total for name, share in shares.items()}
    counts = {name: int(value) for name, value in exact.items()}
    rest = sorted(exact, key=lambda name: exact[name] - counts[name], reverse=True)
    for name in rest[: total - sum(counts.values())]:
        counts[name] += 1
    items = [name for name, count in counts.items() for _ in range(count)]
    rng.shuffle(items)
    return items


@dataclass(frozen=True)
class Ranges:
    """The ranges a fleet's sources are drawn from. `VARIANTS["wide"]` is a fleet the rules were not
    tuned on: the same kinds with wider parameters, to check that the rules hold beyond the bench's own."""

    steady_spread: tuple[float, float] = (0.005, 0.02)
    noisy_spread: tuple[float, float] = (0.07, 0.09)
    weekly_dip: tuple[float, float] = (0.10, 0.14)
    feed_level: tuple[float, float] = (30, 400)
    feed_saturday: tuple[float, float] = (0.40, 0.40)
    feed_sunday: tuple[float, float] = (0.30, 0.35)
    night_dip: tuple[float, float] = (0.10, 0.20)


VARIANTS = {
    "default": Ranges(),
    "wide": Ranges(
        steady_spread=(0.003, 0.03),
        noisy_spread=(0.05, 0.12),
        weekly_dip=(0.05, 0.25),
        feed_level=(20, 800),
        feed_saturday=(0.20, 0.60),
        feed_sunday=(0.20, 0.50),
        night_dip=(0.05, 0.35),
    ),
}


def _draw(rng: random.Random, bounds: tuple[float, float]) -> float:
    low, high = bounds
    return low if low == high else rng.uniform(low, high)  # a fixed value draws nothing: seeds replay


def _spec(index: int, kind: str, days: int, seed: int, tag: str, ranges: Ranges = VARIANTS["default"]) -> Spec:
    rng = random.Random(f"{seed}:source:{index}")
    level = math.exp(rng.uniform(math.log(500), math.log(20_000)))
    spec = Spec(
        index=index,
        slug=f"{tag}-{kind}-{index:03d}",
        kind=kind,
        per_day=1,
        hour=rng.randrange(24),
        minute=rng.randrange(60),
        duration=rng.randint(15, 90),
        level=level,
        spread=_draw(rng, ranges.steady_spread),
        drift=rng.choice((-1, 1)) * (rng.uniform(0.001, 0.002) if rng.random() < 0.4 else rng.uniform(0, 0.0005)),
        crawler_verdict=rng.choice((None, "complete")),
    )
    if kind == "noisy":
        spec.spread = _draw(rng, ranges.noisy_spread)
    elif kind == "weekly":
        low = 1 - _draw(rng, ranges.weekly_dip)
        spec.weekend = (low, low)
    elif kind == "feed":
        spec.level = math.exp(rng.uniform(math.log(ranges.feed_level[0]), math.log(ranges.feed_level[1])))
        spec.spread = 0.05  # on top of Poisson noise
        saturday = _draw(rng, ranges.feed_saturday)
        spec.weekend = (saturday, _draw(rng, ranges.feed_sunday))
    elif kind == "four-a-day":
        spec.per_day = 4
        spec.hour = rng.randrange(6)  # the first run of the day is the night run
        spec.night = 1 - _draw(rng, ranges.night_dip)
    elif kind == "declared-exact":
        spec.spread = rng.uniform(0.005, 0.01)
        spec.removed_rate = rng.uniform(0, 0.003)
    elif kind == "declared-approx":
        spec.spread = rng.uniform(0.005, 0.01)
        spec.removed_rate = rng.uniform(0, 0.003)
        spec.share_mu = rng.uniform(0.988, 0.995)
        spec.share_sd = 0.004
    if kind in INVENTORIES and rng.random() < 1 / 6:
        length = 7 * rng.randint(1, 3)
        first = rng.randint(10, max(10, days - length - 10))
        spec.promotion = (first, length, rng.uniform(0.30, 0.60))
    if rng.random() < 0.8:
        names = STEADY_FIELDS[: rng.randint(2, 4)]
        spec.steady_fields = {name: rng.uniform(0.96, 0.99) for name in names}
        if rng.random() < 0.5:
            spec.optional_fields = OPTIONAL_FIELDS[: rng.randint(1, 2)]
    return spec


def _plan_losses(specs: list[Spec], days: int, total: int, rng: random.Random) -> dict[str, list[Loss]]:
    """Where the losses fall: each a kind, a source it fits, and its runs."""
    fits = {
        "partial": lambda spec: True,
        # Not on noisy sources: 8% gone is within their ordinary spread, no method could tell.
        "branch": lambda spec: spec.kind in ("steady", "weekly", "four-a-day"),
        "field": lambda spec: bool(spec.steady_fields),
        "decline": lambda spec: spec.kind in INVENTORIES,
        "stalled": lambda spec: spec.kind == "feed",
        "declared": lambda spec: spec.declared,
    }
    taken: dict[str, list[tuple[int, int]]] = {spec.slug: [] for spec in specs}  # (first day, last day)
    plan: dict[str, list[Loss]] = {}
    kinds = _allocate(LOSS_SHARES, total, rng)
    for number, kind in enumerate(kinds, start=1):
        candidates = [spec for spec in specs if fits[kind](spec)]
        if kind == "branch":  # on steady sources mostly
            candidates = [spec for spec in candidates for _ in range(4 if spec.kind == "steady" else 1)]
        # Spread the losses: fewest losses first, ties in random order.
        rng.shuffle(candidates)
        candidates.sort(key=lambda spec: len(taken[spec.slug]))
        for spec in candidates:
            placed = _place(spec, kind, days, taken[spec.slug], rng)
            if placed:
                first_day, last_day, runs, detail = placed
                taken[spec.slug].append((first_day, last_day))
                plan.setdefault(spec.slug, []).append(
                    Loss(id=f"L{number:03d}", kind=kind, slug=spec.slug, runs=runs, detail=detail)
                )
                break
    return plan


def _place(spec: Spec, kind: str, days: int, taken: list[tuple[int, int]], rng: random.Random):
    """A free stretch of this source's runs for a loss of `kind`, with the loss's effect per run."""
    if kind == "partial":
        n_runs, detail = 1, {"factor": rng.uniform(0.25, 0.75)}
    elif kind == "branch":
        n_runs, detail = rng.randint(3, 7), {"factor": 1 - rng.uniform(0.08, 0.20)}
    elif kind == "field":
        n_runs = rng.randint(2, 5)
        detail = {"field": rng.choice(list(spec.steady_fields)), "coverage": rng.uniform(0.0, 0.40)}
    elif kind == "decline":
        decline_days = rng.randint(10, 15)
        low_days = rng.choice((0, rng.randint(3, 7)))
        n_runs = (decline_days + low_days) * spec.per_day
        detail = {"decline_days": decline_days, "low_days": low_days}
    elif kind == "stalled":
        n_runs, detail = rng.randint(2, 4), {"factor": rng.uniform(0.0, 0.05)}
    else:  # declared
        n_runs, detail = rng.randint(1, 4), {"short": rng.uniform(0.04, 0.10)}
    span_days = math.ceil(n_runs / spec.per_day)
    earliest, latest = LEARNING_DAYS * spec.per_day, (days - span_days - 1) * spec.per_day
    if latest <= earliest:
        return None  # too long for the days left after the learning weeks
    for _ in range(30):
        first_run = rng.randrange(earliest, latest)
        first_day, last_day = first_run // spec.per_day, (first_run + n_runs - 1) // spec.per_day
        busy = list(taken)
        if spec.promotion:
            busy.append((spec.promotion[0] - 2, spec.promotion[0] + spec.promotion[1] + 7))
        if all(last_day + 7 < start or first_day > end + 7 for start, end in busy):
            detail["first_run"] = first_run
            return first_day, last_day, list(range(first_run, first_run + n_runs)), detail
    return None


def _runs(spec: Spec, days: int, start: datetime, losses: list[Loss], seed: int) -> list[Run]:
    rng = random.Random(f"{seed}:runs:{spec.index}")
    effects = {run: loss for loss in losses for run in loss.runs}
    walk = {name: rng.uniform(0.10, 0.45) for name in spec.optional_fields}
    runs = []
    for index in range(days * spec.per_day):
        day, slot = divmod(index, spec.per_day)
        started = start + timedelta(
            days=day, hours=spec.hour + 6 * slot, minutes=spec.minute, seconds=rng.randrange(60)
        )
        weekday = started.weekday()
        base = spec.level * math.exp(spec.drift * day)
        if weekday >= 5:
            base *= spec.weekend[weekday - 5]
        if slot == 0:
            base *= spec.night
        if spec.promotion and spec.promotion[0] <= day < spec.promotion[0] + spec.promotion[1]:
            base *= 1 + spec.promotion[2]
        noise = math.exp(rng.gauss(0, spec.spread))
        loss = effects.get(index)
        detail = loss.detail if loss else {}
        if loss and loss.kind == "decline":
            # The day's factor: 2.5% less each day of the decline, then held at its lowest.
            nth_day = min(day - detail["first_run"] // spec.per_day, detail["decline_days"] - 1)
            noise *= 0.975 ** (nth_day + 1)
        report: dict = {
            "source": spec.slug,
            "run_id": f"{spec.slug}-{index:04d}",
            "started_at": _iso(started),
            "finished_at": _iso(started + timedelta(minutes=spec.duration + rng.randint(-5, 5))),
            "exit_code": 0,
            "crawler_verdict": spec.crawler_verdict,
        }
        if spec.kind == "feed":
            collected = _poisson(rng, base * noise)
            if loss and loss.kind in ("partial", "stalled"):
                collected = round(collected * detail["factor"])
        elif spec.declared:
            total = round(base * noise)
            removed = _poisson(rng, total * spec.removed_rate)
            if spec.kind == "declared-exact":
                collected = total - removed - int(total * rng.uniform(0, 0.001))
            else:
                share = min(max(rng.gauss(spec.share_mu, spec.share_sd), 0.975), 1.005)
                collected = round((total - removed) * share)
            if loss and loss.kind == "declared":
                collected = round((total - removed) * (1 - detail["short"]))
            elif loss and loss.kind == "partial":
                collected = round(collected * detail["factor"])
            report.update(declared_total=total, removed=removed)
        else:
            collected = round(base * noise)
            if loss and loss.kind in ("partial", "branch"):
                collected = round(collected * detail["factor"])
        collected = max(collected, 0)
        report["collected"] = collected
        if spec.steady_fields:
            fields = {}
            for name, share in spec.steady_fields.items():
                if loss and loss.kind == "field" and name == detail["field"]:
                    share = min(max(detail["coverage"] + rng.gauss(0, 0.01), 0.0), 1.0)
                else:
                    share = min(max(share + rng.gauss(0, 0.003), 0.0), 1.0)
                fields[name] = _binomial(rng, collected, share)
            for name in spec.optional_fields:
                walk[name] = min(max(walk[name] + rng.gauss(0, 0.07), 0.10), 0.45)
                fields[name] = _binomial(rng, collected, walk[name])
            report["fields"] = fields
        report["snapshot"] = {"action": "replaced", "rows": collected}
        runs.append(
            Run(
                slug=spec.slug,
                kind=spec.kind,
                index=index,
                day=day,
                slot=slot,
                weekday=weekday,
                started_at=started,
                report=report,
                loss=loss.id if loss else None,
                mean=base,
            )
        )
    return runs


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 60:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _binomial(rng: random.Random, n: int, p: float) -> int:
    if n <= 0 or p <= 0:
        return 0
    if p >= 1:
        return n
    variance = n * p * (1 - p)
    if variance > 9:
        return min(n, max(0, round(rng.gauss(n * p, math.sqrt(variance)))))
    return sum(1 for _ in range(n) if rng.random() < p)

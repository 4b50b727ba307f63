"""Demo data: ~60 sources, 60 days of daily runs, and the stories ops meet (a partial run that replaced
the snapshot, cards lost six runs in a row, a stub page, a pause, proxies cooling), all posted through
the ingest path (parse_report + ingest_report) exactly as a crawler's report would be.

Everything is deterministic for a given anchor (a seeded RNG, run ids from the day), and a source
that already has runs is left alone, so running the command twice changes nothing.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sources.demo import DEMO_USERNAME as DEMO_USERNAME
from sources.demo.stories import half_empty_price, slow_decline
from sources.ingest import ingest
from sources.models import ApiToken, PauseOrigin, Source, Tag
from sources.services import pausing

DAYS = 60
REGIONS = ("ae", "sa", "eg", "uk", "de", "us")
KINDS = ("cars", "homes", "jobs", "offers", "hotels", "parts", "phones", "boats", "bikes", "pets")
Report = dict[str, Any]  # a run report as a crawler would post it
Maker = Callable[[int, datetime], Report | None]  # None: no run in that slot
Steady = Callable[[int, datetime], Report]


def iso(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class DemoSource:
    slug: str
    name: str
    region: str
    tags: list[str]
    maker: Maker
    story: str = ""
    hour: int = 3
    # Called once after its runs, e.g. to pause it through the pausing service.
    after: Callable[[Source], None] | None = None
    runs_per_day: int = 1
    skip_last_days: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def base_report(slug: str, day: int, start: datetime, collected: int, **fields: Any) -> Report:
    finished = start + timedelta(minutes=42)
    body: Report = {
        "source": slug,
        "run_id": f"{slug}-{start:%Y%m%d-%H%M}",
        "started_at": iso(start),
        "finished_at": iso(finished),
        "exit_code": 0,
        "crawler_verdict": "complete",
        "collected": collected,
        "meta": {"crawler": "demo-kit 1.4.2", "host": f"crawl-{day % 3 + 1}"},
    }
    body.update(fields)
    return body


def healthy(slug: str, total: int, rng: random.Random, declared: bool = True) -> Steady:
    def make(day: int, start: datetime) -> Report:
        # Slow growth up to `total` today, so a story's last numbers read as its description says.
        size = int(total * (1 - 0.001 * day) * rng.uniform(0.995, 1.005))
        removed = rng.randint(0, max(1, size // 400))
        collected = size - removed - (rng.randint(0, size // 1000) if declared else 0)
        fields: dict[str, Any] = {
            "removed": removed,
            "written": collected,
            "snapshot": {"action": "replaced", "rows": collected},
            "requests": {"by_class": {"ok": collected // 20 + 50, "not_found": removed, "timeout": rng.randint(0, 4)}},
            "pages": {"expected": collected // 25 + 1, "fetched": collected // 25 + 1, "lost": 0},
        }
        if declared:
            fields["declared_total"] = size
        return base_report(slug, day, start, collected, **fields)

    return make


def timed_out_overwrite(slug: str, rng: random.Random) -> Maker:
    """Story: a run timed out at 1,200 of 9,000 and replaced the snapshot (the newest run)."""
    normal = healthy(slug, 9000, rng)

    def make(day: int, start: datetime) -> Report:
        if day > 0:
            return normal(day, start)
        return base_report(
            slug,
            day,
            start,
            1200,
            declared_total=9000,
            written=1200,
            finished_at=iso(start + timedelta(hours=2)),
            snapshot={"action": "replaced", "rows": 1200},
            requests={"by_class": {"ok": 64, "timeout": 212, "connection_reset": 18}},
            pages={"expected": 360, "fetched": 48, "lost": 0},
            meta={"crawler": "demo-kit 1.4.2", "host": "crawl-2", "note": "job killed by the 2 h scheduler timeout"},
        )

    return make


def losing_cards(slug: str, rng: random.Random) -> Maker:
    """Story: a feed losing 41 to 58 of 550 cards six runs in a row, exit 0 every time."""
    losses = [41, 58, 47, 52, 44, 55]

    def make(day: int, start: datetime) -> Report:
        lost = losses[day] if day < len(losses) else rng.randint(0, 3)
        return base_report(
            slug,
            day,
            start,
            550 - lost,
            declared_total=550,
            written=550 - lost,
            snapshot={"action": "appended", "rows": 550 - lost},
            requests={"by_class": {"ok": 560, "short_body": lost if day < 6 else 0}},
        )

    return make


def stub_page(slug: str, rng: random.Random) -> Maker:
    """Story: the site answers 200 with a stub page: listing pages come back, nothing in them."""
    normal = healthy(slug, 3200, rng, declared=False)

    def make(day: int, start: datetime) -> Report:
        if day >= 3:
            return normal(day, start)
        return base_report(
            slug,
            day,
            start,
            0,
            written=0,
            snapshot={"action": "kept_previous", "rows": None},
            requests={"by_class": {"ok": 130}},
            pages={"expected": None, "fetched": 130, "lost": 0},
        )

    return make


def _window_series(peak_at: int, peak: float, length: int, rng: random.Random) -> list[list[float]]:
    series = []
    for seq in range(0, length + 1, 100):
        distance = abs(seq - peak_at) / 900
        ratio = max(0.0, peak * max(0.0, 1 - distance) + rng.uniform(0, 0.03))
        series.append([seq, round(min(ratio, 1.0), 3)])
    return series


def _requests_of(series: list[list[float]], removed: int) -> dict[str, Any]:
    """The run's requests as its failure window saw them: as many as the window's last sequence number,
    bad ones as the window's ratios add up (a point every 100 requests), so that a breaker that
    stopped at request 2,600 does not sit beside 432 requests in all."""
    length = int(series[-1][0])
    bad = min(round(sum(ratio for _, ratio in series) * 100), length - removed)
    return {
        "by_class": {
            "ok": length - bad - removed,
            "not_found": removed,
            "timeout": bad // 2,
            "http_5xx": bad - bad // 2,
        }
    }


def _trip(series: list[list[float]], threshold: float = 0.35) -> tuple[int, float]:
    """Where a breaker trips: the first point at which its window crosses the threshold."""
    return next((int(seq), ratio) for seq, ratio in series if ratio >= threshold)


def breaker_recovered(slug: str, rng: random.Random) -> Maker:
    """Story: a breaker that tripped, probed and recovered: the run completed."""
    normal = healthy(slug, 5200, rng)

    def make(day: int, start: datetime) -> Report:
        body = normal(day, start)
        peak = 0.41 if day in (1, 9, 23) else rng.uniform(0.02, 0.12)
        series = _window_series(1840, peak, 4400, rng)
        window = {
            "size": 200,
            "threshold": 0.35,
            "min_samples": 50,
            "bad_classes": ["http_5xx", "timeout", "connection_reset", "short_body"],
            "series": series,
            "events": [],
        }
        if peak >= 0.35:
            # Tripped where the window first crossed its threshold; after the pause the site answers
            # again, and the bad share of the window falls away as good requests replace the bad.
            trip, ratio = _trip(series)
            series[:] = [
                [seq, r if seq <= trip else round(max(0.02, ratio * (1 - (seq - trip) / 400)), 3)] for seq, r in series
            ]
            at = start + timedelta(minutes=10)
            window["events"] = [
                {"at": iso(at), "seq": trip, "kind": "tripped", "ratio": ratio, "samples": 200},
                {"at": iso(at + timedelta(minutes=5)), "seq": trip, "kind": "probe", "sent": 20, "bad": 14},
                {"at": iso(at + timedelta(minutes=10)), "seq": trip + 20, "kind": "probe", "sent": 20, "bad": 2},
                {"at": iso(at + timedelta(minutes=10, seconds=5)), "seq": trip + 20, "kind": "resumed"},
            ]
        body["failure_window"] = window
        body["requests"] = _requests_of(series, body["removed"])
        return body

    return make


def breaker_stopped(slug: str, rng: random.Random) -> Maker:
    """Story: a breaker that stopped the run after three failed probes (a loud failure: exit 2)."""
    normal = healthy(slug, 7400, rng)

    def make(day: int, start: datetime) -> Report:
        body = normal(day, start)
        series = _window_series(2600, rng.uniform(0.03, 0.1), 5600, rng)
        if day == 0:
            # The breaker trips where the window first crosses its threshold, and the crawl goes no
            # further: the series ends there, and the probes and the stop are at the same request.
            rising = _window_series(2600, 0.58, 2700, rng)
            trip, ratio = _trip(rising)
            series = [point for point in rising if point[0] <= trip]
        window = {"size": 200, "threshold": 0.35, "min_samples": 50, "series": series, "events": []}
        if day == 0:
            at = start + timedelta(minutes=12)
            window["events"] = [
                {"at": iso(at), "seq": trip, "kind": "tripped", "ratio": ratio, "samples": 200},
                *[
                    {"at": iso(at + timedelta(minutes=5 * i)), "seq": trip, "kind": "probe", "sent": 20, "bad": 15 + i}
                    for i in (1, 2, 3)
                ],
                {"at": iso(at + timedelta(minutes=16)), "seq": trip, "kind": "stopped", "ratio": ratio, "samples": 200},
            ]
            expected_pages = body["pages"]["expected"]
            fetched = expected_pages // 3
            body.update(
                exit_code=2,
                crawler_verdict="incomplete",
                collected=2480,
                written=2480,
                snapshot={"action": "kept_previous", "rows": None},
                end_reason="completeness_breaker_stopped",
                # The kit counts listing pages never fetched after a stop as lost.
                pages={"expected": expected_pages, "fetched": fetched, "lost": expected_pages - fetched},
            )
        body["failure_window"] = window
        body["requests"] = _requests_of(series, body["removed"])
        return body

    return make


PROXIES = [f"pool-{p}/exit-{n:04d}" for p in ("ae", "eu") for n in range(1, 7)]


def proxy_churn(slug: str, rng: random.Random, total: int) -> Maker:
    """Story: proxies cooling, probing and recovering every few runs; one excluded for a slow body."""
    normal = healthy(slug, total, rng)

    def make(day: int, start: datetime) -> Report:
        body = normal(day, start)
        at = start + timedelta(minutes=3)
        transitions = []
        for proxy in rng.sample(PROXIES[:-2], 2):
            cool_until = at + timedelta(minutes=5)
            transitions += [
                {
                    "proxy": proxy,
                    "at": iso(at),
                    "from": "eligible",
                    "to": "cooling",
                    "reason": "connect_refused",
                    "stage": "connect",
                    "until": iso(cool_until),
                },
                {
                    "proxy": proxy,
                    "at": iso(cool_until),
                    "from": "cooling",
                    "to": "probe_allowed",
                    "reason": "cooldown_expired",
                    "stage": "probe",
                },
            ]
            if rng.random() < 0.3:
                transitions += [
                    {
                        "proxy": proxy,
                        "at": iso(cool_until + timedelta(seconds=20)),
                        "from": "probe_allowed",
                        "to": "cooling",
                        "reason": "probe_failed",
                        "stage": "probe",
                        "until": iso(cool_until + timedelta(minutes=10)),
                    },
                    {
                        "proxy": proxy,
                        "at": iso(cool_until + timedelta(minutes=10)),
                        "from": "cooling",
                        "to": "probe_allowed",
                        "reason": "cooldown_expired",
                        "stage": "probe",
                    },
                ]
            transitions.append(
                {
                    "proxy": proxy,
                    "at": iso(cool_until + timedelta(minutes=11)),
                    "from": "probe_allowed",
                    "to": "eligible",
                    "reason": "probe_succeeded",
                    "stage": "probe",
                }
            )
            at += timedelta(minutes=1)
        if day == 4:
            transitions.append(
                {
                    "proxy": PROXIES[-2],
                    "at": iso(start + timedelta(minutes=20)),
                    "from": "eligible",
                    "to": "excluded",
                    "reason": "slow_body",
                    "stage": "body",
                }
            )
        if day == 30:
            transitions.append(
                {
                    "proxy": PROXIES[-1],
                    "at": iso(start + timedelta(minutes=21)),
                    "from": "eligible",
                    "to": "excluded",
                    "reason": "account_revoked",
                    "stage": "auth",
                }
            )
        body["proxy_transitions"] = sorted(transitions, key=lambda t: t["at"])
        return body

    return make


def generator_outcomes(slug: str, rng: random.Random) -> Maker:
    """Story: generator-style outcome counters, reported as rates per 10,000."""

    def make(day: int, start: datetime) -> Report:
        generated = rng.randint(118_000, 124_000)
        rejected = rng.randint(9_000, 11_000)
        schedule = rng.randint(20_000, 26_000)
        overflow = rng.randint(300, 900) * (6 if day in (2, 3) else 1)
        return base_report(
            slug,
            day,
            start,
            generated,
            written=generated,
            snapshot={"action": "appended", "rows": generated},
            outcomes={
                "generated": generated,
                "url_filters_rejected": rejected,
                "schedule_rejected": schedule,
                "urls_skipped_per_host_overflow": overflow,
            },
            counters={"hosts_affected_per_host_overflow": overflow // 150 + 1},
        )

    return make


def loud_lost_pages(slug: str, rng: random.Random) -> Maker:
    """A loud failure: pages lost after retries, the crawler knew and exited 1."""
    normal = healthy(slug, 2600, rng, declared=False)

    def make(day: int, start: datetime) -> Report:
        body = normal(day, start)
        if day <= 1:
            body.update(
                exit_code=1,
                crawler_verdict="incomplete",
                collected=2140,
                written=2140,
                snapshot={"action": "kept_previous", "rows": None},
                # 18 listing pages that failed all three attempts: 54 bad requests among the rest.
                requests={"by_class": {**body["requests"]["by_class"], "timeout": 54}},
                pages={
                    "expected": 104,
                    "fetched": 86,
                    "lost": 18,
                    "lost_urls": [f"https://example.test/{slug}/list?page={p}" for p in range(87, 105)],
                },
            )
        return body

    return make


def proxy_migration_pause(slug: str, rng: random.Random) -> Maker:
    """Story: an intentional pause during a proxy migration: the last three runs report paused."""
    normal = healthy(slug, 4100, rng)

    def make(day: int, start: datetime) -> Report:
        if day >= 3:
            return normal(day, start)
        return base_report(
            slug,
            day,
            start,
            0,
            paused=True,
            crawler_verdict=None,
            pause_reason="proxy migration: pool-ae moving to pool-eu",
        )

    return make


def delivery_observed(slug: str, rng: random.Random) -> Maker:
    normal = healthy(slug, 1800, rng)

    def make(day: int, start: datetime) -> Report:
        body = normal(day, start)
        delivered = body["collected"] - (rng.randint(5, 40) if day % 4 == 0 else 0)
        body["delivery"] = {
            "attempted": body["collected"],
            "delivered": delivered,
            "errors": {"crm_timeout": body["collected"] - delivered} if delivered < body["collected"] else {},
        }
        return body

    return make


def demo_sources(seed: int = 7) -> list[DemoSource]:
    rng = random.Random(seed)
    stories = [
        DemoSource(
            "cars-ae",
            "Cars UAE",
            "ae",
            ["cars", "marketplace"],
            timed_out_overwrite("cars-ae", rng),
            story="timed out at 1,200 of 9,000 and replaced the snapshot",
        ),
        DemoSource(
            "offers-feed-sa",
            "Offers feed KSA",
            "sa",
            ["offers", "feed"],
            losing_cards("offers-feed-sa", rng),
            story="losing 41-58 of 550 cards six runs in a row, exit 0",
        ),
        DemoSource(
            "homes-eg", "Homes Egypt", "eg", ["homes"], stub_page("homes-eg", rng), story="answers 200 with a stub page"
        ),
        DemoSource(
            "jobs-ae",
            "Jobs UAE",
            "ae",
            ["jobs", "proxies"],
            proxy_migration_pause("jobs-ae", rng),
            story="paused on purpose during a proxy migration",
            after=_pause_for_migration,
        ),
        DemoSource(
            "hotels-uk",
            "Hotels UK",
            "uk",
            ["hotels"],
            breaker_recovered("hotels-uk", rng),
            story="breaker tripped, probed and recovered",
        ),
        DemoSource(
            "parts-de",
            "Parts Germany",
            "de",
            ["parts"],
            breaker_stopped("parts-de", rng),
            story="breaker stopped after three failed probes",
        ),
        DemoSource(
            "phones-ae",
            "Phones UAE",
            "ae",
            ["phones", "proxies"],
            proxy_churn("phones-ae", rng, 6400),
            story="proxies cooling, probing, recovering; one excluded for a slow body",
        ),
        DemoSource(
            "links-us",
            "Link generator US",
            "us",
            ["generator"],
            generator_outcomes("links-us", rng),
            story="generator-style outcome counters",
        ),
        DemoSource(
            "boats-uk",
            "Boats UK",
            "uk",
            ["boats"],
            loud_lost_pages("boats-uk", rng),
            story="lost listing pages; the crawler knew (loud)",
        ),
        DemoSource(
            "pets-de",
            "Pets Germany",
            "de",
            ["pets"],
            healthy("pets-de", 900, rng),
            story="stopped reporting three days ago (overdue)",
            skip_last_days=3,
        ),
        DemoSource(
            "bikes-sa",
            "Bikes KSA",
            "sa",
            ["bikes", "crm"],
            delivery_observed("bikes-sa", rng),
            story="CRM delivery losses, rule observed (complete)",
        ),
        DemoSource(
            "flats-uk",
            "Flats UK",
            "uk",
            ["homes", "marketplace"],
            half_empty_price(healthy("flats-uk", 4800, rng), rng),
            story="every listing arrives, half of them without a price (field_coverage)",
        ),
        DemoSource(
            "classifieds-eg",
            "Classifieds Egypt",
            "eg",
            ["feed"],
            slow_decline(healthy("classifieds-eg", 2400, rng, declared=False), rng),
            story=(
                "4% fewer records a day for nine days, each run within a quarter of the one before: below its"
                " normal from the second day (below_expected), a quarter under it on the last two (drop)"
            ),
        ),
    ]
    taken = {s.slug for s in stories}
    fillers: list[DemoSource] = []
    index = 0
    while len(stories) + len(fillers) < 60:
        kind = KINDS[index % len(KINDS)]
        region = REGIONS[(index // len(KINDS) + index) % len(REGIONS)]
        slug = f"{kind}-{region}-{index // (len(KINDS) * len(REGIONS)) + 1}" if index >= 60 else f"{kind}-{region}"
        index += 1
        if slug in taken:
            continue
        taken.add(slug)
        declared = rng.random() < 0.7
        fillers.append(
            DemoSource(
                slug,
                f"{kind.title()} {region.upper()}",
                region,
                [kind, "marketplace" if declared else "feed"],
                healthy(slug, rng.randint(400, 40_000), rng, declared=declared),
                hour=rng.randint(0, 5),
            )
        )
    return stories + fillers


def _pause_for_migration(source: Source) -> None:
    # The operator's pause (through the same service as the API) on top of the crawler's own marker.
    pausing.pause_source(
        source,
        origin=PauseOrigin.API,
        actor="user:ops-lead",
        reason="proxy migration: pool-ae moving to pool-eu; crawls resume after cut-over",
    )


def reports_of(demo: DemoSource, anchor: datetime, days: int = DAYS) -> Iterator[Report]:
    """Oldest first, as a crawler would have posted them."""
    for day in range(days - 1, demo.skip_last_days - 1, -1):
        for k in range(demo.runs_per_day):
            start = anchor - timedelta(days=day) + timedelta(hours=demo.hour + 6 * k)
            report = demo.maker(day, start)
            if report is not None:
                yield report


# Who owns what in the demo: a team per market, an owner per kind of site.
DEMO_TEAMS = {"ae": "gulf", "sa": "gulf", "eg": "mena", "uk": "europe", "de": "europe", "us": "americas"}
DEMO_OWNERS = {
    "cars": "amira",
    "homes": "jonas",
    "flats": "jonas",
    "jobs": "priya",
    "offers": "omar",
    "hotels": "lena",
    "parts": "lena",
    "phones": "omar",
    "boats": "jonas",
    "bikes": "priya",
    "pets": "amira",
    "links": "sam",
    "classifieds": "sam",
}


def ensure_source(demo: DemoSource, since: datetime) -> Source:
    """The source as if registered at `since` (its first report): its overdue clock starts there."""
    source, _ = Source.objects.get_or_create(slug=demo.slug)
    source.name = demo.name
    source.region = demo.region
    source.team = DEMO_TEAMS.get(demo.region, "")
    source.owner = DEMO_OWNERS.get(demo.slug.split("-", 1)[0], "")
    source.runbook_url = f"https://runbooks.example.com/crawlers/{demo.slug}"
    source.expected_interval = timedelta(days=1)
    source.grace = timedelta(hours=3)
    source.created_at = source.health_since = since
    source.save(
        update_fields=[
            "name",
            "region",
            "team",
            "owner",
            "runbook_url",
            "expected_interval",
            "grace",
            "created_at",
            "health_since",
        ]
    )
    source.tags.set([Tag.objects.get_or_create(name=name)[0] for name in demo.tags])
    return source


def post(token: ApiToken, report: Report, received_at: datetime) -> None:
    """Ingest as if the report arrived at `received_at`.

    Sixty days of history posted in a minute must arrive when each run ended, or every demo run
    would have arrived "just now" and nothing could ever look overdue.
    """
    ingest.ingest_report(token, ingest.parse_report(json.dumps(report).encode()), received_at=received_at)


def received_at(report: Report) -> datetime:
    return datetime.fromisoformat(report["finished_at"].replace("Z", "+00:00")) + timedelta(seconds=30)

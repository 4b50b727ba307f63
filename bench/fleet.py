"""Fleet backtest: a simulated fleet's reports through the API, judged beside the usual alternatives.

    python bench/fleet.py                                   # 72 sources x 84 days, seed 1, temporary SQLite
    python bench/fleet.py --sources 24 --days 56 --seed 7 --json var/bench/fleet.json
    python bench/fleet.py --database-url postgres://user:pass@127.0.0.1:5432/fleet_scratch

bench/fleet_sim.py simulates the fleet (ordinary variation and silent losses, with ground truth);
every report goes to POST /api/v1/runs in time order (all sources interleaved) through Django's test
client in-process, on a freshly migrated database (a temporary SQLite file unless --database-url names
one: slugs and run ids are new on every run, so a scratch database can be reused). The service alarms
when the verdict is `incomplete` (findings in observe mode do not count). bench/fleet_score.py judges
the same numbers with the peer methods and scores every method from week 3 on.

Prints the table, this service's false-alarm episodes by source kind, by trait and by rule (and how
many began before the source had a normal), its missed losses, and each method's catches per kind of loss. --json writes all of it with every run's record.
Nothing here asserts on figures: tests/test_fleet_backtest.py holds the bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fleet_score import PEERS, Alarms, Score, score  # noqa: E402
from bench.fleet_sim import LEARNING_DAYS, VARIANTS, Fleet, simulate  # noqa: E402

SERVICE = "this service"
SHORT = {
    SERVICE: "service",
    "exit-code watchdog (healthchecks-style)": "watchdog",
    "fixed minimum item count and field rules (careful Spidermon set-up)": "fixed",
    "z-score on the last 14 runs (Elementary-style volume and null-rate anomalies)": "zscore",
    "z-score by weekday (and hour), last 8 of the same slot": "zscore_weekday",
    "ideal judge (knows the simulator's parameters: the ceiling, not a peer)": "ideal",
    "the ideal judge held to the contract (5% margin, two weeks' wait)": "ideal_contract",
}


# -- through the API ----------------------------------------------------------------------------------


def configure_django(database_url: str) -> None:
    """Settings read the environment once, at import: call before anything imports Django's settings."""
    os.environ.setdefault("SECRET_KEY", "bench-" + os.urandom(24).hex())
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    # Thousands of reports a minute from one address and one token: the rate limits would refuse them.
    os.environ["API_RATE_PER_ADDRESS"] = "off"
    os.environ["API_RATE_PER_TOKEN"] = "off"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "completeness.settings")
    import django

    django.setup()


def create_token(name: str) -> str:
    """An all-sources token from the management command (its raw token is the last line it prints)."""
    from django.core.management import call_command

    out = StringIO()
    call_command("create_token", name, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def post_fleet(client, token: str, fleet: Fleet, progress=None) -> dict[tuple[str, int], dict]:
    """Post every report in the order of started_at; the service's answer per run (verdict, findings, expectation)."""
    answers = {}
    started = time.perf_counter()
    for number, run in enumerate(fleet.runs, start=1):
        response = client.post(
            "/api/v1/runs",
            data=json.dumps(run.report),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        if response.status_code != 201:
            raise RuntimeError(f"{run.report['run_id']}: {response.status_code} {response.content[:500]!r}")
        body = response.json()
        answers[run.key] = {
            "verdict": body["verdict"],
            "findings": [
                {key: finding.get(key) for key in ("rule", "mode", "message", "expected", "actual")}
                for finding in body["findings"]
            ],
            "expectation": body.get("expectation"),
        }
        if progress and number % 1000 == 0:
            rate = number / (time.perf_counter() - started)
            progress(f"  posted {number:,}/{len(fleet.runs):,} reports ({rate:,.0f}/s)")
    return answers


def service_alarms(answers: dict[tuple[str, int], dict]) -> Alarms:
    return {key: answer["verdict"] == "incomplete" for key, answer in answers.items()}


def enforced_rules(answer: dict) -> list[str]:
    return [finding["rule"] for finding in answer["findings"] if finding["mode"] == "enforce"]


# -- the backtest -------------------------------------------------------------------------------------


@dataclass
class Backtest:
    fleet: Fleet
    answers: dict[tuple[str, int], dict]
    alarms: dict[str, Alarms]  # method -> alarms
    scores: dict[str, Score]
    breakdown: dict = field(default_factory=dict)  # this service's false alarms and misses

    @property
    def service(self) -> Score:
        return self.scores[SERVICE]


def run_backtest(client, token: str, fleet: Fleet, progress=None) -> Backtest:
    """The fleet through the API, then every method scored on the same runs. The bench and the CI test share this."""
    answers = post_fleet(client, token, fleet, progress)
    return evaluate(fleet, answers)


def evaluate(fleet: Fleet, answers: dict[tuple[str, int], dict]) -> Backtest:
    alarms = {SERVICE: service_alarms(answers)}
    alarms.update({name: method(fleet) for name, method in PEERS.items()})
    scores = {name: score(fleet, flags) for name, flags in alarms.items()}
    backtest = Backtest(fleet=fleet, answers=answers, alarms=alarms, scores=scores)
    backtest.breakdown = breakdown(backtest)
    return backtest


def breakdown(backtest: Backtest) -> dict:
    """Where this service's false alarms come from, and which losses it misses."""
    fleet, answers, service = backtest.fleet, backtest.answers, backtest.service
    specs = {spec.slug: spec for spec in fleet.specs}
    by_kind, by_trait, by_rule, runs_by_rule = Counter(), Counter(), Counter(), Counter()
    before_normal = 0
    for episode in service.episodes:
        spec = specs[episode[0][0]]
        before_normal += answers[episode[0]].get("expectation") is None
        by_kind[spec.kind] += 1
        for trait in spec.traits or ["(none)"]:
            by_trait[trait] += 1
        rules = set()
        for key in episode:
            fired = enforced_rules(answers[key])
            rules.update(fired)
            runs_by_rule.update(fired)
        by_rule.update(rules)
    missed, missed_first, total, already = Counter(), Counter(), Counter(), Counter()
    runs_of = fleet.by_source()
    alarms = backtest.alarms[SERVICE]
    for loss in fleet.losses:
        if loss.id not in service.by_loss:
            continue
        got, first = service.by_loss[loss.id]
        total[loss.kind] += 1
        missed[loss.kind] += not got
        missed_first[loss.kind] += not first
        # Caught, but the source was failing already on the run before: a false alarm that lasted, not a catch.
        if got and loss.runs[0] > 0 and alarms[runs_of[loss.slug][loss.runs[0] - 1].key]:
            already[loss.kind] += 1
    return {
        "episodes_by_kind": dict(by_kind.most_common()),
        "episodes_by_trait": dict(by_trait.most_common()),
        "episodes_by_rule": dict(by_rule.most_common()),
        "episodes_before_normal": before_normal,
        "false_runs_by_rule": dict(runs_by_rule.most_common()),
        "missed_by_loss_kind": {
            kind: {"losses": total[kind], "missed": missed[kind], "missed_on_first_run": missed_first[kind]}
            for kind in sorted(total)
        },
        "caught_while_already_alarmed": dict(sorted(already.items())),
    }


def loss_kind_table(backtest: Backtest) -> dict[str, dict[str, tuple[int, int, int]]]:
    """Per kind of loss, per method: (caught, caught on the first run, losses)."""
    kinds = sorted({loss.kind for loss in backtest.fleet.losses})
    table = {}
    for kind in kinds:
        ids = [loss.id for loss in backtest.fleet.losses if loss.kind == kind]
        row = {}
        for name, result in backtest.scores.items():
            outcomes = [result.by_loss[i] for i in ids if i in result.by_loss]
            row[name] = (sum(got for got, _ in outcomes), sum(first for _, first in outcomes), len(outcomes))
        table[kind] = row
    return table


# -- printing -----------------------------------------------------------------------------------------


def markdown(backtest: Backtest) -> str:
    lines = [
        "| method | false-alarm episodes | false-alarm runs per 1,000 healthy | losses caught | on their first run |",
        "|---|---|---|---|---|",
    ]
    for name, result in backtest.scores.items():
        lines.append(
            f"| {name} | {len(result.episodes)} | {result.per_thousand:.0f} | "
            f"{result.caught}/{result.losses} | {result.first} |"
        )
    return "\n".join(lines)


def markdown_loss_kinds(backtest: Backtest) -> str:
    names = list(backtest.scores)
    lines = [
        "| loss kind | " + " | ".join(SHORT.get(name, name) for name in names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for kind, row in loss_kind_table(backtest).items():
        total = next(iter(row.values()))[2]
        cells = [f"{got}/{n} ({first})" for got, first, n in row.values()]
        lines.append(f"| {kind} ({total}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def describe(backtest: Backtest) -> str:
    fleet, service, parts = backtest.fleet, backtest.service, backtest.breakdown
    healthy = sum(run.loss is None for run in fleet.runs if run.day >= LEARNING_DAYS)
    out = [
        f"{len(fleet.specs)} sources x {fleet.days} days from {fleet.first_day:%Y-%m-%d} (seed {fleet.seed}"
        f"{'' if fleet.variant == 'default' else ', variant ' + fleet.variant}): "
        f"{len(fleet.runs):,} runs, {len(fleet.losses)} losses; scored from day {LEARNING_DAYS + 1}: "
        f"{healthy:,} healthy runs, {service.losses} losses",
        "",
        markdown(backtest),
        "",
        "Losses caught per kind, caught/losses (on their first run):",
        "",
        markdown_loss_kinds(backtest),
        "",
        f"This service's {len(service.episodes)} false-alarm episodes ({service.false_runs} runs):",
        "  by source kind:  " + _counts(parts["episodes_by_kind"]),
        "  by trait:        " + _counts(parts["episodes_by_trait"]) + "  (a source may have several)",
        "  by rule:         " + _counts(parts["episodes_by_rule"]) + "  (an episode counts under each rule it had)",
        "  runs by rule:    " + _counts(parts["false_runs_by_rule"]),
        f"  {parts['episodes_before_normal']} began on a run judged before its source had a normal (the fixed rules "
        "against the last good snapshot, as the contract has it until two weeks of runs)",
        "Losses it missed (missed / losses, missed on the first run):",
        "  "
        + ", ".join(
            f"{kind} {row['missed']}/{row['losses']} ({row['missed_on_first_run']})"
            for kind, row in parts["missed_by_loss_kind"].items()
        ),
        f"Of its catches, {sum(parts['caught_while_already_alarmed'].values())} came while the source was already "
        "alarmed on the run before the loss: " + _counts(parts["caught_while_already_alarmed"]),
    ]
    return "\n".join(out)


def _counts(counts: dict) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items()) or "none"


def as_json(backtest: Backtest, meta: dict) -> dict:
    fleet = backtest.fleet
    loss_of = {loss.id: loss for loss in fleet.losses}
    runs = []
    for run in fleet.runs:
        report = run.report
        runs.append(
            {
                "source": run.slug,
                "kind": run.kind,
                "index": run.index,
                "day": run.day,
                "slot": run.slot,
                "weekday": run.weekday,
                "started_at": report["started_at"],
                "scored": run.day >= LEARNING_DAYS,
                "loss": run.loss,
                "loss_kind": loss_of[run.loss].kind if run.loss else None,
                "collected": report["collected"],
                "declared_total": report.get("declared_total"),
                "removed": report.get("removed"),
                "fields": report.get("fields"),
                "service": backtest.answers[run.key],
                "alarms": {SHORT.get(name, name): flags[run.key] for name, flags in backtest.alarms.items()},
            }
        )
    return {
        **meta,
        "methods": {
            name: {"short": SHORT.get(name, name), **result.as_dict()} for name, result in backtest.scores.items()
        },
        "service_breakdown": backtest.breakdown,
        "loss_kinds": {
            kind: {
                SHORT.get(name, name): {"caught": got, "first": first, "losses": n}
                for name, (got, first, n) in row.items()
            }
            for kind, row in loss_kind_table(backtest).items()
        },
        "sources": [{**asdict(spec), "traits": spec.traits} for spec in fleet.specs],
        "losses": [
            {
                **asdict(loss),
                "caught": {
                    SHORT.get(name, name): result.by_loss.get(loss.id) for name, result in backtest.scores.items()
                },
            }
            for loss in fleet.losses
        ],
        "runs": runs,
    }


# -- main ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=72)
    parser.add_argument("--days", type=int, default=84)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--losses", type=int, default=None, help="silent losses to inject (default about one a source)")
    parser.add_argument(
        "--variant",
        choices=sorted(VARIANTS),
        default="default",
        help="parameter ranges: 'wide' is a fleet the rules were not tuned on (bench/fleet_sim.py, VARIANTS)",
    )
    parser.add_argument(
        "--database-url", default=None, help="a scratch database to migrate and fill (default: a temporary SQLite file)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write every figure and run record here")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args()

    say = (lambda text: None) if args.quiet else (lambda text: print(text, flush=True))
    scratch = None
    database_url = args.database_url
    if database_url is None:
        scratch = tempfile.mkdtemp(prefix="fleet-")
        database_url = f"sqlite:///{scratch}/fleet.sqlite3"
    try:
        started = time.perf_counter()
        configure_django(database_url)
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client

        call_command("migrate", verbosity=0)
        migrated = time.perf_counter()
        tag = f"fleet{args.seed}-{uuid.uuid4().hex[:6]}"
        fleet = simulate(args.sources, args.days, args.seed, tag=tag, losses=args.losses, variant=args.variant)
        say(
            f"{connection.vendor}: migrated in {migrated - started:.1f} s; posting {len(fleet.runs):,} reports "
            f"of {len(fleet.specs)} sources ({tag})"
        )
        token = create_token(f"{tag}-bench")
        posting = time.perf_counter()
        answers = post_fleet(Client(HTTP_HOST="127.0.0.1"), token, fleet, say)
        posted = time.perf_counter()
        backtest = evaluate(fleet, answers)
        done = time.perf_counter()
        print()
        print(describe(backtest))
        print(
            f"\nposted {len(fleet.runs):,} reports in {posted - posting:.1f} s "
            f"({len(fleet.runs) / (posted - posting):,.0f}/s), peers and scoring {done - posted:.1f} s; "
            f"whole bench {done - started:.1f} s on {connection.vendor}, {os.cpu_count()} CPUs, "
            f"load {os.getloadavg()[0]:.1f}"
        )
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            meta = {
                "sources": args.sources,
                "days": args.days,
                "seed": args.seed,
                "tag": tag,
                "database": connection.vendor,
                "first_day": fleet.first_day.isoformat(),
                "post_seconds": round(posted - posting, 1),
                "score_from_day": LEARNING_DAYS,
            }
            args.json.write_text(json.dumps(as_json(backtest, meta), default=str))
            print(f"wrote {args.json}")
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

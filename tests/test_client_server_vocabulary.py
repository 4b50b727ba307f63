"""The crawler kit (client/) and the service keep their own copies of the report's words: the request
classes, which of them count as bad, the proxy states, reasons and stages, snapshot actions, breaker
event kinds and crawler verdicts, and the slug pattern. The kit cannot import them from the service
(it installs without Django or the server's packages), so this test holds the copies equal: a word
added on one side only would be refused by the service (422) or never sent by the kit."""

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import get_args

import pytest

from completeness import report
from completeness_client import classes, proxies, validation
from sources.ingest.errors import ReportInvalid
from sources.ingest.ingest import parse_report
from sources.pages.selectors import proxies as proxy_pages
from tests.test_ingest_api import FULL

# The report's optional objects, which the service reads as absent when they are null.
NULLABLE_OBJECTS = ("requests", "pages", "delivery", "snapshot", "failure_window", "pacing", "fields")


def _literal(annotation) -> tuple[str, ...]:
    """The words of a Literal, also inside `Literal[...] | None`."""
    args = get_args(annotation)
    if args and all(isinstance(arg, str) for arg in args):
        return args
    return tuple(word for arg in args for word in _literal(arg))


def _drift(client: tuple[str, ...] | frozenset[str], server: tuple[str, ...] | frozenset[str]) -> str:
    """What one side has that the other lacks, as a sentence; empty when the two are equal."""
    only_client, only_server = sorted(set(client) - set(server)), sorted(set(server) - set(client))
    parts = [f"only in the kit: {only_client}"] * bool(only_client) + [f"only in the service: {only_server}"] * bool(
        only_server
    )
    return "; ".join(parts)


COPIES = {
    "request classes": (classes.REQUEST_CLASSES, get_args(report.RequestClass)),
    "default bad classes": (classes.DEFAULT_BAD_CLASSES, report.DEFAULT_BAD_CLASSES),
    "proxy states": (tuple(state.value for state in proxies.ProxyState), get_args(report.ProxyState)),
    "proxy states (validation)": (validation.PROXY_STATES, get_args(report.ProxyState)),
    "proxy reasons": (proxies.TRANSITION_REASONS, get_args(report.ProxyReason)),
    "proxy stages": (proxies.STAGES, get_args(report.ProxyStage)),
    "snapshot actions": (validation.SNAPSHOT_ACTIONS, get_args(report.SnapshotAction)),
    "breaker event kinds": (validation.EVENT_KINDS, get_args(report.BreakerEventKind)),
    "crawler verdicts": (
        validation.CRAWLER_VERDICTS,
        _literal(report.RunReport.model_fields["crawler_verdict"].annotation),
    ),
}


@pytest.mark.parametrize("name", COPIES)
def test_the_kit_and_the_service_use_the_same_words(name):
    client, server = COPIES[name]
    assert server, f"no {name} found on the service's side: the test reads the wrong name"
    assert not _drift(client, server), f"{name}: {_drift(client, server)}"


def test_the_kits_slug_pattern_is_the_services():
    assert validation.SLUG.pattern == report.SLUG_PATTERN


def test_every_reason_the_kit_sends_is_one_the_service_takes_with_a_stage_it_knows():
    reasons, stages = set(get_args(report.ProxyReason)), set(get_args(report.ProxyStage))
    for table in (proxies.TEMPORARY_REASONS, proxies.PERMANENT_REASONS):
        assert set(table) <= reasons, sorted(set(table) - reasons)
        assert set(table.values()) <= stages, sorted(set(table.values()) - stages)


def test_a_proxy_the_kit_excludes_for_good_is_not_flagged_as_lost_by_mistake_on_the_proxies_page():
    # The page also takes auth_rejected as meant (credentials need a human), which the kit only cools
    # on: the page's set may be larger, never smaller (docs/dashboard.md, Proxies).
    assert set(proxies.PERMANENT_REASONS) <= proxy_pages.PERMANENT_REASONS
    assert proxy_pages.PERMANENT_REASONS <= set(get_args(report.ProxyReason))


def test_a_word_added_on_one_side_only_is_named():
    kit = (*classes.REQUEST_CLASSES, "http_3xx")
    service = tuple(word for word in get_args(report.RequestClass) if word != "timeout")
    assert _drift(kit, service) == "only in the kit: ['http_3xx', 'timeout']"
    assert _drift(service, kit) == "only in the service: ['http_3xx', 'timeout']"
    assert _drift(classes.REQUEST_CLASSES, get_args(report.RequestClass)) == ""


def test_the_kit_imports_neither_django_nor_the_service():
    # In a fresh interpreter: this test process has both loaded already.
    code = (
        "import sys, completeness_client, completeness_client.cli, completeness_client.report\n"
        "from completeness_client import classes, proxies, validation, poster, breaker, snapshot\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'completeness', 'sources'))\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def _max_length(annotation, metadata=()) -> int | None:
    """A string's max_length, from a field's metadata or inside `Annotated[str, ...] | None`."""
    for item in (*metadata, *getattr(annotation, "__metadata__", ())):
        if getattr(item, "max_length", None):
            return item.max_length
    return next((found for arg in get_args(annotation) if (found := _max_length(arg))), None)


def test_the_kit_cuts_texts_to_the_services_lengths():
    # The kit cuts a batch's name and error and a pause reason to these (an exception's message is
    # any length); a longer one has the whole report refused (422), and the run is never judged.
    batch, run = report.FailedBatch.model_fields, report.RunReport.model_fields
    assert validation.MAX_BATCH_NAME_LENGTH == _max_length(batch["name"].annotation, batch["name"].metadata)
    assert validation.MAX_TEXT_LENGTH == _max_length(batch["error"].annotation, batch["error"].metadata)
    assert validation.MAX_TEXT_LENGTH == _max_length(run["pause_reason"].annotation, run["pause_reason"].metadata)


def test_the_kit_keeps_a_snapshot_on_the_services_mass_removal_and_min_completeness():
    from completeness.verdicts import RuleSettings
    from completeness.verdicts.rules import MASS_REMOVAL_SHARE
    from completeness_client import snapshot

    # A share on one side only: the kit would publish a run the service calls incomplete, or keep one back.
    assert snapshot.MASS_REMOVAL_SHARE == MASS_REMOVAL_SHARE
    assert snapshot.DEFAULT_MIN_COMPLETENESS == RuleSettings().min_completeness


def _service_takes(body: dict) -> bool:
    try:
        parse_report(json.dumps(body).encode())
    except ReportInvalid:
        return False
    return True


def _with(**changes) -> dict:
    """FULL (a valid report with every part) with its top-level fields changed; None is sent as null."""
    return {**FULL, **changes}


def _ahead(**delta) -> str:
    """An instant that far ahead of the real clock, which both sides check against."""
    return (datetime.now(UTC) + timedelta(**delta)).isoformat()


def _window(**changes) -> dict:
    return _with(failure_window={**FULL["failure_window"], **changes})


# Reports the service takes: the kit's validator (completeness-report, completeness-backfill and the
# poster check a report with it before sending) must take them too. It refused each of these, so a
# hand-written report the contract allows exited 65 at the CLI and a backfill holding one was refused
# whole, though the service would have judged it.
SERVICE_TAKES = {
    **{f"{name}: null": _with(**{name: None}) for name in NULLABLE_OBJECTS},
    "pause_reason: null": _with(pause_reason=None),
    "requests.total: null": _with(requests={"total": None, "by_class": {"ok": 3}}),
    "failed batch of a name only": _with(failed_batches=[{"name": "insert-3"}]),
    "failed batch without an error": _with(failed_batches=[{"name": "insert-3", "rows": 2}]),
    "failure window settings null": _window(size=None, threshold=None, min_samples=None, bad_classes=None),
    "breaker event counts null": _window(
        events=[{"at": "2026-09-15T03:10:00Z", "seq": 1, "kind": "tripped", "ratio": None, "samples": None}]
    ),
    "a lower-case z": _with(started_at="2026-09-15t03:00:00z"),
    "a space for the T, no seconds": _with(started_at="2026-09-15 03:00Z"),
    "an underscore for the T": _with(started_at="2026-09-15_03:00:00Z"),
    "nine digits after a comma": _with(started_at="2026-09-15T03:00:00,123456789Z"),
    "an offset without its colon": _with(started_at="2026-09-15T05:00:00+0200"),
    "a run finishing 23 hours ahead": _with(finished_at=_ahead(hours=23)),
}


@pytest.mark.parametrize("name", SERVICE_TAKES)
def test_the_kit_takes_every_report_the_service_takes(name):
    body = SERVICE_TAKES[name]
    assert _service_takes(body), f"{name}: the service refuses this report; the case is wrong"
    assert validation.validate_report(body) == [], name


@pytest.mark.parametrize(
    "name, body",
    [
        ("meta: null", _with(meta=None)),
        ("failed batch error: null", _with(failed_batches=[{"name": "insert-3", "error": None}])),
        ("a time without its zone", _with(started_at="2026-09-15T03:00:00")),
    ],
)
def test_beside_them_what_neither_takes(name, body):
    # The healthy neighbours' bad twins: null where the service wants an object or text, no zone.
    assert not _service_takes(body), name
    assert validation.validate_report(body) != [], name


_TRANSITION = FULL["proxy_transitions"][0]
# Reports the service refuses: the kit's validator refuses them too, so that a crawler hears of the
# mistake from RunReport.build() with the path to fix, not from a 422 after its run (a report the kit
# built with a 201-character proxy id, or a meta value of 1,001, was refused and never judged).
# Instants: Python's fromisoformat reads more shapes than the service's RFC 3339 does, and the kit
# checks "at most a day ahead" against its own machine's clock, where the crawler's instants come from.
SERVICE_REFUSES = {
    "an offset without minutes": _with(finished_at="2026-09-15T07:00:00+04"),
    "an offset with seconds": _with(finished_at="2026-09-15T08:00:00+04:00:30"),
    "the basic format": _with(finished_at="20260915T040000Z"),
    "a week date": _with(finished_at="2026-W38-2T04:00:00Z"),
    "an hour without minutes": _with(finished_at="2026-09-15T04Z"),
    "a dot without digits": _with(finished_at="2026-09-15T04:00:00.Z"),
    "a slash for the T": _with(finished_at="2026-09-15/04:00:00Z"),
    "a run finishing 25 hours ahead": _with(finished_at=_ahead(hours=25)),
    "seconds since 1970 as text": _with(finished_at="1789000000"),
    "a compact date and time": _with(finished_at="20260915040000"),
    "seconds since 1970 as a number": _with(finished_at=1789000000),
    "an empty meta name": _with(meta={"": 1}),
    "a meta value of 1,001 characters": _with(meta={"note": "v" * 1001}),
    "a counter name of 201 characters": _with(counters={"c" * 201: 1}),
    "an empty outcome name": _with(outcomes={"": 1}),
    "an empty delivery error name": _with(delivery={"attempted": 1, "delivered": 1, "errors": {"": 1}}),
    "a lost URL of 2,001 characters": _with(pages={"fetched": 1, "lost": 1, "lost_urls": ["u" * 2001]}),
    "10,001 lost URLs": _with(pages={"fetched": 1, "lost": 10_001, "lost_urls": ["u"] * 10_001}),
    "a run in 1999": _with(started_at="1999-12-31T23:00:00Z", finished_at="1999-12-31T23:30:00Z"),
    "a transition without its stage": _with(
        proxy_transitions=[{key: value for key, value in _TRANSITION.items() if key != "stage"}]
    ),
    "a proxy id of 201 characters": _with(proxy_transitions=[{**_TRANSITION, "proxy": "p" * 201}]),
    "a window of size 0": _window(size=0),
    "10,001 breaker events": _window(events=[FULL["failure_window"]["events"][0]] * 10_001),
    "10,001 failed batches": _with(failed_batches=[{"name": "insert"}] * 10_001),
    "a run_id with a zero-width space": _with(run_id="run\u200b1"),
    "a batch name with a direction override": _with(failed_batches=[{"name": "insert\u202e"}]),
    "a field name with a soft hyphen": _with(fields={"pri\u00adce": 1}),
    "request classes over their total": _with(requests={"total": 1, "by_class": {"ok": 2}}),
    "a NUL in a meta value": _with(meta={"host": "box\x001"}),
    "an exit code past 2**31 - 1": _with(exit_code=2**31),
    "a count past 2**31 - 1": _with(collected=2**31),
    "a misspelt page count": _with(pages={"fetched": 1, "lsot": 1}),
    "a misspelt batch name": _with(failed_batches=[{"name": "insert", "nmae": "insert"}]),
    "a misspelt breaker event field": _window(events=[{**FULL["failure_window"]["events"][1], "snet": 3}]),
    "a misspelt transition field": _with(proxy_transitions=[{**_TRANSITION, "form": "eligible"}]),
    "a key a snapshot does not take": _with(snapshot={"action": "none", "when": "now"}),
}


@pytest.mark.parametrize("name", SERVICE_REFUSES)
def test_the_kit_refuses_what_the_service_refuses(name):
    body = SERVICE_REFUSES[name]
    assert not _service_takes(body), f"{name}: the service takes this report; the case is wrong"
    assert validation.validate_report(body) != [], name


def test_the_kit_knows_the_keys_of_each_of_the_services_objects():
    models = {
        "requests": report.Requests,
        "pages": report.Pages,
        "failed_batches[]": report.FailedBatch,
        "delivery": report.Delivery,
        "snapshot": report.Snapshot,
        "failure_window": report.FailureWindow,
        "failure_window.events[]": report.BreakerEvent,
        "proxy_transitions[]": report.ProxyTransition,
        "pacing": report.Pacing,
    }
    assert set(validation.OBJECT_KEYS) == set(models)
    for kind, model in models.items():
        keys = tuple(field.alias or name for name, field in model.model_fields.items())
        assert not _drift(validation.OBJECT_KEYS[kind], keys), f"{kind}: {_drift(validation.OBJECT_KEYS[kind], keys)}"


def test_the_kits_limits_are_the_services():
    assert validation.MAX_COUNT == report.MAX_COUNT
    assert validation.INVISIBLE_CATEGORIES == report.INVISIBLE_CATEGORIES
    assert validation.EARLIEST == report.EARLIEST_RUN

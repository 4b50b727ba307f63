"""sources.ingest.rows, the ingest path's plain-SQL reads and writes, must agree with the ORM on each database."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from sources.ingest import rows
from sources.models import ProxyTransition, Run, Source

AT = datetime(2026, 9, 1, 3, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


def a_source(**fields) -> Source:
    return Source.objects.create(
        slug="rows",
        name="Ünïcode — name",
        rule_modes={"drop": "observe"},
        expected_interval=timedelta(hours=6),
        paused_since=AT,
        **fields,
    )


def a_run(source: Source, run_id: str = "r1", **fields) -> Run:
    values = dict(
        source=source,
        run_id=run_id,
        report_digest="d" * 64,
        received_at=AT,
        started_at=AT,
        finished_at=AT + timedelta(hours=1),
        collected=9000,
        declared_total=9100,
        verdict="incomplete",
        requests_by_class={"ok": 9000, "http_5xx": 12},
        findings=[{"rule": "declared_total", "expected": 9100}],
        raw={"source": "rows", "nested": {"list": [1, 2.5, None, "ß"]}},
        completeness=0.989,
        silent=True,
    )
    return Run(**{**values, **fields})


def field_values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_fetch_one_reads_what_the_orm_reads():
    source = a_source()
    fetched, extra = rows.fetch_one(Source, "WHERE slug = %s", ["rows"], extra=("1 + 1",))
    assert field_values(fetched) == field_values(Source.objects.get(pk=source.pk))
    assert extra == (2,)
    assert not fetched._state.adding


def test_fetch_one_with_some_fields_defers_the_rest():
    a_source()
    fetched, _ = rows.fetch_one(Source, "WHERE slug = %s", ["rows"], fields=("id", "slug", "expected_interval"))
    assert fetched.expected_interval == timedelta(hours=6)
    assert fetched.get_deferred_fields() >= {"name", "rule_modes"}


def test_fetch_one_finds_nothing():
    assert rows.fetch_one(Source, "WHERE slug = %s", ["absent"]) is None


def test_insert_stores_every_field_as_the_orm_would():
    source = a_source()
    run = rows.insert(a_run(source))
    assert run.pk is not None and not run._state.adding
    orm = Run.objects.create(**{**field_values(a_run(source, "r2")), "id": None})
    stored, twin = field_values(Run.objects.get(pk=run.pk)), field_values(Run.objects.get(pk=orm.pk))
    assert {k: v for k, v in stored.items() if k not in ("id", "run_id")} == {
        k: v for k, v in twin.items() if k not in ("id", "run_id")
    }
    assert stored["raw"] == {"source": "rows", "nested": {"list": [1, 2.5, None, "ß"]}}


def test_insert_leaves_out_the_nulls_a_column_holds_anyway_so_psycopg_keeps_its_parse():
    # psycopg parses a statement of more than 50 parameters anew every time (its query cache's
    # MAX_CACHED_STATEMENT_PARAMS); a run's row has more columns than that.
    source = a_source()
    statements = []

    def spy(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        run = rows.insert(a_run(source, written=None, records_lost=None, expected=None))
    ((sql, params),) = statements
    assert len(Run._meta.concrete_fields) - 1 > 50 and len(params) <= 50
    assert '"written"' not in sql and '"expected"' not in sql and None not in params
    stored = Run.objects.get(pk=run.pk)
    assert stored.written is None and stored.expected is None and stored.collected == 9000
    # A value that is not NULL is written.
    rows.insert(a_run(source, "r2", written=8990))
    assert Run.objects.get(run_id="r2").written == 8990


def test_update_writes_only_the_named_fields():
    source = a_source()
    source.health, source.name = "failing", "not saved"
    rows.update(source, ("health",))
    stored = Source.objects.get(pk=source.pk)
    assert (stored.health, stored.name) == ("failing", "Ünïcode — name")


def test_insert_many_writes_rows_as_given():
    source = a_source()
    run = rows.insert(a_run(source))
    stamp = Run._meta.get_field("started_at").get_db_prep_save
    rows.insert_many(
        ProxyTransition,
        ("source_id", "run_id", "proxy", "at", "from_state", "to_state", "reason", "stage", "until"),
        [
            (
                source.pk,
                run.pk,
                "pool/exit-ü",
                stamp(AT, connection),
                "eligible",
                "cooling",
                "slow_body",
                "connect",
                stamp(AT + timedelta(minutes=5), connection),
            ),
            (
                source.pk,
                run.pk,
                "pool/exit-2",
                stamp(AT, connection),
                "cooling",
                "eligible",
                "probe_succeeded",
                "probe",
                None,
            ),
        ],
    )
    stored = list(ProxyTransition.objects.order_by("proxy").values_list("proxy", "at", "reason", "until"))
    assert stored == [
        ("pool/exit-2", AT, "probe_succeeded", None),
        ("pool/exit-ü", AT, "slow_body", AT + timedelta(minutes=5)),
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
def test_statements_a_connection_repeats_are_prepared():
    # Django turns psycopg's preparing off by default; planning each statement anew cost the
    # database more than running the ingest path's statements (settings: DB_PREPARE_THRESHOLD).
    a_source()
    for _ in range(3):
        rows.fetch_one(Source, "WHERE slug = %s", ["rows"])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%FROM "sources_source" WHERE slug%'],
        )
        assert cursor.fetchone()[0] == 1

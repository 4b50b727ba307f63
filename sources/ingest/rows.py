"""Model rows read and written with statements built once per process, for the ingest path.

The ORM compiles each statement anew on every call. For the handful of statements every report runs
(token, source lock, run insert, source update) the compilation cost more CPU than the database spent
running them, and CPU is what bounds ingest. These helpers keep the ORM's semantics where they matter:
values go through each field's get_db_prep_save (JSON, datetimes and durations adapted per database),
values read come back through the same converters the ORM applies, and instances come from
Model.from_db, so an instance read here behaves as one read by a queryset (deferred fields included).
Anything beyond a single table and a where clause belongs to the ORM.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.operations import BaseDatabaseOperations

M = TypeVar("M", bound=models.Model)
# A column's position in the row, the column, and the converters its value goes through.
Converters = tuple[int, Any, list[Any]]


def _connection() -> BaseDatabaseWrapper:
    # The real wrapper, looked up once: `django.db.connection` is a proxy that looks the thread's
    # connection up again on every attribute, which the ORM's value adapters do many times a row.
    return connections[DEFAULT_DB_ALIAS]


def _fields(model: type[models.Model], names: tuple[str, ...] | None) -> list[models.Field[Any, Any]]:
    concrete = model._meta.concrete_fields
    if names is None:
        return list(concrete)
    return [_column(model, name) for name in names]


def _column_name(field: models.Field[Any, Any] | None) -> str:
    assert field is not None and field.column is not None, f"{field} has no column"
    return field.column


def _column(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field), f"{name} is the reverse side of a relation, not a column"
    return field


# Built statements are cached per connection, keyed by its operations object: the converters kept
# with them are bound to it. The bound matters only to a server that opens a connection per thread.
@lru_cache(maxsize=512)
def _select(
    ops: BaseDatabaseOperations,
    model: type[models.Model],
    names: tuple[str, ...] | None,
    extra: tuple[str, ...],
    tail: str,
) -> tuple[str, list[str], list[Converters]]:
    quote = ops.quote_name
    table = quote(model._meta.db_table)
    fields = _fields(model, names)
    columns = [f"{table}.{quote(_column_name(f))}" for f in fields] + list(extra)
    converters: list[Converters] = []
    for i, field in enumerate(fields):
        col = field.get_col(model._meta.db_table)
        found = ops.get_db_converters(col) + col.get_db_converters(ops.connection)
        if found:
            converters.append((i, col, found))
    sql = f"SELECT {', '.join(columns)} FROM {table} {tail}"
    return sql, [f.attname for f in fields], converters


def fetch_one(
    model: type[M],
    tail: str,
    params: list[Any],
    *,
    fields: tuple[str, ...] | None = None,
    extra: tuple[str, ...] = (),
) -> tuple[M, tuple[Any, ...]] | None:
    """The first row of `SELECT <fields>, <extra> FROM <model's table> <tail>` as an instance, with
    the extra columns' values beside it; None when nothing matches. `tail` is trusted SQL (where,
    limit, lock), `params` its parameters."""
    connection = _connection()
    sql, attnames, converters = _select(connection.ops, model, fields, extra, tail)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    values = _converted(list(row[: len(attnames)]), converters, connection)
    return model.from_db(connection.alias, attnames, values), tuple(row[len(attnames) :])


def fetch_values(
    model: type[models.Model],
    tail: str,
    params: list[Any],
    *,
    fields: tuple[str, ...],
    extra: tuple[str, ...] = (),
) -> list[tuple[Any, ...]]:
    """Every row of `SELECT <fields>, <extra> FROM <model's table> <tail>` as plain values, the fields'
    through their converters and the extra columns as the database gave them: a values_list without
    its compilation, for a window of rows read on the report path."""
    connection = _connection()
    sql, attnames, converters = _select(connection.ops, model, fields, extra, tail)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not converters:
        return [tuple(row) for row in rows]
    return [tuple(_converted(list(row), converters, connection)) for row in rows]


def _converted(values: list[Any], converters: list[Converters], connection: BaseDatabaseWrapper) -> list[Any]:
    """A row's values read back through the converters the ORM applies (in place)."""
    for i, col, found in converters:
        for convert in found:
            values[i] = convert(values[i], col, connection)
    return values


def datetime_param(value: datetime) -> Any:
    """A datetime as the database compares it with a stored one (naive UTC text on SQLite)."""
    return _connection().ops.adapt_datetimefield_value(value)


@lru_cache(maxsize=512)
def _insertable(model: type[models.Model]) -> list[tuple[models.Field[Any, Any], bool]]:
    """Every concrete field but the auto primary key, and whether a NULL in it may be left out: a
    nullable column without a database default is NULL when the INSERT does not name it."""
    pk = model._meta.pk
    assert pk is not None
    return [(f, f.null and f.db_default is models.NOT_PROVIDED) for f in model._meta.concrete_fields if f is not pk]


@lru_cache(maxsize=512)
def _insert(ops: BaseDatabaseOperations, model: type[models.Model], columns: tuple[str, ...]) -> str:
    quote = ops.quote_name
    pk = model._meta.pk
    assert pk is not None
    return "INSERT INTO {} ({}) VALUES ({}) RETURNING {}".format(
        quote(model._meta.db_table),
        ", ".join(quote(c) for c in columns),
        ", ".join(["%s"] * len(columns)),
        quote(_column_name(pk)),
    )


def insert(obj: M) -> M:
    """INSERT the instance (every concrete field but the auto primary key) and set its pk. No
    signals: none of the ingest path's models has receivers.

    NULLs that the column would hold anyway are left out of the statement: psycopg caches the parsing
    of a statement only up to 50 parameters (MAX_CACHED_STATEMENT_PARAMS), and a run's row has more
    columns than that; parsed anew on every report, its insert cost 0.2 ms of CPU more. Most of a
    run's optional columns are NULL, and the few statements their combinations make are cached."""
    connection = _connection()
    columns, params = [], []
    for field, may_omit in _insertable(type(obj)):
        value = field.get_db_prep_save(field.pre_save(obj, add=True), connection)
        if value is None and may_omit:
            continue
        columns.append(_column_name(field))
        params.append(value)
    sql = _insert(connection.ops, type(obj), tuple(columns))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        obj.pk = cursor.fetchone()[0]
    obj._state.adding = False
    obj._state.db = connection.alias
    return obj


@lru_cache(maxsize=512)
def _update(
    ops: BaseDatabaseOperations, model: type[models.Model], names: tuple[str, ...]
) -> tuple[str, list[models.Field[Any, Any]]]:
    quote = ops.quote_name
    fields = _fields(model, names)
    sql = "UPDATE {} SET {} WHERE {} = %s".format(
        quote(model._meta.db_table),
        ", ".join(f"{quote(_column_name(f))} = %s" for f in fields),
        quote(_column_name(model._meta.pk)),
    )
    return sql, fields


def update(obj: models.Model, names: tuple[str, ...]) -> None:
    """UPDATE the named fields of the instance's row, as save(update_fields=...) would."""
    connection = _connection()
    sql, fields = _update(connection.ops, type(obj), names)
    params = [field.get_db_prep_save(field.pre_save(obj, add=False), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, obj.pk])


@lru_cache(maxsize=512)
def _insert_many(ops: BaseDatabaseOperations, model: type[models.Model], columns: tuple[str, ...]) -> str:
    quote = ops.quote_name
    table, names = quote(model._meta.db_table), ", ".join(quote(c) for c in columns)
    if ops.connection.vendor != "postgresql":
        return f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"
    types = [_db_type(_column(model, c), ops.connection).split("(")[0] for c in columns]
    values = ", ".join(f"(row->>{i})::{db_type}" for i, db_type in enumerate(types))
    return f"INSERT INTO {table} ({names}) SELECT {values} FROM jsonb_array_elements(%s::jsonb) AS row"


def _db_type(field: models.Field[Any, Any], connection: Any) -> str:
    db_type = field.db_type(connection)
    assert db_type is not None, f"{field.name} has no column"
    return db_type


def _json_value(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not a column value")


def insert_many(model: type[models.Model], columns: tuple[str, ...], values: list[tuple[Any, ...]]) -> None:
    """INSERT many rows given as tuples of already adapted column values (ids, text, numbers,
    datetimes). On PostgreSQL they travel as one JSON array in one statement, planned once per
    connection; building model instances, or sending a statement per row, cost more than the
    database's work. SQLite runs in this process, where executemany is already cheap."""
    connection = _connection()
    sql = _insert_many(connection.ops, model, columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(sql, [json.dumps(values, default=_json_value)])
        else:
            cursor.executemany(sql, values)

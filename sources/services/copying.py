"""Copy this installation's data into another, empty database: from the embedded SQLite to
PostgreSQL when a trial becomes the service, or from one server to another.

Django's own serialisation does the work: dumpdata streams every row as JSON Lines (so a long
history is never held in memory) with natural keys for what migrate makes anew (content types and
permissions, which differ between databases), and loaddata writes them in one transaction and sets
the target's id sequences past the copied ids. Row ids are kept, so run pages keep their addresses.
What migrate or the running service makes again is not copied (NOT_COPIED); everything else is,
and tests/test_copy_data.py fails on a new app until it is put on one side or the other.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dj_database_url
from django.apps import apps
from django.core import serializers
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import DatabaseError, connections
from django.db.models import Model

from completeness.text import one_line
from sources.services import copy_format

NOT_COPIED = {
    "contenttypes": "made by migrate",
    "auth.permission": "made by migrate",
    "sessions": "operators sign in again",
    "django_q": (
        "the embedded task queue: migrate makes its schedules, and the sweep queues again what the "
        "copied notifications still owe"
    ),
    "axes": "failed sign-ins and lockouts, which expire anyway",
}
TARGET = "copy_target"
# As long as the service waits for its own database (DB_CONNECT_TIMEOUT's default), and a little more.
CONNECT_TIMEOUT = 10


class CopyRefused(Exception):
    """The copy was not made, or not made whole; the message says why and what to do."""


@dataclass(frozen=True)
class CopyResult:
    counts: dict[str, int]  # model label -> rows copied, for every model copied
    seconds: float

    def lines(self) -> list[str]:
        copied = [f"{label}: {count:,}" for label, count in self.counts.items() if count]
        return [*copied, f"{sum(self.counts.values()):,} rows copied in {self.seconds:.1f} s"]


def copied_models() -> list[type[Model]]:
    """Every model whose rows are copied, M2M tables included (dumpdata writes those inside their
    owners, and they are counted on both sides all the same)."""
    return [model for model in apps.get_models(include_auto_created=True) if not _left_out(model)]


def copy_to(url: str) -> CopyResult:
    """Migrate the database `url` names, refuse it unless it holds none of the rows to copy, copy
    them, and check each model's count on both sides. Stop the service and its task workers first:
    what they write during the copy may be left behind."""
    started = time.monotonic()
    _connect(url)
    try:
        try:
            connections[TARGET].ensure_connection()
        except (DatabaseError, ImproperlyConfigured) as exc:
            # A wrong password, a database not made yet, a server down: one line, not migrate's traceback.
            raise CopyRefused(
                f"cannot connect to the target database (make it first, e.g. createdb): {_one_line(exc)}"
            ) from None
        _check_source()
        call_command("migrate", database=TARGET, interactive=False, verbosity=0)
        already = {label: count for label, count in _counts(TARGET).items() if count}
        if already:
            held = ", ".join(f"{label} ({count:,})" for label, count in sorted(already.items()))
            raise CopyRefused(f"the target database is not empty: it holds {held}; copy into a new database")
        with tempfile.TemporaryDirectory(prefix="completeness-copy-") as folder:
            # loaddata reads the format from the file's extension.
            serializers.register_serializer(copy_format.FORMAT, copy_format.__name__)
            dump = Path(folder) / f"data.{copy_format.FORMAT}"
            exclude = [label for label in NOT_COPIED if _installed(label)]
            version = _written()
            call_command(
                "dumpdata",
                exclude=exclude,
                natural_foreign=True,
                format=copy_format.FORMAT,
                output=str(dump),
                verbosity=0,
            )
            if _written() != version:
                # A running service (bin/serve's task cluster writes every minute, a report any time)
                # changed the trial while it was read: a notification read as owed and sent since would
                # be sent again from the copy, and the counts below see only added rows.
                raise CopyRefused(
                    f"the database to copy ({_describe(connections.settings['default'])}) was written to while "
                    "it was read: is the service (bin/serve, its task cluster) still running? Stop it and copy "
                    "again; nothing was copied into the target"
                )
            try:
                call_command("loaddata", str(dump), database=TARGET, verbosity=0)
            except Exception as exc:  # whatever the target refused, said in its own words
                # loaddata writes in one transaction: nothing of the copy stays there.
                raise CopyRefused(
                    f"the target database refused a row, and nothing was copied into it: {_one_line(exc)}"
                ) from exc
        source, target = _counts("default"), _counts(TARGET)
        differ = [
            f"{label} {source[label]:,} here, {target[label]:,} there"
            for label in source
            if source[label] != target[label]
        ]
        if differ:
            raise CopyRefused(
                f"the copy does not match: {'; '.join(differ)}. Was the service still writing? Stop it, "
                "and copy again into a new database"
            )
        return CopyResult(counts=source, seconds=time.monotonic() - started)
    finally:
        connections[TARGET].close()
        del connections.settings[TARGET]


def _check_source() -> None:
    """Refuse a source that is the target, or that holds nothing: with the scale-out environment
    exported (DATABASE_URL the new database) or the trial's VAR_DIR forgotten, the copy read the wrong
    database and said "0 rows copied", or "no such table"."""
    source, target = connections.settings["default"], connections.settings[TARGET]
    where = _describe(source)
    if _describe(target) == where:
        raise CopyRefused(
            f"the target is the database this installation uses ({where}): copy_data copies from "
            "DATABASE_URL, or without it from the SQLite under VAR_DIR, into --to. Run it with the trial's "
            "settings (unset DATABASE_URL, and VAR_DIR as bin/serve had it)"
        )
    wrong = "; is it the trial's? Set VAR_DIR as bin/serve had it (or DATABASE_URL to the database to copy from)"
    if source["ENGINE"] == "django.db.backends.sqlite3" and not Path(source["NAME"]).is_file():
        raise CopyRefused(f"there is no database to copy at {where}{wrong}")
    try:
        rows = sum(_counts("default").values())
    except DatabaseError as exc:
        raise CopyRefused(f"cannot read the database to copy ({where}): {_one_line(exc)}{wrong}") from None
    if not rows:
        raise CopyRefused(f"the database to copy ({where}) holds nothing{wrong}")


def _written() -> int | None:
    # SQLite's data_version changes when another connection commits: on the same connection, read
    # before and after, it tells whether anyone wrote in between. PostgreSQL has no such counter.
    connection = connections["default"]
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA data_version")
        return int(cursor.fetchone()[0])


def _describe(database: dict[str, Any]) -> str:
    if database["ENGINE"] == "django.db.backends.sqlite3":
        return str(Path(database["NAME"]).resolve())
    return f"{database['NAME']} on {database['HOST'] or 'localhost'}:{database['PORT'] or 5432}"


def _one_line(exc: BaseException) -> str:
    # loaddata wraps the database's error ("Problem installing fixture ...: Could not load
    # sources.Source(pk=3): value too long for type character varying(200)").
    return one_line(str(exc), 500)


def _connect(url: str) -> None:
    try:
        config = dj_database_url.parse(url)
    except ValueError as exc:
        raise CopyRefused(f"not a database URL ({exc}): e.g. postgres://user:password@host:5432/name") from None
    if config["ENGINE"] != "django.db.backends.sqlite3" and not config.get("NAME"):
        # An @, # or / left as it is in the password ends the password there, and the rest is read as
        # the host and path: no database name is left.
        raise CopyRefused(
            "the URL names no database: e.g. postgres://user:password@host:5432/name, with @ # / ? : in the "
            "password percent-encoded (%40 %23 %2F %3F %3A)"
        )
    if config["ENGINE"] == "django.db.backends.sqlite3" and config["NAME"] not in ("", ":memory:"):
        # The copy holds what bin/serve keeps readable by its user alone (channel targets and their
        # secrets, token and password hashes), and SQLite would make the file readable by everyone.
        try:
            Path(config["NAME"]).touch(mode=0o600)
        except OSError as exc:
            raise CopyRefused(f"cannot make the target database file: {exc}") from None
    if config["ENGINE"] == "django.db.backends.postgresql":
        # A host that hangs instead of refusing (a dropped route, a port that accepts and never answers)
        # held the command for good: libpq waits without end by default.
        config.setdefault("OPTIONS", {}).setdefault("connect_timeout", CONNECT_TIMEOUT)
    # The connection handler fills in what Django needs beyond the URL (time zone, autocommit...).
    databases = connections.configure_settings({"default": connections.settings["default"], TARGET: config})
    connections.settings[TARGET] = databases[TARGET]


def _counts(alias: str) -> dict[str, int]:
    return {model._meta.label: model._base_manager.using(alias).count() for model in copied_models()}


def _left_out(model: type[Model]) -> bool:
    return model._meta.app_label in NOT_COPIED or model._meta.label_lower in NOT_COPIED


def _installed(label: str) -> bool:
    # dumpdata refuses to exclude an app that is not installed (django_q under Celery alone).
    app_label, _, model_name = label.partition(".")
    try:
        config = apps.get_app_config(app_label)
    except LookupError:
        return False
    return not model_name or any(model._meta.model_name == model_name for model in config.get_models())

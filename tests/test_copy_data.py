"""`bin/manage copy_data --to URL`: a trial on the embedded SQLite becomes the service on PostgreSQL
with its history, settings, channels, tokens and users, and judges the next report as it would have.

The end-to-end test runs the commands as an operator does (separate processes, a SQLite file, a new
PostgreSQL database). It needs a PostgreSQL server to make that database on: the suite's own when it
runs on PostgreSQL, else the one COPY_TARGET_SERVER names (.ci/run sets it for both runs).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dj_database_url
import psycopg
import pytest
from django.apps import apps
from django.conf import settings

from sources.services import copying
from tests.alerts.stack import ROOT, manage

COMPARED = """
import json
from django.test import Client
from sources.models import Run, Source
from sources.services import copying
counts = {m._meta.label: m._base_manager.count() for m in copying.copied_models()}
runs = sorted(Run.objects.values_list("id", "source__slug", "run_id", "verdict", "collected", "findings", "expected", "expected_low", "received_at"))
normals = {s.slug: s.normal_state for s in Source.objects.order_by("slug")}
learned = Source.objects.exclude(normal_state=None).order_by("slug").first()
report = {"source": learned.slug, "run_id": "after-the-move", "started_at": "2026-12-04T03:00:00Z",
          "finished_at": "2026-12-04T03:30:00Z", "exit_code": 0, "collected": 1000}
answer = Client().post("/api/v1/runs", json.dumps(report), content_type="application/json",
                       HTTP_AUTHORIZATION="Bearer " + open(TOKEN_FILE).read().strip()).json()
print(json.dumps({"counts": counts, "runs": runs, "normals": normals, "answer": answer,
                  "max_run": max(r[0] for r in Run.objects.values_list("id")) }, default=str))
"""


def test_every_app_is_copied_or_said_why_not():
    # A new app's rows are not silently left behind by a move.
    copied = {model._meta.app_label for model in copying.copied_models()}
    left_out = {label.partition(".")[0] for label in copying.NOT_COPIED}
    assert copied == {"admin", "auth", "sources"}
    assert {config.label for config in apps.get_app_configs() if config.models_module} <= copied | left_out
    assert "sources" not in left_out and "auth" in copied  # users copied, their generated permissions not


def target_server() -> dict | None:
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("postgresql"):
        return dict(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], password=db["PASSWORD"])
    url = os.environ.get("COPY_TARGET_SERVER")
    if not url:
        return None
    parsed = dj_database_url.parse(url)
    return dict(host=parsed["HOST"], port=parsed["PORT"] or 5432, user=parsed["USER"], password=parsed["PASSWORD"])


@pytest.fixture
def target_database():
    server = target_server()
    if server is None:
        pytest.skip("needs a PostgreSQL server: run the suite on one, or set COPY_TARGET_SERVER=postgres://...")
    name = f"copy_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://{server['user']}:{server['password']}@{server['host']}:{server['port']}/{name}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def compared(env: dict[str, str], token_file: Path) -> dict:
    done = manage(
        {**env, "ALLOWED_HOSTS": "testserver"}, "shell", "-c", COMPARED.replace("TOKEN_FILE", repr(str(token_file)))
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_sqlite_trial_moves_to_postgresql_whole_and_judges_the_next_report_alike(tmp_path, target_database):
    trial = {
        **os.environ,
        "VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}",
        "SITE_URL": "http://127.0.0.1:8000",
    }
    for command in (
        ["migrate", "-v0"],
        ["seed_demo", "--sources", "8", "--days", "30", "--no-progress"],
        ["add_channel", "email", "ops@example.com"],
        ["create_token", "crawlers"],
    ):
        done = manage(trial, *command)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    token_file = tmp_path / "token"
    token_file.write_text(done.stdout.strip().splitlines()[-1])

    moved = manage(trial, "copy_data", "--to", target_database)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "rows copied" in moved.stdout and "sources.Run: " in moved.stdout

    service = {**trial, "DATABASE_URL": target_database}
    before, after = compared(trial, token_file), compared(service, token_file)
    assert after["counts"] == before["counts"] and after["counts"]["sources.Run"] > 100
    assert after["counts"]["sources.Channel"] == 1 and after["counts"]["auth.User"] >= 1
    assert after["runs"] == before["runs"]
    assert after["normals"] == before["normals"] and any(after["normals"].values())
    # The token posts there, the new run gets a fresh id, and it is judged as the trial judged it.
    assert after["answer"]["verdict"] == before["answer"]["verdict"]
    assert after["answer"]["findings"] == before["answer"]["findings"]
    assert after["answer"]["expectation"] == before["answer"]["expectation"] is not None
    # Ids are kept, and the sequence goes on after them: the same id on both sides.
    assert after["answer"]["run"] == before["answer"]["run"] == str(after["max_run"])

    schedules = manage(service, "shell", "-c", "from django_q.models import Schedule; print(Schedule.objects.count())")
    assert schedules.stdout.strip().splitlines()[-1] == str(len(settings.PERIODIC_JOBS)), schedules.stderr

    again = manage(trial, "copy_data", "--to", target_database)
    assert again.returncode == 1
    assert "the target database is not empty" in again.stderr and "copy into a new database" in again.stderr
    assert compared(service, token_file)["counts"]["sources.Run"] == after["counts"]["sources.Run"] + 1


def test_a_url_that_is_no_database_is_refused_by_name(tmp_path):
    env = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"}
    done = manage(env, "copy_data", "--to", "mysql-ish://nowhere")
    assert done.returncode == 1
    assert "not a database URL" in done.stderr and "Traceback" not in done.stderr


def test_a_row_the_target_refuses_copies_nothing_and_is_named(tmp_path, target_database):
    # SQLite keeps a text longer than its column allows; PostgreSQL refuses it.
    trial = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}"}
    for command in (["migrate", "-v0"], ["seed_demo", "--sources", "2", "--days", "3", "--no-progress"]):
        assert manage(trial, *command).returncode == 0
    too_long = (
        "from sources.models import Source; Source.objects.filter(pk=Source.objects.first().pk).update(name='x' * 300)"
    )
    assert manage(trial, "shell", "-c", too_long).returncode == 0
    done = manage(trial, "copy_data", "--to", target_database)
    assert done.returncode == 1, done.stdout
    assert "the target database refused a row, and nothing was copied into it" in done.stderr
    assert "sources.source" in done.stderr.lower() and "Traceback" not in done.stderr
    counted = manage(
        {**trial, "DATABASE_URL": target_database},
        "shell",
        "-c",
        "from sources.models import Run, Source; print(Source.objects.count() + Run.objects.count())",
    )
    assert counted.stdout.strip().splitlines()[-1] == "0"


def test_a_target_that_cannot_be_reached_is_named_in_one_line(tmp_path):
    # A refused port, a port that accepts and never answers (a dropped route), a password "p@ss#x"
    # not percent-encoded: each a one-line refusal, not migrate's traceback nor a wait without end.
    env = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"}
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            refused = closed.getsockname()[1]
        for url, said in (
            (f"postgres://u:p@127.0.0.1:{refused}/copyrev_x", "cannot connect to the target database"),
            (f"postgres://u:p@127.0.0.1:{port}/copyrev_x?connect_timeout=1", "cannot connect to the target database"),
            (f"postgres://u:p@ss#x@127.0.0.1:{refused}/copyrev_x", "the URL names no database"),
        ):
            done = manage(env, "copy_data", "--to", url, timeout=60)
            assert done.returncode == 1, (url, done.stdout)
            assert said in done.stderr and "Traceback" not in done.stderr, (url, done.stderr)


def test_a_wrong_password_or_a_database_not_made_is_said_so(tmp_path):
    server = target_server()
    if server is None:
        pytest.skip("needs a PostgreSQL server: run the suite on one, or set COPY_TARGET_SERVER=postgres://...")
    env = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"}
    where = f"{server['host']}:{server['port']}"
    for url, said in (
        (f"postgres://{server['user']}:not-{server['password']}@{where}/postgres", "password authentication failed"),
        (
            f"postgres://{server['user']}:{server['password']}@{where}/copy_not_made_{uuid.uuid4().hex[:6]}",
            "does not exist",
        ),
    ):
        done = manage(env, "copy_data", "--to", url)
        assert done.returncode == 1, (url, done.stdout)
        assert "cannot connect to the target database" in done.stderr and said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_sqlite_copy_is_readable_by_its_owner_alone(tmp_path):
    # It holds what bin/serve keeps private in its own database: channel targets and their signing
    # secrets, token and password hashes.
    env = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}"}
    assert manage(env, "migrate", "-v0").returncode == 0
    assert manage(env, "create_token", "crawlers").returncode == 0
    copy = tmp_path / "copy.sqlite3"
    done = manage(env, "copy_data", "--to", f"sqlite:///{copy}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert copy.stat().st_mode & 0o077 == 0, oct(copy.stat().st_mode)
    missing = manage(env, "copy_data", "--to", f"sqlite:///{tmp_path / 'no-such-folder' / 'copy.sqlite3'}")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr, missing.stderr


def test_migrating_the_target_writes_nothing_into_the_trial(tmp_path, target_database):
    # The migrations that fill data (0004's trend ceilings, 0024's learn_days...) wrote to the default
    # database, the trial being copied, while they migrated the target.
    trial = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}"}
    for command in (["migrate", "-v0"], ["seed_demo", "--sources", "2", "--days", "3", "--no-progress"]):
        assert manage(trial, *command).returncode == 0
    marked = "from sources.models import Source; Source.objects.update(trend_ceiling=424242, learn_days=14)"
    assert manage(trial, "shell", "-c", marked).returncode == 0
    done = manage(trial, "copy_data", "--to", target_database)
    assert done.returncode == 0, done.stdout + done.stderr
    read = "from sources.models import Source; print(sorted(set(Source.objects.values_list('trend_ceiling', 'learn_days')), key=str))"
    for env in (trial, {**trial, "DATABASE_URL": target_database}):
        values = manage(env, "shell", "-c", read)
        assert values.stdout.strip().splitlines()[-1] == "[(424242, 14)]", values.stdout + values.stderr


def test_copying_from_the_wrong_database_is_refused_by_name(tmp_path, target_database):
    # The scale-out environment exported (DATABASE_URL already the new database), or the trial's
    # VAR_DIR forgotten: "0 rows copied" and "Now start the service", or "no such table: auth_group".
    same = manage(
        {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": target_database}, "copy_data", "--to", target_database
    )
    assert same.returncode == 1, same.stdout
    assert "the target is the database this installation uses" in same.stderr, same.stderr
    nowhere = {**os.environ, "VAR_DIR": str(tmp_path / "not-the-trial")}
    nowhere.pop("DATABASE_URL", None)
    done = manage(nowhere, "copy_data", "--to", target_database)
    assert done.returncode == 1, done.stdout
    assert "there is no database to copy at" in done.stderr and "VAR_DIR" in done.stderr, done.stderr
    assert not (tmp_path / "not-the-trial" / "completeness.sqlite3").exists()
    empty = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"}
    assert manage(empty, "migrate", "-v0").returncode == 0
    done = manage(empty, "copy_data", "--to", target_database)
    assert done.returncode == 1 and "holds nothing" in done.stderr, done.stdout + done.stderr


WRITING = """
import time
from django.utils import timezone
from sources.models import JobRun
while True:
    JobRun.objects.update_or_create(name="sweep_outbox", defaults={"started_at": timezone.now()})
    time.sleep(0.05)
"""


def test_a_trial_written_to_while_it_is_read_is_refused(tmp_path, target_database):
    # bin/serve left running: its task cluster writes every minute (and reports, notifications sent),
    # which the row counts compared afterwards do not see when no row is added.
    trial = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}"}
    for command in (["migrate", "-v0"], ["seed_demo", "--sources", "8", "--days", "30", "--no-progress"]):
        assert manage(trial, *command).returncode == 0
    writer = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", WRITING], cwd=ROOT, env=trial)
    try:
        time.sleep(3)  # the writer's start-up
        done = manage(trial, "copy_data", "--to", target_database)
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 1, done.stdout
    assert "was written to while it was read" in done.stderr and "still running" in done.stderr, done.stderr
    # Nothing went in: once the service is stopped, the same target takes the copy.
    again = manage(trial, "copy_data", "--to", target_database)
    assert again.returncode == 0, again.stdout + again.stderr


def test_times_are_copied_to_the_microsecond(tmp_path, target_database):
    # Django's JSON cut them to milliseconds: a run's arrival moved, and two within a millisecond tied.
    trial = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}"}
    for command in (["migrate", "-v0"], ["seed_demo", "--sources", "2", "--days", "3", "--no-progress"]):
        assert manage(trial, *command).returncode == 0
    stamp = (
        "from sources.models import Run; run = Run.objects.order_by('pk').first(); "
        "Run.objects.filter(pk=run.pk).update(received_at=run.received_at.replace(microsecond=123456))"
    )
    assert manage(trial, "shell", "-c", stamp).returncode == 0
    done = manage(trial, "copy_data", "--to", target_database)
    assert done.returncode == 0, done.stdout + done.stderr
    read = "from sources.models import Run; print(Run.objects.order_by('pk').first().received_at.isoformat())"
    times = [manage(env, "shell", "-c", read) for env in (trial, {**trial, "DATABASE_URL": target_database})]
    assert [t.stdout.strip().splitlines()[-1] for t in times][1].endswith(".123456+00:00"), times[1].stderr
    assert times[0].stdout.strip().splitlines()[-1] == times[1].stdout.strip().splitlines()[-1]


def test_the_password_can_stay_off_the_command_line(tmp_path, target_database):
    # A URL on the command line is in `ps` for every user of the host: the password can come from
    # PGPASSWORD (or ~/.pgpass), which libpq reads where the URL gives none.
    parsed = dj_database_url.parse(target_database)
    without = f"postgres://{parsed['USER']}@{parsed['HOST']}:{parsed['PORT']}/{parsed['NAME']}"
    trial = {**os.environ, "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}"}
    trial.pop("PGPASSWORD", None)
    for command in (["migrate", "-v0"], ["seed_demo", "--sources", "2", "--days", "3", "--no-progress"]):
        assert manage(trial, *command).returncode == 0
    refused = manage(trial, "copy_data", "--to", without)
    assert refused.returncode == 1 and "cannot connect to the target database" in refused.stderr, refused.stderr
    moved = manage({**trial, "PGPASSWORD": parsed["PASSWORD"]}, "copy_data", "--to", without)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "rows copied" in moved.stdout

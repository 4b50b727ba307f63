"""How the service's connections to PostgreSQL are set up (completeness/settings.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
PG_URL = "postgres://user:password@127.0.0.1:5432/name"


def options_with(**env) -> str:
    code = "from completeness import settings; print(settings.DATABASES['default']['OPTIONS'].get('options'))"
    environment = {k: v for k, v in os.environ.items() if k != "DB_JIT"} | {"DATABASE_URL": PG_URL, **env}
    return subprocess.run(
        [sys.executable, "-c", code], env=environment, cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_connections_turn_the_jit_compiler_off_unless_told_otherwise():
    # At 20,000 sources the overview's sort was estimated costly enough to be compiled: 750 ms of
    # compiling for an 80 ms query (docs/benchmarks.md).
    assert options_with() == "-c jit=off"
    assert options_with(DB_JIT="on") == "None"  # behind PgBouncer, which refuses startup options


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="JIT is PostgreSQL's")
def test_the_database_session_has_jit_off():
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"

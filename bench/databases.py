"""What the benches share about their scratch databases."""

from __future__ import annotations


def ensure_pg_database(url: str) -> None:
    """Make the PostgreSQL database `url` names when it is missing (the role needs CREATEDB): a first run
    on a new machine, rather than a traceback."""
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')

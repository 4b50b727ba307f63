"""Text for one line: a log line, a mail header, an error quoted in a message."""

from __future__ import annotations


def one_line(text: str, limit: int | None = None) -> str:
    """`text` with every run of whitespace as one space, cut at `limit` characters. psycopg and
    loaddata write their errors on several lines, which split a log line in two; a line break in a
    mail header is refused by Django's mail (header injection), and names may carry one."""
    flat = " ".join(text.split())
    return flat if limit is None else flat[:limit]

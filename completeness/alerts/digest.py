"""The weekly digest: each covered source's week in one line, the worst first, for email and Slack.

Plain data in (a row of numbers per source, computed by sources.alerts.digests), text out. The worst
source is the one least often complete; ties go to the one more records short, then to the longer
episode. A source that ran no judged run all week counts as 0% complete: silence is no health. A source
paused when the digest is written is listed after the others, the oldest pause first, with how long it
has been paused and why: a pause nobody lifted silences a source for good, and the digest is where a
forgotten one shows (its week is a decision, not a problem).
"""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Any

from completeness.alerts import messages, slack
from completeness.durations import human_duration

# Past these, a digest names how many more (all of them healthier than the ones shown).
MOST_LINES_EMAIL, MOST_LINES_SLACK = 500, 40


def share(row: dict[str, Any]) -> float:
    return row["complete"] / row["runs"] if row.get("runs") else 0.0


def worst_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def rank(r: dict[str, Any]) -> tuple[Any, ...]:
        pause = r.get("paused")
        if pause:
            return (1, pause.get("since") or "", r["slug"])
        return (0, share(r), -(r.get("records_short") or 0), -(r.get("longest_seconds") or 0), r["slug"])

    return sorted(rows, key=rank)


def _quiet_pause(row: dict[str, Any]) -> bool:
    """Paused now, with nothing judged and no trouble in the week: a decision, not a problem."""
    return bool(row.get("paused")) and not row.get("runs") and not row.get("episodes")


def pause_words(pause: dict[str, Any], until: str | None) -> str:
    """ "paused for 64 days, since 2026-10-02 03:00 UTC, until resumed: site redesign"."""
    since = pause.get("since")
    how_long = ""
    if since and until:
        seconds = (datetime.fromisoformat(until) - datetime.fromisoformat(since)).total_seconds()
        how_long = f" for {human_duration(seconds)}"
    ends = f"until {messages.human_time(pause['until'])}" if pause.get("until") else "until resumed"
    reason = f": {pause['reason']}" if pause.get("reason") else ""
    return f"paused{how_long}, since {messages.human_time(since)}, {ends}{reason}"


def line(row: dict[str, Any], until: str | None = None) -> str:
    """ "shop — 28 runs, 61% complete, 12,400 records short, 3 episodes, longest 6 h 10 min"; a source
    paused now leads with its pause, and says no more when its week held nothing else."""
    parts = [pause_words(row["paused"], until)] if row.get("paused") else []
    if _quiet_pause(row):
        return f"{row['slug']} — {', '.join(parts)}"
    if not row.get("runs"):
        parts.append("no judged run this week")
    else:
        parts += [f"{row['runs']} run{'s' if row['runs'] != 1 else ''}", f"{share(row):.0%} complete"]
    parts.append(f"{row.get('records_short') or 0:,} records short")
    episodes = row.get("episodes") or 0
    parts.append(f"{episodes} episode{'s' if episodes != 1 else ''}")
    if episodes:
        parts.append(f"longest {human_duration(row.get('longest_seconds'))}")
    return f"{row['slug']} — {', '.join(parts)}"


def title(digest: dict[str, Any]) -> str:
    rows = digest.get("sources") or []
    troubled = sum(1 for r in rows if (r.get("episodes") or share(r) < 1) and not _quiet_pause(r))
    span = f"{messages.human_time(digest.get('since'))[:10]} to {messages.human_time(digest.get('until'))[:10]}"
    return f"Weekly digest, {span}: {len(rows)} source{'s' if len(rows) != 1 else ''}, {troubled} with problems"


def text_body(digest: dict[str, Any]) -> str:
    rows = digest.get("sources") or []
    lines = [title(digest), "", "Worst first: runs, share complete, records short, problem episodes, the longest.", ""]
    for row in rows[:MOST_LINES_EMAIL]:
        lines += [f"- {line(row, digest.get('until'))}", f"  {row.get('url', '')}"]
    if len(rows) > MOST_LINES_EMAIL:
        lines.append(f"… and {len(rows) - MOST_LINES_EMAIL} more, all healthier")
    return "\n".join(lines)


def html_body(digest: dict[str, Any]) -> str:
    rows = digest.get("sources") or []
    items = "".join(
        f'<li><a href="{escape(row.get("url", ""))}">{escape(row["slug"])}</a>{escape(line(row, digest.get("until"))[len(row["slug"]) :])}</li>'
        for row in rows[:MOST_LINES_EMAIL]
    )
    more = f"<p>… and {len(rows) - MOST_LINES_EMAIL} more, all healthier</p>" if len(rows) > MOST_LINES_EMAIL else ""
    return f'<!doctype html><html><body style="font-family: sans-serif"><h2>{escape(title(digest))}</h2><ol>{items}</ol>{more}</body></html>'


def slack_payload(digest: dict[str, Any]) -> dict[str, Any]:
    rows = digest.get("sources") or []
    shown = [
        f"• {slack.link(row.get('url', ''), row['slug'])}{slack.escape(line(row, digest.get('until'))[len(row['slug']) :])}"
        for row in rows
    ]
    more = f"… and {len(rows) - MOST_LINES_SLACK} more, all healthier" if len(rows) > MOST_LINES_SLACK else ""
    body = slack.lines_within(shown[:MOST_LINES_SLACK], slack.TEXT_LIMIT, "sources")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": slack.plain(slack.cut(title(digest), slack.HEADER_LIMIT))},
        {"type": "section", "text": slack.mrkdwn(body or "No sources covered.")},
    ]
    if more:
        blocks.append({"type": "context", "elements": [slack.mrkdwn(more)]})
    return {
        "text": slack.cut(f"*{slack.escape(title(digest))}*\n{body}\n{more}".strip(), 3 * slack.TEXT_LIMIT),
        "blocks": blocks,
    }

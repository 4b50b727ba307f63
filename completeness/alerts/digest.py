"""The weekly digest: each covered source's week in one line, the worst first, for email and Slack.

Plain data in (a row of numbers per source, computed by sources.alerts.digests), text out. The worst
source is the one least often complete; ties go to the one more records short, then to the longer
episode. A source that ran no judged run all week counts as 0% complete: silence is no health.
"""

from __future__ import annotations

from html import escape
from typing import Any

from completeness.alerts import messages, slack
from completeness.durations import human_duration

# Past these, a digest names how many more (all of them healthier than the ones shown).
MOST_LINES_EMAIL, MOST_LINES_SLACK = 500, 40


def share(row: dict[str, Any]) -> float:
    return row["complete"] / row["runs"] if row.get("runs") else 0.0


def worst_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        rows, key=lambda r: (share(r), -(r.get("records_short") or 0), -(r.get("longest_seconds") or 0), r["slug"])
    )


def line(row: dict[str, Any]) -> str:
    """ "shop — 28 runs, 61% complete, 12,400 records short, 3 episodes, longest 6 h 10 min"."""
    if not row.get("runs"):
        parts = ["no judged run this week"]
    else:
        parts = [f"{row['runs']} run{'s' if row['runs'] != 1 else ''}", f"{share(row):.0%} complete"]
    parts.append(f"{row.get('records_short') or 0:,} records short")
    episodes = row.get("episodes") or 0
    parts.append(f"{episodes} episode{'s' if episodes != 1 else ''}")
    if episodes:
        parts.append(f"longest {human_duration(row.get('longest_seconds'))}")
    return f"{row['slug']} — {', '.join(parts)}"


def title(digest: dict[str, Any]) -> str:
    rows = digest.get("sources") or []
    troubled = sum(1 for r in rows if r.get("episodes") or share(r) < 1)
    span = f"{messages.human_time(digest.get('since'))[:10]} to {messages.human_time(digest.get('until'))[:10]}"
    return f"Weekly digest, {span}: {len(rows)} source{'s' if len(rows) != 1 else ''}, {troubled} with problems"


def text_body(digest: dict[str, Any]) -> str:
    rows = digest.get("sources") or []
    lines = [title(digest), "", "Worst first: runs, share complete, records short, problem episodes, the longest.", ""]
    for row in rows[:MOST_LINES_EMAIL]:
        lines += [f"- {line(row)}", f"  {row.get('url', '')}"]
    if len(rows) > MOST_LINES_EMAIL:
        lines.append(f"… and {len(rows) - MOST_LINES_EMAIL} more, all healthier")
    return "\n".join(lines)


def html_body(digest: dict[str, Any]) -> str:
    rows = digest.get("sources") or []
    items = "".join(
        f'<li><a href="{escape(row.get("url", ""))}">{escape(row["slug"])}</a>{escape(line(row)[len(row["slug"]) :])}</li>'
        for row in rows[:MOST_LINES_EMAIL]
    )
    more = f"<p>… and {len(rows) - MOST_LINES_EMAIL} more, all healthier</p>" if len(rows) > MOST_LINES_EMAIL else ""
    return f'<!doctype html><html><body style="font-family: sans-serif"><h2>{escape(title(digest))}</h2><ol>{items}</ol>{more}</body></html>'


def slack_payload(digest: dict[str, Any]) -> dict[str, Any]:
    rows = digest.get("sources") or []
    shown = [
        f"• {slack.link(row.get('url', ''), row['slug'])}{slack.escape(line(row)[len(row['slug']) :])}" for row in rows
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

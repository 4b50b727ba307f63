"""Small display helpers of the operator pages."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django import template
from django.utils.html import conditional_escape, format_html_join
from django.utils.safestring import SafeString, mark_safe

from completeness.durations import human_duration
from completeness.numbers import PERCENT_DIGITS, count, finding_value, percent
from sources.pages.formatting import change_against_baseline
from sources.pages.forms import format_field_minimums, format_share
from sources.pages.selectors.overview import LATE_REPORT

register = template.Library()
# Pure, as the alerts write them too (completeness.numbers).
for _filter in (percent, count, finding_value):
    register.filter(_filter)

# A date ("2026-10-08") or a range of counts ("1,090-1,260"): a phone broke both at the hyphen.
KEPT_WHOLE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d[\d,]*\d-\d[\d,]*\d\b|\b\d-\d\b")


@register.filter(needs_autoescape=True)
def unbroken(text, autoescape: bool = True) -> SafeString:
    """The text with each date and each range of counts kept on one line: a phone broke "since
    2026-10-08" and "1,090-1,260" at their hyphens."""
    escaped = str(conditional_escape(text) if autoescape else text)
    return mark_safe(KEPT_WHOLE.sub(r'<span class="nowrap">\g<0></span>', escaped))  # escaped above


@register.filter
def utc(moment, precision: str = "minutes") -> str:
    """A time as '2026-11-30 08:59 UTC' (`utc:"seconds"` adds them): every page says its zone."""
    if moment is None or moment == "":
        return ""
    if isinstance(moment, datetime) and moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if precision == "seconds" else "%Y-%m-%d %H:%M UTC")


@register.filter
def change_against(collected, baseline) -> str:
    """'-86.7%' of collected against the baseline it was judged with."""
    return signed_percent(change_against_baseline(collected, baseline))


@register.filter
def change_class(collected, baseline) -> str:
    """CSS class of `collected|change_class:baseline`."""
    return ratio_class(change_against_baseline(collected, baseline))


@register.filter
def ratio_class(ratio) -> str:
    if ratio is None:
        return ""
    return "bad" if ratio <= -0.05 else ("good" if ratio >= 0 else "")


@register.filter
def signed_percent(ratio) -> str:
    if ratio is None:
        return "—"
    text = f"{ratio * 100:+.{PERCENT_DIGITS}f}%"
    # -0.04% rounds to "-0.0%": say no change instead of a sign that means nothing.
    return percent(0) if text.strip("+-") == percent(0) else text


@register.filter
def acceptable_on(run, source) -> bool:
    """Whether the pages offer accepting `run` as the source's baseline: incomplete, collected something,
    and not older than the baseline the source has. Accepting says "the source really is this size
    now", and a run seven weeks back, with complete runs after it, is not now; its page promised
    "later runs are judged against 2,166" where the baseline would not move."""
    return bool(run.acceptable_as_baseline) and source.at_or_after_baseline(run.started_at)


def _seconds_since(moment, now) -> int | None:
    if moment is None or now is None:
        return None
    return max(0, int((now - moment).total_seconds()))


@register.filter
def ago(moment, now) -> str:
    """'3 h ago': cheaper than timesince, precise enough for a report time."""
    seconds = _seconds_since(moment, now)
    if seconds is None:
        return ""
    return "just now" if seconds < 60 else f"{elapsed_since(moment, now)} ago"


@register.filter
def ran_long_before(run, moment) -> datetime | None:
    """When the run ran, where that was well before `moment` (its flip, its pause): a backfill of past
    runs dates every change of health the minute it was posted, and the log should say when it ran."""
    if run is None or moment is None or moment - run.started_at <= LATE_REPORT:
        return None
    return run.started_at


@register.filter
def elapsed_since(moment, now) -> str:
    """'3 h', '4 days': how long since `moment`, as `ago` rounds it."""
    seconds = _seconds_since(moment, now)
    if seconds is None:
        return ""
    if seconds < 60:
        return "under a minute"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


@register.filter
def rules_of(findings, mode: str = "enforce") -> list[str]:
    return [f.get("rule") for f in findings or [] if f.get("mode") == mode]


@register.filter
def per_10k(value) -> str:
    if value is None:
        return "—"
    return f"{int(value):,}"


@register.filter
def label(value) -> str:
    return str(value or "").replace("_", " ")


@register.simple_tag(takes_context=True)
def page_url(context, number: int) -> str:
    query = context.get("query") or ""
    return f"?{query}&page={number}" if query else f"?page={number}"


@register.filter
def duration(value) -> str:
    """A timedelta (or a number of seconds) in the one duration format (completeness.durations): '1 day',
    '2 days 4 h', '3 h 20 min', '45 s'."""
    if value is None or value == "":
        return "—"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    return human_duration(seconds)


@register.filter
def lasted(start, end) -> str:
    """How long from `start` to `end`, in the one duration format: '40 min'."""
    if start is None or end is None:
        return "—"
    return duration(end - start)


@register.filter
def points(margin) -> str:
    """A coverage's distance from its floor in percentage points: '-41.0 pts'."""
    if margin is None:
        return "—"
    text = f"{margin * 100:+.1f} pts"
    if text in ("+0.0 pts", "-0.0 pts"):
        # A field just below its floor must not read as level with it.
        return "0.0 pts" if abs(margin) < 5e-7 else f"{margin * 100:+.2f} pts"
    return text


@register.filter
def share_or_number(value) -> str:
    return format_share(value) if isinstance(value, float) else str(value)


@register.filter
def field_minimums(value) -> str:
    return format_field_minimums(value) if isinstance(value, dict) else str(value or "")


@register.simple_tag
def options(values, selected) -> str:
    """A select's options, the chosen one marked: in Python because a fleet's 2,000 owners as a
    template loop with an `if` each took a tenth of the overview's time."""
    return format_html_join(
        "", "<option{}>{}</option>", ((" selected" if value == selected else "", value) for value in values)
    )

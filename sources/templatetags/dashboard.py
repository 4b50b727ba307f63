"""Small display helpers of the operator pages."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def percent(value, digits: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value * 100:.{digits}f}%"


@register.filter
def change_against(collected, baseline) -> str:
    """'-86.7%' of collected against the baseline it was judged with."""
    if collected is None or not baseline:
        return "—"
    return f"{(collected - baseline) / baseline * 100:+.1f}%"


@register.filter
def change_class(collected, baseline) -> str:
    if collected is None or not baseline:
        return ""
    ratio = (collected - baseline) / baseline
    return "bad" if ratio <= -0.05 else ("good" if ratio >= 0 else "")


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

"""The source page's maintenance windows, as one tag: the page's view and selectors stay as they are."""

from django import template

from sources.services import windows

register = template.Library()


@register.inclusion_tag("sources/_windows.html")
def maintenance_windows(source):
    return {"windows": windows.upcoming(source)}

"""The warning that a failing source reaches nobody (no channel covers it), as one tag: the overview and /alerts/ show it
without their views changing (the alerts pages belong to sources/alerts)."""

from django import template

from sources.pages.selectors.overview import unwarned_problems

register = template.Library()


@register.inclusion_tag("sources/_unwarned.html")
def unwarned_warning():
    return {"unwarned": unwarned_problems()}

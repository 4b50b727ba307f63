"""The warning that nobody is told (issue 21, item 6), as one tag: the overview and /alerts/ show it
without their views changing (the alerts pages belong to sources/alerts)."""

from django import template

from sources.pages.selectors.overview import unwarned_problems

register = template.Library()


@register.inclusion_tag("sources/_unwarned.html")
def unwarned_warning():
    return {"unwarned": unwarned_problems()}

"""What reaches nobody, as one tag each: a failing source no channel covers (the overview and /alerts/
show it without their views changing: the alerts pages belong to sources/alerts), and a source that
stopped reporting with no overdue clock to say so (the overview)."""

from django import template
from django.utils import timezone

from sources.pages.selectors.overview import quiet_without_clock, unwarned_problems

register = template.Library()


@register.inclusion_tag("sources/_unwarned.html")
def unwarned_warning():
    return {"unwarned": unwarned_problems()}


@register.inclusion_tag("sources/_quiet.html", takes_context=True)
def quiet_warning(context):
    now = timezone.now()
    return {"quiet": quiet_without_clock(now), "now": now, "user": context.get("user")}

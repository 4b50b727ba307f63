"""Delivery errors on pages any logged-in user opens, without the secrets they may quote."""

from django import template

from completeness.alerts import messages
from completeness.alerts.redact import redact_error, redact_text, secrets_of

register = template.Library()


@register.filter
def delivery_error(notification) -> str:
    """A notification's last error with its channel's secrets, URL paths, queries and credentials cut
    out. Errors are stored that way; this covers rows stored before they were."""
    channel = notification.channel
    return redact_error(notification.last_error or "", secrets_of(channel.target, channel.secret or ""))


@register.filter
def said(notification) -> str:
    """What the notification told its channel, as the message's headline ("Data loss: shop is failing
    silently"): the outbox lists showed its kind alone, "failing", for a data loss and a small dip alike."""
    event = notification.event
    if not isinstance(event, dict) or "kind" not in event:
        return ""
    try:
        headline = messages.headline(event)
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""  # an event of another release's shape: its kind is still shown
    return messages.one_line(redact_text(headline), 160)


@register.filter
def crawler_text(text) -> str:
    """Free text a crawler may have sent (a pause reason) without the credentials it may quote, for
    every reader: the pages that show it are compressed (BREACH), and the run page hides the same
    text from operators who are not staff."""
    return redact_text(str(text or ""))


@register.filter
def finding_message(finding: dict, user) -> str:
    """A finding's message as `user` may read it: whole for staff, else without the credentials a
    crawler's text may carry (lost_pages quotes lost URLs)."""
    message = str(finding.get("message", ""))
    return message if getattr(user, "is_staff", False) else redact_text(message)

"""Channels: the one write path for the UI, the admin and add_channel, and the test message."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import cast

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import models, transaction
from django.utils import timezone

from completeness.alerts import signing
from completeness.alerts.policy import Alert
from completeness.alerts.severity import Severity, names, normalise_names
from sources.alerts import outbox, reminders, transports
from sources.models import HTTP_URL, Channel, Notification, Source, Tag

# PagerDuty's integration keys are 32 characters, Opsgenie's API keys UUIDs; either is a token, no URL.
_integration_key = re.compile(r"[A-Za-z0-9_-]{8,128}")
# The reminder job runs every minute; more often than this would be noise, not a reminder.
MIN_REMINDER = timedelta(minutes=15)


def validate_channel(
    kind: str,
    target: str,
    secret: str = "",
    method: str = Channel.Method.GET,
    remind_every: timedelta | None = None,
    min_severity: str = Severity.INFO,
    owners: str = "",
    teams: str = "",
    weekly_digest: bool = False,
) -> None:
    """Refuse what could never be delivered (or stored), with a message per field."""
    errors: dict[str, str] = {}
    for field, value in (("target", target), ("secret", secret), ("owners", owners), ("teams", teams)):
        column = Channel._meta.get_field(field)
        assert isinstance(column, models.Field), f"{field} is a column of Channel"
        limit = cast(int, column.max_length)  # CharFields: always set
        if len(value) > limit:
            errors[field] = f"at most {limit} characters"
    if errors:
        raise ValidationError(errors)
    if kind not in Channel.Kind.values:
        errors["kind"] = f"one of {', '.join(Channel.Kind.values)}"
    elif kind == Channel.Kind.EMAIL:
        addresses = [a.strip() for a in target.split(",") if a.strip()]
        try:
            if not addresses:
                raise ValidationError("empty")
            for address in addresses:
                validate_email(address)
        except ValidationError:
            errors["target"] = "one or more email addresses, separated by commas"
    elif kind in (Channel.Kind.PAGERDUTY, Channel.Kind.OPSGENIE):
        if not _integration_key.fullmatch(target.strip()):
            errors["target"] = "the integration key (letters, digits, '-' and '_'), not a URL"
    elif kind == Channel.Kind.APPRISE:
        if transports.apprise_client(target.strip()) is None:
            errors["target"] = "an Apprise URL, such as msteams://..., discord://..., tgram://... or mmost://..."
    else:
        try:
            # The runbook link's check: a receiver in the same compose network (`http://relay:9000/`) or
            # an Uptime Kuma beside the service (`http://uptime-kuma:3001/...`) has a host without a dot.
            HTTP_URL(target.strip())
        except ValidationError:
            errors["target"] = "an http:// or https:// URL"
    if "target" not in errors and kind in transports.URL_KINDS:
        refused = transports.refusal(target.strip(), resolve=False)
        if refused:
            errors["target"] = refused
    if secret and kind != Channel.Kind.WEBHOOK:
        errors["secret"] = "only a webhook signs its body; leave the secret empty"
    elif problem := signing.secret_problem(secret):
        errors["secret"] = problem
    if method not in Channel.Method.values:
        errors["method"] = "GET or POST"
    if remind_every is not None and (kind == Channel.Kind.HEARTBEAT or remind_every < MIN_REMINDER):
        errors["remind_every"] = "at least 15 minutes, and only for alert channels (not heartbeats)"
    if weekly_digest and kind not in (Channel.Kind.EMAIL, Channel.Kind.SLACK):
        errors["weekly_digest"] = "only email and Slack channels get the weekly digest"
    if min_severity not in Severity.__members__.values():
        errors["min_severity"] = f"one of {', '.join(Severity)}"
    elif min_severity != Severity.INFO and kind == Channel.Kind.HEARTBEAT:
        errors["min_severity"] = "a heartbeat hears complete runs, not alerts: leave it at info"
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def create_channel(
    *,
    kind: str,
    target: str,
    secret: str = "",
    method: str = Channel.Method.GET,
    name: str = "",
    source_slugs: list[str] | None = None,
    tag_names: list[str] | None = None,
    remind_every: timedelta | None = None,
    min_severity: str = Severity.INFO,
    owners: str = "",
    teams: str = "",
    weekly_digest: bool = False,
) -> Channel:
    """A channel for all sources, or for the named sources, tags, owners and teams (sources and tags
    registered when not yet known), hearing alerts of min_severity and above."""
    target = target.strip()
    owners, teams = normalise_names(owners), normalise_names(teams)
    validate_channel(kind, target, secret, method, remind_every, min_severity, owners, teams, weekly_digest)
    source_slugs, tag_names = source_slugs or [], tag_names or []
    channel = Channel.objects.create(
        kind=kind,
        target=target,
        secret=secret,
        method=method,
        name=name[: Channel._meta.get_field("name").max_length],
        all_sources=not (source_slugs or tag_names or owners or teams),
        remind_every=remind_every,
        min_severity=min_severity,
        owners=owners,
        teams=teams,
        weekly_digest=weekly_digest,
    )
    for slug in source_slugs:
        channel.sources.add(Source.objects.get_or_create(slug=slug)[0])
    for tag in tag_names:
        channel.tags.add(Tag.objects.get_or_create(name=tag)[0])
    # Told of what is already wrong, not only of what changes from now on (sources.alerts.reminders).
    reminders.brief(channel)
    return channel


def unmatched_names(channel: Channel) -> list[str]:
    """The owners and teams a channel names that no source has ("owner ghost"): a typo there covers
    nothing, silently. Said when the channel is made, not refused: their sources may come later."""
    missing = []
    for field, text in (("owner", channel.owners), ("team", channel.teams)):
        wanted = names(text)
        found = set(Source.objects.filter(**{f"{field}__in": wanted}).values_list(field, flat=True))
        missing += [f"{field} {name}" for name in sorted(wanted - found)]
    return missing


def briefing(channel: Channel) -> str:
    """What a channel just made was told at once (reminders.brief), in a sentence; "" for nothing.
    Without it, the person who added a webhook for a failing source saw "Created" and then a message
    arrive that nothing they had done seemed to send."""
    slugs = list(
        Notification.objects.filter(channel=channel, kind=Alert.REMINDER)
        .order_by("source__slug")
        .values_list("source__slug", flat=True)
        .distinct()
    )
    if not slugs:
        return ""
    shown = ", ".join(slugs[:10]) + (f" and {len(slugs) - 10} more" if len(slugs) > 10 else "")
    return f"Told it at once of {len(slugs)} source(s) already failing or overdue, as a reminder each: {shown}."


@transaction.atomic
def send_test_message(channel: Channel, requested_by: str = "") -> Notification:
    """Goes through the outbox like any alert, so its delivery state shows where alerts' would."""
    cause = f"test requested by {requested_by}" if requested_by else "test"
    event = outbox.make_event(Alert.TEST, None, at=timezone.now(), cause=cause)
    return outbox.write(Alert.TEST, event, [channel.pk])[0]

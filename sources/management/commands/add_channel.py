import re
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from completeness.alerts.severity import ORDER, Severity
from completeness.report import SLUG_PATTERN
from sources.alerts.channels import briefing, create_channel, unmatched_names
from sources.models import Channel


class Command(BaseCommand):
    help = (
        "Add an alert channel (email, slack, webhook, pagerduty, opsgenie, apprise or heartbeat) for all sources"
        " or for some sources, tags, owners and teams."
    )

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=Channel.Kind.values)
        parser.add_argument(
            "target",
            help=(
                "email: addresses (comma-separated); slack, webhook, heartbeat: the URL to call; pagerduty,"
                " opsgenie: the integration key; apprise: an Apprise URL"
            ),
        )
        parser.add_argument(
            "--source",
            action="append",
            dest="sources",
            default=[],
            metavar="SLUG",
            help="only this source (repeatable)",
        )
        parser.add_argument(
            "--tag",
            action="append",
            dest="tags",
            default=[],
            metavar="TAG",
            help="only sources with this tag (repeatable)",
        )
        parser.add_argument(
            "--owner",
            action="append",
            dest="owners",
            default=[],
            metavar="NAME",
            help="also this owner's sources (repeatable)",
        )
        parser.add_argument(
            "--team",
            action="append",
            dest="teams",
            default=[],
            metavar="NAME",
            help="also this team's sources (repeatable)",
        )
        parser.add_argument(
            "--min-severity",
            default=Severity.INFO,
            choices=[str(s) for s in reversed(ORDER)],
            help="the least severe alert it gets (default info: everything); recoveries follow what it heard",
        )
        parser.add_argument(
            "--weekly-digest", action="store_true", help="email and Slack: each covered source's week, once a week"
        )
        parser.add_argument(
            "--secret",
            default="",
            help="webhook only: sign each delivery (Standard Webhooks headers; a whsec_ secret is read as base64)",
        )
        parser.add_argument(
            "--method",
            default=Channel.Method.GET,
            choices=Channel.Method.values,
            help="heartbeat only: call the URL with GET (default) or POST",
        )
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--remind-hours",
            type=float,
            default=None,
            metavar="H",
            help="remind of sources still failing or overdue every H hours until acknowledged",
        )

    def handle(
        self, kind, target, sources, tags, secret, method, name, remind_hours=None, owners=(), teams=(), **options
    ):
        bad = [slug for slug in sources + tags if not re.fullmatch(SLUG_PATTERN, slug)]
        if bad:
            raise CommandError(f"not a slug: {', '.join(bad)}")
        try:
            channel = create_channel(
                kind=kind,
                target=target,
                secret=secret,
                method=method,
                name=name,
                source_slugs=sources,
                tag_names=tags,
                remind_every=timedelta(hours=remind_hours) if remind_hours else None,
                min_severity=options.get("min_severity") or Severity.INFO,
                owners=",".join(owners),
                teams=",".join(teams),
                weekly_digest=bool(options.get("weekly_digest")),
            )
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
            raise CommandError(problems) from None
        self.stdout.write(
            f"Created {channel.kind} channel #{channel.pk} ({channel.masked_target}) for {channel.scope},"
            f" hearing {channel.hears}."
        )
        told = briefing(channel)
        if told:
            self.stdout.write(told)
        unmatched = unmatched_names(channel)
        if unmatched:
            self.stdout.write(
                f"Note: no source has {', '.join(unmatched)} yet; this channel covers their sources once one does."
            )

from __future__ import annotations

import re

from django import forms

from completeness.alerts.severity import CHOICES as SEVERITY_CHOICES
from sources import queries
from sources.models import Channel, Source, Tag


class NoteForm(forms.Form):
    """The note of a button form (acknowledge, accept as baseline): a CharField refuses NUL characters,
    which PostgreSQL cannot store, with a message instead of a server error."""

    note = forms.CharField(required=False, max_length=2000)

    def error_text(self) -> str:
        return "; ".join(f"{field}: {' '.join(str(e) for e in errors)}" for field, errors in self.errors.items())


# Masked as passwords, a target and a secret are what a browser's password manager fills with the saved
# login (and the name before them with the user name) and offers to save a webhook URL over the login's
# password: "new-password" tells it neither is the login's.
NOT_THE_LOGIN = {"autocomplete": "new-password"}


def remind_hours_field() -> forms.FloatField:
    """A channel's reminder interval in hours, as the channels page and the admin both take it (the
    admin's own duration field took only "4:00:00", where the page took "4")."""
    return forms.FloatField(
        required=False,
        min_value=0.25,
        max_value=24 * 30,
        # In hours and in words: "greater than or equal to 0.25" gave no unit.
        error_messages={
            "min_value": "at least 0.25 hours (15 minutes)",
            "max_value": "at most 720 hours (30 days)",
        },
        help_text="remind of sources still failing or overdue every this many hours until acknowledged; empty: never",
    )


class ChannelForm(forms.Form):
    name = forms.CharField(required=False, max_length=100)
    kind = forms.ChoiceField(choices=Channel.Kind.choices)
    target = forms.CharField(
        max_length=2000,
        widget=forms.PasswordInput(attrs=NOT_THE_LOGIN),
        help_text="email addresses or a URL (a secret)",
    )
    secret = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.PasswordInput(attrs=NOT_THE_LOGIN),
        help_text="webhook only: signs each delivery; a whsec_ secret is read as base64",
    )
    method = forms.ChoiceField(choices=Channel.Method.choices, initial=Channel.Method.GET, help_text="heartbeat only")
    remind_hours = remind_hours_field()
    min_severity = forms.ChoiceField(
        choices=SEVERITY_CHOICES,
        initial="info",
        required=False,
        label="Hears",
        help_text="the least severe alert it gets; recoveries follow the alerts it heard",
    )
    weekly_digest = forms.BooleanField(
        required=False, help_text="email and Slack: each covered source's week in a line, once a week"
    )
    owners = forms.CharField(
        required=False, max_length=500, help_text="also the sources of these owners, separated by commas"
    )
    teams = forms.CharField(
        required=False, max_length=500, help_text="also the sources of these teams, separated by commas"
    )
    # Checkbox lists (styled as a scrolling box of columns): a 4-row multi-select over 60 sources was
    # unusable, and ctrl-click loses the selection at one slip.
    sources = forms.ModelMultipleChoiceField(
        Source.objects.order_by("slug"),
        required=False,
        to_field_name="slug",
        widget=forms.CheckboxSelectMultiple,
        help_text="none and no tags: all sources",
    )
    tags = forms.ModelMultipleChoiceField(
        Tag.objects.order_by("name"), required=False, to_field_name="name", widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if Source.objects.count() > SOURCE_CHECKBOXES_UP_TO:
            self.fields["sources"] = SourceSlugsField(
                required=False,
                help_text="slugs, separated by spaces, commas or new lines; none and no tags: all sources",
            )


# A box per source up to this many; past it, the page would grow with the fleet (20,000 checkboxes
# were 2.8 MB and 5 s to render), so the sources are named by slug instead.
SOURCE_CHECKBOXES_UP_TO = 200


class SourceSlugsField(forms.CharField):
    """Sources named by slug, separated by spaces, commas or new lines: unknown ones are named in the error."""

    widget = forms.Textarea(attrs={"rows": 3, "placeholder": "shop-ae, feed-uk"})

    most = 1000

    def clean(self, value) -> list[Source]:
        slugs = list(dict.fromkeys(slug for slug in re.split(r"[\s,]+", super().clean(value)) if slug))
        if len(slugs) > self.most:
            raise forms.ValidationError(
                f"{len(slugs):,} sources named, at most {self.most:,}: tag them and choose the tag"
            )
        sources, unknown = queries.by_name(Source, "slug", slugs)
        if unknown:
            shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
            raise forms.ValidationError(f"no source has the slug {shown}")
        return sources

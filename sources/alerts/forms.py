from __future__ import annotations

from django import forms

from sources.models import Channel, Source, Tag


class ChannelForm(forms.Form):
    name = forms.CharField(required=False, max_length=100)
    kind = forms.ChoiceField(choices=Channel.Kind.choices)
    target = forms.CharField(max_length=2000, widget=forms.PasswordInput, help_text="email addresses or a URL (a secret)")
    secret = forms.CharField(required=False, max_length=200, widget=forms.PasswordInput, help_text="webhook only")
    method = forms.ChoiceField(choices=Channel.Method.choices, initial=Channel.Method.GET, help_text="heartbeat only")
    remind_hours = forms.FloatField(
        required=False, min_value=0.25, max_value=24 * 30,
        help_text="remind of sources still failing or overdue every this many hours until acknowledged; empty: never",
    )
    # Checkbox lists (styled as a scrolling box of columns): a 4-row multi-select over 60 sources was
    # unusable, and ctrl-click loses the selection at one slip.
    sources = forms.ModelMultipleChoiceField(Source.objects.order_by("slug"), required=False, to_field_name="slug",
                                             widget=forms.CheckboxSelectMultiple,
                                             help_text="none and no tags: all sources")
    tags = forms.ModelMultipleChoiceField(Tag.objects.order_by("name"), required=False, to_field_name="name",
                                          widget=forms.CheckboxSelectMultiple)

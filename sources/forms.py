"""Forms of the operator pages: every query parameter and post is validated here, so bad input is a
message or an ignored filter, never a 500."""

from __future__ import annotations

from datetime import UTC

from django import forms
from django.utils import timezone

from sources import pausing
from sources.models import Health
from sources.selectors import OverviewFilters


class OverviewFilterForm(forms.Form):
    health = forms.ChoiceField(required=False, choices=[("", "any health"), *Health.choices])
    region = forms.CharField(required=False, max_length=100)
    tag = forms.CharField(required=False, max_length=100)
    silent = forms.BooleanField(required=False, label="silent only")
    q = forms.CharField(required=False, max_length=200, label="search")

    def filters(self) -> OverviewFilters:
        # An invalid field is dropped, the valid ones still apply: a stale bookmark still shows a page.
        data = self.cleaned_data if self.is_valid() else {
            name: value for name, value in getattr(self, "cleaned_data", {}).items() if name not in self.errors
        }
        return OverviewFilters(
            health=data.get("health") or "",
            region=(data.get("region") or "").strip(),
            tag=(data.get("tag") or "").strip(),
            silent_only=bool(data.get("silent")),
            q=(data.get("q") or "").strip(),
        )


class PauseForm(forms.Form):
    reason = forms.CharField(
        max_length=pausing.MAX_REASON, widget=forms.TextInput(attrs={"placeholder": "why (shown to everyone)"})
    )
    until = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="optional, UTC; the pause lifts itself then",
    )

    def clean_until(self):
        until = self.cleaned_data.get("until")
        if until is None:
            return None
        # The page works in UTC (TIME_ZONE), so a naive value from datetime-local is UTC.
        if timezone.is_naive(until):
            until = until.replace(tzinfo=UTC)
        problem = pausing.until_problem(until, timezone.now())
        if problem:
            raise forms.ValidationError(problem)
        return until


class RuleModeForm(forms.Form):
    rule = forms.CharField(max_length=64)
    mode = forms.ChoiceField(choices=[("enforce", "enforce"), ("observe", "observe")])

"""Admin for channels and the outbox. Targets and secrets are write-only there: shown masked, replaced whole."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages

from completeness.alerts.policy import Alert
from completeness.alerts.severity import normalise_names
from sources.admin_bounds import HistoryAdmin
from sources.alerts import channels, delivery, reminders
from sources.alerts.forms import NOT_THE_LOGIN, remind_hours_field
from sources.models import Acknowledgement, Channel, Notification, PagingIncident


class ChannelAdminForm(forms.ModelForm):
    target = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs=NOT_THE_LOGIN),
        help_text="email addresses or a URL; shown masked once saved. Leave empty to keep the current one.",
    )
    secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs=NOT_THE_LOGIN),
        help_text="webhook only. Leave empty to keep the current one.",
    )
    remind_hours = remind_hours_field()

    class Meta:
        model = Channel
        fields = [
            "name",
            "kind",
            "target",
            "secret",
            "method",
            "remind_hours",
            "min_severity",
            "weekly_digest",
            "all_sources",
            "sources",
            "tags",
            "owners",
            "teams",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.saved_target = self.instance.target
        if self.instance.remind_every is not None:
            self.initial.setdefault("remind_hours", round(self.instance.remind_every.total_seconds() / 3600, 4))
        # Absent from a form posted by hand: the default, everything.
        self.fields["min_severity"].required = False

    def clean(self):
        data = super().clean()
        data["min_severity"] = data.get("min_severity") or "info"
        hours = data.get("remind_hours")
        data["remind_every"] = timedelta(hours=hours) if hours else None
        data["owners"], data["teams"] = normalise_names(data.get("owners", "")), normalise_names(data.get("teams", ""))
        if data.get("all_sources") and (data.get("sources") or data.get("tags") or data["owners"] or data["teams"]):
            # Ticked by default: picks saved beside it would be stored and silently ignored.
            self.add_error(
                "all_sources",
                "untick it to alert only the sources and tags picked (and owners and teams), or clear the picks",
            )
        existing = self.instance.pk is not None
        if not data.get("target"):
            if not existing:
                self.add_error("target", "required")
                return data
            data["target"] = self.instance.target
        if not data.get("secret") and existing:
            data["secret"] = self.instance.secret
        try:
            channels.validate_channel(
                data.get("kind", ""),
                data["target"].strip(),
                data.get("secret", ""),
                data.get("method", ""),
                data.get("remind_every"),
                data.get("min_severity", ""),
                data["owners"],
                data["teams"],
                data.get("weekly_digest", False),
            )
        except forms.ValidationError as exc:
            for field, errors in exc.message_dict.items():
                field = "remind_hours" if field == "remind_every" else field
                self.add_error(field if field in self.fields else None, errors)
        return data

    def save(self, commit=True):
        channel = super().save(commit=False)
        channel.target = self.cleaned_data["target"].strip()
        channel.secret = self.cleaned_data.get("secret", "")
        channel.remind_every = self.cleaned_data.get("remind_every")
        if channel.pk and channel.target != self.saved_target:
            # A new target is a new receiver: what broke the old one says nothing about it.
            channel.broken = False
        if commit:
            channel.save()
            self.save_m2m()
        return channel


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelAdminForm
    list_display = ["__str__", "kind", "masked_target", "scope", "min_severity", "broken", "last_error", "created_at"]
    list_filter = ["kind", "broken"]
    readonly_fields = [
        "masked_target",
        "broken",
        "last_error",
        "last_error_at",
        "next_send_at",
        "digest_sent_at",
        "created_at",
    ]
    autocomplete_fields = ["sources"]
    filter_horizontal = ["tags"]
    actions = ["send_test_message"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("sources", "tags")

    def save_related(self, request, form, formsets, change) -> None:
        super().save_related(request, form, formsets, change)
        if not change:
            # Told of what is already wrong, as a channel added on the channels page is; after its
            # sources and tags are saved, which decide what it covers.
            reminders.brief(form.instance)
            told = channels.briefing(form.instance)
            if told:
                self.message_user(request, told)
        unmatched = channels.unmatched_names(form.instance)
        if unmatched:
            self.message_user(
                request,
                f"No source has {', '.join(unmatched)} yet: this channel covers their sources once one does.",
                messages.WARNING,
            )

    @admin.action(description="Send a test message")
    def send_test_message(self, request, queryset) -> None:
        for channel in queryset:
            channels.send_test_message(channel, requested_by=request.user.get_username())
        self.message_user(
            request,
            f"Queued a test message for {queryset.count()} channel(s); see Notifications for delivery.",
            messages.SUCCESS,
        )


class KindFilter(admin.SimpleListFilter):
    """The kinds an alert may be, from the code: Django's own filter would read them with a
    SELECT DISTINCT over the whole outbox on every page."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [(kind.value, kind.value.replace("_", " ")) for kind in Alert]

    def queryset(self, request, queryset):
        return queryset.filter(kind=self.value()) if self.value() else queryset


@admin.register(Notification)
class NotificationAdmin(HistoryAdmin):
    list_display = ["created_at", "kind", "channel", "source", "status", "attempts", "next_attempt_at", "last_error"]
    list_filter = ["status", KindFilter]
    list_select_related = ["channel", "source"]
    search_fields = ["source__slug"]
    actions = ["send_again"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        # The outbox is written by flips and read by workers; an operator may only send again.
        return False

    @admin.action(description="Send again now")
    def send_again(self, request, queryset) -> None:
        count = delivery.retry_now(queryset)
        self.message_user(request, f"{count} notification(s) will be sent again by the next sweep.")


@admin.register(Acknowledgement)
class AcknowledgementAdmin(HistoryAdmin):
    list_display = ["at", "source", "health", "health_since", "by", "note"]
    list_select_related = ["source"]
    search_fields = ["source__slug", "by"]
    readonly_fields = ["source", "health", "health_since", "by", "at"]

    def has_add_permission(self, request) -> bool:
        # Given on the alerts page or through the API, where the problem it names is read under a lock.
        return False


@admin.register(PagingIncident)
class PagingIncidentAdmin(HistoryAdmin):
    """Which sources each PagerDuty or Opsgenie incident holds (a storm is one): read only, kept by alerts."""

    list_display = ["key", "channel", "opened_at", "closed_at", "members", "everyone"]
    list_filter = ["channel"]
    list_select_related = ["channel"]
    search_fields = ["key"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

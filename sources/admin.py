from django import forms
from django.contrib import admin
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers

from completeness import windows as schedule
from sources.admin_bounds import CountedDeletion, HistoryAdmin
from sources.ingest.ingest import SOURCE_STATE_FIELDS
from sources.models import (
    ApiToken,
    BaselineAcceptance,
    Flip,
    HttpUrlFormField,
    MaintenanceWindow,
    PauseEvent,
    Run,
    Source,
    Tag,
)
from sources.pages.forms import (
    SETTING_HELP,
    DurationTextField,
    FieldMinimumsField,
    RuleModesField,
    ShareField,
    share_limit,
)
from sources.services import run_deletion, tokens


class SourceAdminForm(forms.ModelForm):
    """The source page's ways of typing shares and per-field minimums, so both accept the same text."""

    min_completeness = ShareField(help_text=SETTING_HELP["min_completeness"])
    drop_threshold = ShareField(help_text=SETTING_HELP["drop_threshold"])
    field_drop = ShareField(help_text=SETTING_HELP["field_drop"])
    min_margin = ShareField(help_text=SETTING_HELP["min_margin"], max_value=share_limit("min_margin"))
    field_minimums = FieldMinimumsField()
    # As lines, checked as the rules table checks a switch: the raw JSON took {"drop": "loud"}, and every
    # report of the source then answered 500.
    rule_modes = RuleModesField()
    # Typed as on the source page ("1d", "6h"): the admin's own field refused "1d" and showed "1 00:00:00".
    expected_interval = DurationTextField(
        required=False, help_text=SETTING_HELP["expected_interval"], limits_of="expected_interval"
    )
    grace = DurationTextField(help_text=SETTING_HELP["grace"], limits_of="grace")
    runbook_url = HttpUrlFormField(
        required=False, max_length=500, assume_scheme="https", help_text=Source._meta.get_field("runbook_url").help_text
    )

    class Meta:
        model = Source
        fields = "__all__"


@admin.register(Source)
class SourceAdmin(CountedDeletion, admin.ModelAdmin):
    form = SourceAdminForm
    list_display = ["slug", "name", "region", "team", "owner", "health", "paused", "last_report_at"]
    list_filter = ["health", "paused", "region", "team", "tags"]
    search_fields = ["slug", "name", "owner", "team"]
    filter_horizontal = ["tags"]
    # What ingest writes is the row's state, not settings to edit (its learned normal is not even shown).
    # created_at too: when the service first heard of the source is a fact, not a setting.
    readonly_fields = [*SOURCE_STATE_FIELDS, "created_at"]

    def save_model(self, request, obj, form, change) -> None:
        # Only what the operator changed: the row's state (health, baseline, trend ceiling) is ingest's,
        # and a report judged while this form was open must not be rolled back by saving it.
        if not change:
            obj.save()
            return
        columns = {f.name for f in Source._meta.concrete_fields}
        changed = [name for name in form.changed_data if name in columns]
        if changed:
            obj.save(update_fields=changed)


@admin.register(Run)
class RunAdmin(CountedDeletion, HistoryAdmin):
    list_display = ["run_id", "source", "started_at", "verdict", "silent", "collected", "declared_total"]
    list_filter = ["verdict", "silent"]
    search_fields = ["run_id", "source__slug"]
    list_select_related = ["source"]
    raw_id_fields = ["source"]

    def has_change_permission(self, request, obj=None) -> bool:
        # A run is a record of what a crawler said; editing it would rewrite history.
        return False

    def delete_model(self, request, obj) -> None:
        run_deletion.delete_runs(Run.objects.filter(pk=obj.pk))

    def delete_queryset(self, request, queryset) -> None:
        run_deletion.delete_runs(queryset)


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name", "all_sources", "sources", "may_configure"]
        help_texts = {
            "name": "who uses it, e.g. the crawler's name: shown in the list with when it was last used",
            "all_sources": "may post for every source, and registers an unknown one on its first report",
            "sources": "or only these (a scoped token never creates a source); the token is shown once, on saving",
            "may_configure": (
                "may also change its sources' settings (thresholds, intervals, owner) and plan maintenance "
                "windows. Every token posts reports, pauses, resumes and acknowledges; a crawler needs "
                "nothing more, so leave this off unless the token's holder configures sources"
            ),
        }

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("all_sources") and not cleaned.get("sources"):
            # A token for no source is refused on every post: say so before it is made.
            raise forms.ValidationError("Choose the sources this token may post for, or tick all sources.")
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ["name", "scope", "may_configure", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["may_configure"]
    readonly_fields = ["key_id", "key_hash", "created_at", "last_used_at", "revoked_at"]
    fields = ["name", "all_sources", "sources", "may_configure", "key_id", "created_at", "last_used_at", "revoked_at"]
    # Searched as you type: a list of every source grows with the fleet (870 KB at 20,000 sources).
    autocomplete_fields = ["sources"]
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        # A new token has no key yet: it is made on save, and shown once on the page that follows.
        return ["name", "all_sources", "sources", "may_configure"] if obj is None else self.fields

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            request._new_token = tokens.new_key(obj)
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj, post_url_continue=None):
        # The raw token in this one answer, never in a message (kept in a cookie or the session until
        # shown) or a URL, and not cached: the service keeps only its hash from here on.
        response = TemplateResponse(
            request,
            "admin/sources/apitoken/created.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": f"Token {obj.name} created",
                "token": obj,
                "raw": request._new_token,
            },
        )
        add_never_cache_headers(response)
        return response

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("sources")

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).")


admin.site.register(Tag)
# Typed as ids: a <select> of every run (or source) would be the whole table in one form.
admin.site.register(
    PauseEvent,
    HistoryAdmin,
    list_display=["source", "action", "origin", "actor", "reason", "until", "at"],
    list_select_related=["source"],
    raw_id_fields=["source", "run"],
)
admin.site.register(
    Flip,
    HistoryAdmin,
    list_display=["source", "old_health", "new_health", "at", "cause"],
    list_select_related=["source"],
    raw_id_fields=["source", "run"],
)
admin.site.register(
    BaselineAcceptance,
    HistoryAdmin,
    list_display=["source", "run", "accepted_by_name", "accepted_at"],
    list_select_related=["source", "run"],
    raw_id_fields=["source", "run", "accepted_by"],
)

import sources.alerts.admin  # noqa: E402,F401  (Channel and Notification)


class MaintenanceWindowAdminForm(forms.ModelForm):
    """The API's rules for a window (sources.services.windows.schedule), so a window planned here is one the clock can open."""

    class Meta:
        model = MaintenanceWindow
        fields = ["name", "reason", "starts_at", "ends_at", "weekly", "sources", "tags", "region"]

    def clean(self):
        data = super().clean()
        starts_at, ends_at = data.get("starts_at"), data.get("ends_at")
        if starts_at and ends_at:
            problem = schedule.problem(starts_at, ends_at, data.get("weekly", False), timezone.now())
            if problem:
                self.add_error(*problem)
        if not (data.get("sources") or data.get("tags") or data.get("region")):
            raise forms.ValidationError("name at least one source, tag or region")
        return data


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(admin.ModelAdmin):
    form = MaintenanceWindowAdminForm
    list_display = ["name", "starts_at", "ends_at", "weekly", "region", "created_by"]
    autocomplete_fields = ["sources"]
    filter_horizontal = ["tags"]
    readonly_fields = ["created_by", "created_at"]

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            obj.created_by = f"user:{request.user.get_username()}"
        super().save_model(request, obj, form, change)

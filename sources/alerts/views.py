"""Server-rendered alert pages: thin over the selectors and the channel service."""

from __future__ import annotations

from datetime import timedelta
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from sources.admin_bounds import CappedCountPaginator
from sources.alerts import acks, channels, selectors, watch
from sources.alerts.forms import ChannelForm, NoteForm
from sources.models import Channel, Notification, Source

NOTIFICATIONS_PER_PAGE = 100


def staff_required(view):
    """Staff only, on the server: anonymous users go to log in, other users get 403."""

    @wraps(view)
    def guarded(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied("channels are managed by staff")
        return view(request, *args, **kwargs)

    return guarded


@require_safe
@login_required
def alerts_page(request: HttpRequest) -> HttpResponse:
    # The outbox keeps failed and pending notifications for good: count at most COUNT_CAP of them.
    page = CappedCountPaginator(selectors.notifications(), NOTIFICATIONS_PER_PAGE).get_page(request.GET.get("page"))
    problems = selectors.open_problems()
    return render(
        request,
        "alerts/alerts.html",
        {
            "problems": problems,
            "acknowledge_target": selectors.acknowledge_target(request.GET.get("ack"), problems),
            "flips": selectors.recent_flips(),
            "page": page,
            "alert_path": watch.alert_path(),
            "now": timezone.now(),
        },
    )


@require_POST
@login_required
def acknowledge(request: HttpRequest, slug: str) -> HttpResponse:
    source = get_object_or_404(Source, slug=slug)
    form = NoteForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.error_text())
        return redirect("alerts:alerts")
    try:
        acks.acknowledge(source=source, by=f"user:{request.user.get_username()}", note=form.cleaned_data["note"])
    except acks.NothingToAcknowledge as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{slug} acknowledged: no reminders about it until its health changes.")
    return redirect("alerts:alerts")


@require_http_methods(["GET", "POST"])
@staff_required
def channels_page(request: HttpRequest) -> HttpResponse:
    form = ChannelForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            channel = channels.create_channel(
                kind=data["kind"],
                target=data["target"],
                secret=data["secret"],
                method=data["method"],
                remind_every=timedelta(hours=data["remind_hours"]) if data["remind_hours"] else None,
                name=data["name"],
                source_slugs=[s.slug for s in data["sources"]],
                tag_names=[t.name for t in data["tags"]],
                min_severity=data["min_severity"] or "info",
                owners=data["owners"],
                teams=data["teams"],
                weekly_digest=data["weekly_digest"],
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            told = channels.briefing(channel)
            messages.success(
                request, f"Channel #{channel.pk} created for {channel.scope}." + (f" {told}" if told else "")
            )
            unmatched = channels.unmatched_names(channel)
            if unmatched:
                messages.warning(
                    request,
                    f"No source has {', '.join(unmatched)} yet: this channel covers their sources once one does.",
                )
            return redirect("alerts:channels")
    # "ok" beside a channel whose every delivery is being retried read as healthy for the minutes
    # (or hours, with backoff) before it is marked broken: the list says how many wait for a retry.
    all_channels = (
        watch.channels_with_resendable()
        .annotate(retrying=Count("notifications", filter=Q(notifications__status=Notification.Status.RETRYING)))
        .prefetch_related("sources", "tags")
    )
    return render(request, "alerts/channels.html", {"channels": all_channels, "form": form})


@require_safe
@staff_required
def channel_page(request: HttpRequest, pk: int) -> HttpResponse:
    channel = get_object_or_404(watch.channels_with_resendable().prefetch_related("sources", "tags"), pk=pk)
    recent = channel.notifications.select_related("source").order_by("-created_at", "-id")[:50]
    return render(request, "alerts/channel.html", {"channel": channel, "notifications": recent})


@require_POST
@staff_required
def channel_test(request: HttpRequest, pk: int) -> HttpResponse:
    channel = get_object_or_404(Channel, pk=pk)
    channels.send_test_message(channel, requested_by=request.user.get_username())
    messages.success(request, "Test message queued; its delivery state is listed below.")
    return redirect("alerts:channel", pk=channel.pk)


@require_POST
@staff_required
def channel_resend(request: HttpRequest, pk: int) -> HttpResponse:
    channel = get_object_or_404(Channel, pk=pk)
    if channel.broken:
        messages.error(request, "The channel is still broken: fix its target first (a test message shows it works).")
    else:
        count = watch.resend_failed(channel)
        messages.success(request, f"{count} failed notification{'s' if count != 1 else ''} queued to be sent again.")
    return redirect("alerts:channel", pk=channel.pk)

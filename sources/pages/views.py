"""The operator pages. Thin: queries live in sources/pages/selectors/overview.py and
sources/pages/selectors/source.py, figures in sources/pages/charts/figures.py."""

from __future__ import annotations

import json
from datetime import UTC, timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from completeness import cadence
from sources.alerts.forms import NoteForm
from sources.alerts.outbox import channels_for
from sources.ingest.baselines import NotAcceptable, accept_as_baseline
from sources.ingest.history import learning
from sources.models import PauseEvent, PauseOrigin, Source
from sources.pages import proxies
from sources.pages.charts import coverage as coverage_chart
from sources.pages.charts import figures as charts
from sources.pages.charts.ranges import ChartRange
from sources.pages.forms import (
    OverviewFilterForm,
    PauseForm,
    ProxyFilterForm,
    RuleModeForm,
    SourceSettingsForm,
    format_duration,
    format_share,
)
from sources.pages.selectors import fleet as fleet_selectors
from sources.pages.selectors import overview as selectors
from sources.pages.selectors import proxies as proxy_selectors
from sources.pages.selectors import quality
from sources.pages.selectors import run as run_facts
from sources.pages.selectors import source as source_selectors
from sources.pages.selectors.choices import filter_choices
from sources.pages.selectors.headline import source_headline
from sources.services import pausing
from sources.services.rule_modes import NotSwitchable, set_rule_mode
from sources.services.rule_settings import update_rule_settings

# The pause form's values kept in the session across the redirect after a refused pause.
PAUSE_TYPED = "pause_typed"


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def _require_staff(request: HttpRequest) -> None:
    # Enforced here, not only by hiding the control: a crafted POST from a non-staff user gets 403.
    if not request.user.is_staff:
        raise PermissionDenied("staff only")


def _signed_in(request: HttpRequest) -> User:
    # Behind login_required: the user is a real one, never AnonymousUser.
    assert isinstance(request.user, User), "login_required lets only a signed-in user through"
    return request.user


def _source_or_404(slug: str) -> Source:
    source = source_selectors.source_by_slug(slug)
    if source is None:
        raise Http404(f"no source '{slug}'")
    return source


# Compressed: these two pages hold no secret to guess at through their size (BREACH:
# the CSRF token is masked per response, finding messages are redacted for every reader, as on the
# overview; the run page and the alerts pages, which show staff whole reports and channel targets, are
# sent as they are). 47 KB of source page HTML is 8 KB compressed.
@require_safe
@login_required
@gzip_page
def overview(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    # A pause with an end time lifts itself; the periodic job may not have run yet.
    for source in selectors.expired_pauses(now):
        pausing.lift_expired_pause(source)
    form = OverviewFilterForm(request.GET)
    filters = form.filters()
    page = selectors.overview_page(filters, request.GET.get("page"), now)
    choices = filter_choices()
    query = request.GET.copy()
    query.pop("page", None)
    scope = {name: getattr(filters, name) for name in selectors.SCOPE_FILTERS if getattr(filters, name)}
    return render(
        request,
        "sources/overview.html",
        {
            "form": form,
            "filters": filters,
            "page": page,
            "headline": selectors.headline(now, filters),
            # The headline's links keep the scope the counts are of.
            "scope_query": urlencode(scope),
            # Named when it holds no source, so that 0 failing does not read as all clear.
            "scope": list(scope.items()),
            "fleet": fleet_selectors.cached_fleet(filters, now),
            "choices": choices,
            "query": query.urlencode(),
            "now": now,
        },
    )


@require_safe
@login_required
@gzip_page
def source_detail(request: HttpRequest, slug: str) -> HttpResponse:
    source = _source_or_404(slug)
    if source.pause_expired():
        source = pausing.lift_expired_pause(source)
        source = _source_or_404(slug)
    return _source_page(request, source, SourceSettingsForm.of(source))


def _source_page(request: HttpRequest, source: Source, settings_form: SourceSettingsForm) -> HttpResponse:
    now = timezone.now()
    span = ChartRange.of(request.GET.get("range"), now)
    # From a trend window before the range: the trend lines of its first runs need their window.
    loaded_from = span.start - timedelta(days=source.trend_days)
    runs = source_selectors.chart_runs(source, now, since=loaded_from, limit=source_selectors.CHART_MAX_RUNS + 1)
    # Cut at CHART_MAX_RUNS: nothing is known before the first run kept, and the trend lines say so.
    cut = len(runs) > source_selectors.CHART_MAX_RUNS
    runs = runs[1:] if cut else runs
    cut_at = quality.started_at(runs[0]) if cut else None
    known_from = max(loaded_from, cut_at) if cut_at else loaded_from
    references = quality.trend_series(runs, source.trend_days, known_from=known_from)
    first_run = runs[0]["x"] if runs else None  # before the range's cut: older runs keep the whole range
    # How often it reports, kept on its row from its latest runs (sources.ingest.history), as the
    # overview's list of quiet sources reads it.
    gap = source.usual_gap if source.expected_interval is None else None
    runs, references = span.visible(runs, references)
    trend = charts.TrendLines(
        references,
        drop_threshold=source.drop_threshold,
        days=source.trend_days,
        min_runs=source.trend_min_runs,
    )
    figures = {
        "collected": charts.collected_figure(runs, trend),
        "coverage": coverage_chart.coverage_figure(runs),
        "completeness": charts.completeness_figure(runs, source.min_completeness),
        "breaker": charts.breaker_figure(runs),
        "proxies": charts.proxy_states_figure(
            charts.state_steps(*proxy_selectors.source_proxy_steps(source, span.start, now))
        ),
    }
    paused = source_selectors.paused_periods(source, span.start, now)
    pause_events = source_selectors.pause_history(source)
    fields_run, fields = quality.latest_fields(source)
    query = request.GET.copy()
    query.pop("page", None)
    state = selectors.source_state(source, now)
    return render(
        request,
        "sources/source.html",
        {
            "source": source,
            "state": state,
            "headline": source_headline(source, state["state"], now),
            "learning": learning(source),
            "usual_gap": gap,
            "quiet": (quiet := cadence.quiet_after(source.last_report_at, gap)) is not None and quiet < now,
            "now": now,
            "current_pause": current_pause(source, pause_events),
            # Each drawn figure as JSON for plotly.js and in words for whoever cannot see it.
            "figures": {
                name: _drawn(span.apply(fig, paused, first_run)) for name, fig in figures.items() if not _blank(fig)
            },
            # Panels with nothing to draw are one line of text each, not an empty box.
            "blank_charts": [(name, CHART_NAMES[name], _blank(fig)) for name, fig in figures.items() if _blank(fig)],
            "chart_points": len(runs),
            "charts_cut_at": cut_at if cut_at and cut_at > span.start else None,
            "range": span,
            "query": query.urlencode(),
            "rules": source_selectors.rule_table(source),
            "settings_form": settings_form,
            "fields_run": fields_run,
            "fields": fields,
            "open_floors": quality.open_floors(fields),
            "history": source_selectors.run_history(source, request.GET.get("page")),
            "pause_form": _pause_form(request.session.pop(PAUSE_TYPED, None)),
            "pause_events": pause_events,
            "acceptances": source_selectors.baseline_history(source),
            "flips": source_selectors.recent_flips(source),
            "channels": list(channels_for(source).order_by("kind", "name", "id")),
        },
    )


CHART_NAMES = {
    "collected": "Collected",
    "coverage": "Field coverage",
    "completeness": "Completeness ratio",
    "breaker": "Peak failure-window ratio",
    "proxies": "Proxy states",
}


def _pause_form(typed: dict[str, str] | None) -> PauseForm:
    """The pause form, bound to what was typed after a refused pause: the refused field is marked
    (aria-invalid) and tied to its error (aria-describedby) beside it, not only named at the page's top."""
    if not typed:
        return PauseForm()
    form = PauseForm(typed)
    form.is_valid()
    return form


def _drawn(figure: dict[str, Any]) -> dict[str, str]:
    """A figure as the page embeds it: its JSON for plotly.js, and its summary as the chart's caption."""
    return {"json": charts.to_json(figure), "summary": charts.summary(figure)}


def _blank(figure: dict[str, Any]) -> str:
    """Why a figure has nothing to draw ("" when it has something): charts.blank_layout's note."""
    return str((figure["layout"].get("meta") or {}).get("blank") or "")


def current_pause(source: Source, events: list[PauseEvent]) -> PauseEvent | None:
    """The pause event whose terms the source carries now. A pause while paused replaces the terms
    (who, why, until) but not paused_since: the header shows this event's own time beside its own
    who and origin, and the longer stretch separately."""
    if not source.paused:
        return None
    return next((e for e in events if e.action == PauseEvent.Action.PAUSE), None)


@require_http_methods(["GET", "POST"])
@login_required
def update_settings(request: HttpRequest, slug: str) -> HttpResponse:
    if request.method == "GET":
        # A page with errors is shown at this address: its relative links (the history's pages) and a
        # reload land here, and belong on the source page.
        query = request.GET.urlencode()
        return HttpResponseRedirect(reverse("source", kwargs={"slug": slug}) + (f"?{query}" if query else ""))
    _require_staff(request)
    source = _source_or_404(slug)
    form = SourceSettingsForm.of(source, request.POST)
    if form.is_valid():
        try:
            changed = update_rule_settings(source, **form.changed_values())
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            if changed:
                told = "; ".join(f"{name} {_shown(old)} → {_shown(new)}" for name, (old, new) in changed.items())
                messages.success(request, f"Settings saved, from the next report on: {told}.")
            else:
                messages.info(request, "Nothing changed.")
            return HttpResponseRedirect(reverse("source", kwargs={"slug": slug}) + "#settings")
    # Shown on the page itself with the values as typed and every error beside its field; nothing saved.
    messages.error(request, "Settings not saved: see the errors under Rule settings.")
    return _source_page(request, source, form)


def _shown(value: object) -> str:
    if value is None or value == "":
        return "none"
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} {format_share(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, float):
        return format_share(value)
    return str(value)


@require_POST
@login_required
def pause_source(request: HttpRequest, slug: str) -> HttpResponse:
    source = _source_or_404(slug)
    form = PauseForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"Not paused: {field}: {' '.join(map(str, errors))}")
        # Back on the page with what was typed: a refused end time cleared a reason written out in full.
        request.session[PAUSE_TYPED] = {name: request.POST.get(name, "")[:500] for name in ("reason", "until")}
        return redirect("source", slug=slug)
    pausing.pause_source(
        source,
        origin=PauseOrigin.UI,
        actor=_actor(request),
        reason=form.cleaned_data["reason"],
        until=form.cleaned_data["until"],
    )
    until = form.cleaned_data["until"]
    if until is None:
        messages.success(request, f"{slug} paused: nothing about it alerts until it is resumed.")
    else:
        # The pause lifts itself then (check_overdue): say so, as the pause box beside it does.
        messages.success(
            request,
            f"{slug} paused until {until.astimezone(UTC):%Y-%m-%d %H:%M} UTC (or until resumed): nothing about it alerts meanwhile.",
        )
    return redirect("source", slug=slug)


@require_POST
@login_required
def resume_source(request: HttpRequest, slug: str) -> HttpResponse:
    source = _source_or_404(slug)
    pausing.resume_source(source, origin=PauseOrigin.UI, actor=_actor(request), reason="resumed from the source page")
    messages.success(request, f"{slug} resumed.")
    return redirect("source", slug=slug)


@require_POST
@login_required
def switch_rule_mode(request: HttpRequest, slug: str) -> HttpResponse:
    _require_staff(request)
    source = _source_or_404(slug)
    form = RuleModeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Mode not changed: choose enforce or observe.")
        return redirect("source", slug=slug)
    try:
        set_rule_mode(source, form.cleaned_data["rule"], form.cleaned_data["mode"])
    except NotSwitchable as exc:
        messages.error(request, f"Mode not changed: {exc}.")
    else:
        messages.success(
            request, f"{form.cleaned_data['rule']} is now {form.cleaned_data['mode']}d from the next report on."
        )
    return HttpResponseRedirect(reverse("source", kwargs={"slug": slug}) + "#rules")


@require_safe
@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = selectors.run_by_id(run_id)
    if run is None:
        raise Http404(f"no run {run_id}")
    detail = selectors.run_detail(run)
    # Credentials a crawler quoted (a lost URL's userinfo or token, a proxy URL in meta) only for staff.
    shown = run_facts.shown(run, detail, staff=request.user.is_staff)
    detail.update({k: shown.pop(k) for k in ("lost_urls", "failed_batches") if k in shown})
    window = run.raw.get("failure_window") if isinstance(run.raw, dict) else None
    fields = quality.run_fields(run)
    return render(
        request,
        "sources/run.html",
        {
            "run": run,
            "shown": shown,
            "raw_json": json.dumps(shown["raw"], indent=2, sort_keys=True, ensure_ascii=False),
            "source": run.source,
            "window": window or {},
            "figure": _drawn(charts.failure_window_figure(window, detail["breaker_events"].items))
            if charts.window_has_drawing(window, detail["breaker_events"].items)
            else None,
            "requests": run_facts.request_classes(run),
            "ignored_fields": run_facts.ignored_fields(run),
            "outcomes": selectors.capped(run_facts.outcome_rows(run)),
            "outcomes_considered": run_facts.outcomes_considered(run),
            "fields": fields,
            "open_floors": quality.open_floors(fields),
            # A run that failed on its fields alone: accepting it is about their coverage, not the count.
            "accept_fields": [f for f in fields if f.below] if set(run.enforced_rules) == {"field_coverage"} else [],
            **detail,
        },
    )


@require_POST
@login_required
def accept_baseline(request: HttpRequest, run_id: int) -> HttpResponse:
    _require_staff(request)
    run = selectors.run_by_id(run_id)
    if run is None:
        raise Http404(f"no run {run_id}")
    form = NoteForm(request.POST)
    if not form.is_valid():
        messages.error(request, form.error_text())
        return redirect("run", run_id=run_id)
    try:
        accept_as_baseline(run, _signed_in(request), note=form.cleaned_data["note"])
    except NotAcceptable as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run {run.run_id} accepted as baseline ({run.collected} records).")
    target = request.POST.get("next", "")
    # Back to the page the button was on (the source's history or the run), never off-site.
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return HttpResponseRedirect(target)
    return redirect("run", run_id=run_id)


@require_safe
@login_required
def proxy_overview(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    form = ProxyFilterForm(request.GET)
    filters = form.filters()
    board = proxies.proxy_board(filters, request.GET.get("page"), now)
    query = request.GET.copy()
    query.pop("page", None)
    steps = charts.state_steps(charts.start_of(board.end, board.changes), board.changes, end=now)
    return render(
        request,
        "sources/proxies.html",
        {
            "board": board,
            "filters": filters,
            "page": board.page,
            "query": query.urlencode(),
            "figure": _drawn(charts.capacity_figure(steps)),
            "history_days": proxy_selectors.PROXY_HISTORY.days,
            "history_rows": proxy_selectors.PROXY_HISTORY_ROWS,
            "now": now,
        },
    )

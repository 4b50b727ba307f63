from __future__ import annotations

import re
from datetime import datetime, timedelta

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, URLValidator
from django.db import models
from django.db.models.functions import Now
from django.utils import timezone

from completeness.alerts.masking import mask_target
from completeness.alerts.severity import CHOICES as SEVERITY_CHOICES
from completeness.alerts.severity import names as severity_names
from completeness.verdicts import DEFAULT_MODES, Mode, RuleSettings, Verdict
from completeness.verdicts.rules import net_declared
from completeness.verdicts.types import EXIT_INCOMPLETE, EXIT_OK


class Health(models.TextChoices):
    OK = "ok"
    FAILING = "failing"
    OVERDUE = "overdue"
    PAUSED = "paused"


class PauseOrigin(models.TextChoices):
    CRAWLER = "crawler", "crawler report"
    API = "api", "API"
    UI = "ui", "web page"
    CLOCK = "clock", "pause end time"
    WINDOW = "window", "maintenance window"


def validate_field_minimums(value) -> None:
    """field -> a share between 0 and 1: what the admin and the source page may store."""
    if not isinstance(value, dict):
        raise ValidationError("field minimums are an object of field name -> share between 0 and 1")
    for name, share in value.items():
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            raise ValidationError(f"field name {name!r} must be 1-100 characters")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ValidationError(f"the minimum for {name} must be a share between 0 and 1, got {share!r}")


SHARE = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class Tag(models.Model):
    name = models.SlugField(max_length=100, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class HttpUrlValidator(URLValidator):
    """Django's URL check, but a host without a dot passes: a runbook lives on an intranet host as
    often as not (https://wiki/runbooks/shop), which Django refuses for want of a top-level domain,
    and the message then told someone who had typed https:// to start with https://."""

    host_re = "(" + URLValidator.hostname_re + URLValidator.domain_re + f"(?:{URLValidator.tld_re})?" + ")"
    regex = re.compile(
        r"^(?:[a-z0-9.+-]*)://"
        r"(?:[^\s:@/]+(?::[^\s:@/]*)?@)?"
        r"(?:" + URLValidator.ipv4_re + "|" + URLValidator.ipv6_re + "|" + host_re + ")"
        r"(?::[0-9]{1,5})?"
        r"(?:[/?#][^\s]*)?"
        r"\Z",
        re.IGNORECASE,
    )


HTTP_URL = HttpUrlValidator(
    schemes=["http", "https"], message="Enter a URL that starts with http:// or https:// and names a host."
)


class HttpUrlFormField(forms.URLField):
    default_validators = [HTTP_URL]
    # A form field puts its own message for a validator's code in place of the validator's.
    default_error_messages = {"invalid": HTTP_URL.message}


class HttpUrlField(models.URLField):
    """A link a person opens from a page: http or https only. In place of URLField's own check, not
    beside it: with both, "ftp://x" was refused as "Enter a valid URL.", which it is."""

    default_validators = [HTTP_URL]


class Source(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200, blank=True)
    region = models.CharField(max_length=100, blank=True, db_index=True)
    tags = models.ManyToManyField(Tag, blank=True, related_name="sources")
    created_at = models.DateTimeField(default=timezone.now)
    # Who to wake, and what they read first: on the source page's header, as overview filters, and
    # for the alert messages to name. All optional.
    owner = models.CharField(max_length=200, blank=True, help_text="the person answerable for this crawler")
    team = models.CharField(max_length=100, blank=True, db_index=True, help_text="the team that owns this crawler")
    runbook_url = HttpUrlField(max_length=500, blank=True, help_text="what to do when it fails (http or https)")

    # Per-source rule settings (verdicts.md).
    min_completeness = models.FloatField(default=0.99, validators=SHARE)
    drop_threshold = models.FloatField(default=0.25, validators=SHARE)
    field_drop = models.FloatField(
        default=0.10, validators=SHARE, help_text="how far a field's coverage may fall below the baseline's"
    )
    field_minimums = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_field_minimums],
        help_text='field -> least coverage accepted, e.g. {"price": 0.95}; replaces the baseline floor for that field',
    )
    trend_days = models.PositiveSmallIntegerField(
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(366)],
        help_text="the trend rule compares with the best good run of this many days",
    )
    trend_min_runs = models.PositiveSmallIntegerField(
        default=3,
        validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="good runs the trend window must hold before the trend rule speaks",
    )
    learn_days = models.PositiveSmallIntegerField(
        default=56,
        # 15: the normal needs runs spanning 14 days before the judged run, and a daily source's runs of
        # the last 14 days span 13.
        validators=[MinValueValidator(15), MaxValueValidator(366)],
        help_text="the expectation learns the source's normal from the runs of this many days",
    )
    learn_min_runs = models.PositiveSmallIntegerField(
        default=10,
        validators=[MinValueValidator(5), MaxValueValidator(1000)],
        help_text="runs (over at least 14 days) before the source is judged against its own normal",
    )
    min_margin = models.FloatField(
        default=0.05,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.5)],
        help_text="the least margin between expected and the low end of normal, as a share of expected",
    )
    rule_modes = models.JSONField(
        default=dict, blank=True, help_text="rule -> enforce|observe; absent rules use the defaults"
    )
    expected_interval = models.DurationField(
        null=True,
        blank=True,
        validators=[MinValueValidator(timedelta(minutes=1)), MaxValueValidator(timedelta(days=366))],
        help_text="a report is due this often; empty: no overdue clock",
    )
    grace = models.DurationField(
        default=timedelta(hours=1),
        validators=[MinValueValidator(timedelta(0)), MaxValueValidator(timedelta(days=30))],
        help_text="how late a report may be before the source is overdue",
    )
    # How often it reports, read from its latest runs (completeness.cadence), and from when it has not
    # for QUIET_AFTER_GAPS of those gaps: the pages name a source without an overdue clock that went
    # quiet. Kept at ingest, so the overview finds them with one indexed range.
    usual_gap = models.DurationField(null=True, blank=True, editable=False)
    quiet_after = models.DateTimeField(null=True, blank=True, editable=False, db_index=True)

    # The intentional-pause switch.
    paused = models.BooleanField(default=False)
    paused_by = models.CharField(max_length=200, blank=True)
    paused_reason = models.TextField(blank=True)
    paused_since = models.DateTimeField(null=True, blank=True)
    paused_until = models.DateTimeField(null=True, blank=True)
    pause_origin = models.CharField(max_length=16, choices=PauseOrigin.choices, blank=True)

    # Latest state kept on the row, so neither the overview nor a verdict scans run history.
    # Every report rewrites these columns, so none that changes with each report is indexed: the
    # update then stays a heap-only tuple on PostgreSQL instead of writing a new entry into every
    # index of the table. The table has a row per source; its readers scan it.
    health = models.CharField(max_length=16, choices=Health.choices, default=Health.OK, db_index=True)
    health_since = models.DateTimeField(default=timezone.now)
    # Neither reference is a foreign key in the database: with no index on the column (above), the
    # database checked every deleted run against the whole sources table: 11 to 24 s per 1,000 runs
    # at 20,000 sources (bench/retention.py). Runs are deleted through the ORM only, which nulls these
    # first (on_delete), and retention never deletes the runs they point at.
    last_run = models.ForeignKey(
        "Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    # The latest of its runs that was judged (a run made while paused is not): what a failing source
    # fails for. After a failing source is paused, crawled and resumed, its last run is the paused one,
    # and the overview read that run's verdict and (empty) findings as the source's failure.
    last_judged_run = models.ForeignKey(
        "Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    # Copied from last_run onto this row: a write path reads them under the row lock, where a joined
    # run could be stale (PostgreSQL re-reads only the locked row after waiting for the lock).
    last_run_started_at = models.DateTimeField(null=True, blank=True)
    last_verdict = models.CharField(max_length=16, blank=True)
    last_report_at = models.DateTimeField(null=True, blank=True)
    baseline_run = models.ForeignKey(
        "Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    baseline_collected = models.PositiveIntegerField(null=True, blank=True)
    baseline_started_at = models.DateTimeField(null=True, blank=True)
    # The baseline run's field counts (None when it reported none): field_coverage reads no run.
    baseline_field_counts = models.JSONField(null=True, blank=True)
    # The largest collected among the good runs since the latest run that confirmed the source's size
    # (None: no good run). An upper bound of any trend window's best, so a report at or above
    # (1 - drop_threshold) times it cannot trip the trend rule and costs no query (sources.ingest.history).
    trend_ceiling = models.PositiveIntegerField(null=True, blank=True)
    # The source's normal as last fitted (completeness.verdicts.fit_state.normal_state), with the
    # instant and the settings it was fitted for: refitted from the run history at most every few
    # hours (sources.ingest.history.REFIT_AFTER), dropped when an operator accepts a baseline.
    normal_state = models.JSONField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def display_name(self) -> str:
        return self.name or self.slug

    def at_or_after_baseline(self, started_at: datetime) -> bool:
        """Whether a run started at `started_at` is no older than the source's baseline run (or there is
        none): such a run may become the baseline, and the row's baseline is the one it is judged by."""
        return self.baseline_started_at is None or started_at >= self.baseline_started_at

    def rule_settings(self) -> RuleSettings:
        return RuleSettings(
            min_completeness=self.min_completeness,
            drop_threshold=self.drop_threshold,
            field_drop=self.field_drop,
            field_minimums=dict(self.field_minimums or {}),
            trend_days=self.trend_days,
            trend_min_runs=self.trend_min_runs,
            learn_days=self.learn_days,
            learn_min_runs=self.learn_min_runs,
            min_margin=self.min_margin,
            modes={rule: Mode(mode) for rule, mode in self.rule_modes.items() if rule in DEFAULT_MODES},
        )

    def pause_expired(self, now=None) -> bool:
        return self.paused and self.paused_until is not None and self.paused_until <= (now or timezone.now())


class Run(models.Model):
    # Indexed by run_unique_per_source and run_history, which lead with the source.
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="runs", db_index=False)
    run_id = models.CharField(max_length=200)
    # sha256 of the canonical JSON body: an identical repeat is answered 200, a changed one 409.
    report_digest = models.CharField(max_length=64)
    received_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()

    exit_code = models.IntegerField(null=True, blank=True)
    crawler_verdict = models.CharField(max_length=16, blank=True)
    paused = models.BooleanField(default=False)
    pause_reason = models.TextField(blank=True)

    declared_total = models.PositiveIntegerField(null=True, blank=True)
    collected = models.PositiveIntegerField()
    written = models.PositiveIntegerField(null=True, blank=True)
    records_lost = models.PositiveIntegerField(null=True, blank=True)
    end_reason = models.CharField(max_length=100, blank=True)
    # What the source's own normal expected of this run when it was judged (verdicts.md, Expectation);
    # null while the source had none.
    expected = models.PositiveIntegerField(null=True, blank=True)
    expected_low = models.PositiveIntegerField(null=True, blank=True)
    expectation_basis = models.CharField(max_length=300, blank=True)
    expectation_runs = models.PositiveIntegerField(null=True, blank=True)
    removed = models.PositiveIntegerField(default=0)
    requests_total = models.PositiveIntegerField(null=True, blank=True)
    requests_by_class = models.JSONField(default=dict, blank=True)
    pages_expected = models.PositiveIntegerField(null=True, blank=True)
    pages_fetched = models.PositiveIntegerField(null=True, blank=True)
    pages_lost = models.PositiveIntegerField(null=True, blank=True)
    lost_urls = models.JSONField(default=list, blank=True)
    failed_batches = models.JSONField(default=list, blank=True)
    delivery_attempted = models.PositiveIntegerField(null=True, blank=True)
    delivery_delivered = models.PositiveIntegerField(null=True, blank=True)
    delivery_errors = models.JSONField(default=dict, blank=True)
    snapshot_action = models.CharField(max_length=16, blank=True)
    snapshot_rows = models.PositiveIntegerField(null=True, blank=True)
    breaker_threshold = models.FloatField(null=True, blank=True)
    breaker_min_samples = models.PositiveIntegerField(null=True, blank=True)
    breaker_peak_ratio = models.FloatField(null=True, blank=True)
    breaker_last_event = models.CharField(max_length=16, blank=True)
    pacing_backoff = models.FloatField(null=True, blank=True)
    pacing_recovery = models.FloatField(null=True, blank=True)
    outcomes = models.JSONField(default=dict, blank=True)
    outcome_rates = models.JSONField(default=dict, blank=True)
    counters = models.JSONField(default=dict, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    # field -> records that had it filled (None: the report counted no fields), the floor each field
    # was judged against and the usual coverage that floor was set from (None for paused runs and runs
    # without fields; field_usual also for runs stored before it was kept).
    field_counts = models.JSONField(null=True, blank=True)
    field_floors = models.JSONField(null=True, blank=True)
    field_usual = models.JSONField(null=True, blank=True)
    raw = models.JSONField()

    verdict = models.CharField(max_length=16, choices=[(v.value, v.value) for v in Verdict])
    silent = models.BooleanField(default=False)
    findings = models.JSONField(default=list, blank=True)
    completeness = models.FloatField(null=True, blank=True)
    completeness_floor = models.FloatField(
        null=True, blank=True, help_text="the least share of its declared total the run was complete at"
    )
    baseline_collected = models.PositiveIntegerField(null=True, blank=True, help_text="what drop compared with")
    accepted_as_baseline = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "run_id"], name="run_unique_per_source"),
        ]
        indexes = [
            models.Index(fields=["source", "-started_at", "-id"], name="run_history"),
            models.Index(fields=["silent", "-received_at"], name="run_silent_recent"),
            # The overview's fleet view reads a week of incomplete runs, about 2% of them: a partial
            # index costs ingest nothing for complete runs (sources/pages/selectors/fleet.py).
            models.Index(
                fields=["-started_at"], name="run_incomplete_recent", condition=models.Q(verdict="incomplete")
            ),
        ]
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"{self.source_id}/{self.run_id}"

    @property
    def declared_expected(self) -> int | None:
        """What a run that declared a total had to collect (the `declared_total` rule's denominator)."""
        return net_declared(self.declared_total, self.removed)

    @property
    def exit_code_advised(self) -> int:
        return EXIT_INCOMPLETE if self.verdict == Verdict.INCOMPLETE else EXIT_OK

    @property
    def enforced_rules(self) -> list[str]:
        return [f["rule"] for f in self.findings if f["mode"] == Mode.ENFORCE]

    @property
    def observed_rules(self) -> list[str]:
        return [f["rule"] for f in self.findings if f["mode"] == Mode.OBSERVE]

    @property
    def acceptable_as_baseline(self) -> bool:
        """Incomplete and collected something: what sources.ingest.baselines accepts, for the pages to
        offer (a run that collected nothing cannot be the new normal)."""
        return self.verdict == Verdict.INCOMPLETE and bool(self.collected)

    @property
    def pages_unaccounted(self) -> int:
        """Listing pages the crawler expected and neither fetched nor reported lost (a crawl cut short
        by a crawler that counts no unfetched page as lost); no rule judges it, the run page shows it."""
        if self.pages_expected is None or self.pages_fetched is None:
            return 0
        return max(self.pages_expected - self.pages_fetched - (self.pages_lost or 0), 0)


class FailureWindowEvent(models.Model):
    # Indexed by breaker_by_source_time, which leads with the source.
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="breaker_events", db_index=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="breaker_events")
    at = models.DateTimeField()
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=16)
    ratio = models.FloatField(null=True, blank=True)
    samples = models.PositiveIntegerField(null=True, blank=True)
    sent = models.PositiveIntegerField(null=True, blank=True)
    bad = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["source", "at"], name="breaker_by_source_time")]
        ordering = ["at", "seq", "id"]

    # Ids, not the source's slug: an admin list of these would otherwise query each source.
    def __str__(self) -> str:
        return f"{self.kind} at {self.at:%Y-%m-%d %H:%M:%S} (run {self.run_id})"


class ProxyTransition(models.Model):
    # Indexed by proxy_by_source, which leads with the source.
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="proxy_transitions", db_index=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="proxy_transitions")
    proxy = models.CharField(max_length=200)
    at = models.DateTimeField()
    from_state = models.CharField(max_length=16)
    to_state = models.CharField(max_length=16)
    reason = models.CharField(max_length=32)
    stage = models.CharField(max_length=16)
    until = models.DateTimeField(null=True, blank=True)
    # Its run's received_at, copied at ingest: `at` is the crawler's word and may lie ahead, so the
    # pages window transitions by when they arrived (a future-dated one would stay in "the last 30
    # days" forever), and this index replaces the one on `at`.
    received_at = models.DateTimeField(db_default=Now())

    class Meta:
        indexes = [
            models.Index(fields=["source", "proxy", "at"], name="proxy_by_source"),
            models.Index(fields=["proxy", "at"], name="proxy_by_id_time"),
            models.Index(fields=["received_at"], name="proxy_by_arrival"),
        ]
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.proxy}: {self.from_state} -> {self.to_state} ({self.reason})"


class ProxyCurrent(models.Model):
    """Each proxy's latest transition, kept at ingest (sources/ingest/proxy_current.py).

    The proxies page lists and counts proxies by their current state. Picking each proxy's latest
    out of every transition took 1.3 s per query at 1.1 million transitions; this holds one row per
    proxy. A run deleted by retention takes its transitions, and a proxy whose latest goes with them
    (seen last over RETAIN_RUNS_DAYS ago) leaves the page.
    """

    proxy = models.CharField(max_length=200, primary_key=True)
    transition = models.OneToOneField(ProxyTransition, on_delete=models.CASCADE, related_name="current")
    # least(at, received_at): the order of the pages (sources/pages/selectors/proxies.py, MOMENT).
    moment = models.DateTimeField()

    def __str__(self) -> str:
        return self.proxy


class PauseEvent(models.Model):
    class Action(models.TextChoices):
        PAUSE = "pause"
        RESUME = "resume"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="pause_events")
    action = models.CharField(max_length=8, choices=Action.choices)
    origin = models.CharField(max_length=16, choices=PauseOrigin.choices)
    actor = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    until = models.DateTimeField(null=True, blank=True)
    at = models.DateTimeField(default=timezone.now)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["source", "-at"], name="pause_history")]
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor or self.origin} at {self.at:%Y-%m-%d %H:%M:%S}"


class BaselineAcceptance(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="baseline_acceptances")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="acceptances")
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    accepted_by_name = models.CharField(max_length=200, blank=True)
    accepted_at = models.DateTimeField(default=timezone.now)
    previous_baseline = models.PositiveIntegerField(null=True, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["-accepted_at"]

    def __str__(self) -> str:
        return f"run {self.run_id} accepted at {self.accepted_at:%Y-%m-%d %H:%M:%S}"


class Flip(models.Model):
    """A change of a source's health: what alerts are sent on, never on each run."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="flips")
    old_health = models.CharField(max_length=16, choices=Health.choices)
    new_health = models.CharField(max_length=16, choices=Health.choices)
    at = models.DateTimeField(default=timezone.now)
    # What caused it: a run, or the clock (overdue, a pause running out) when null.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="flips")
    cause = models.CharField(max_length=200, blank=True)
    # False for a change of health caused by history (a report received long after its run): nobody
    # was told yet; the minute job tells the channels where the source stands (sources.alerts.history).
    announced = models.BooleanField(default=True)

    class Meta:
        indexes = [
            models.Index(fields=["source", "-at"], name="flip_history"),
            models.Index(fields=["-at"], name="flip_recent"),
            models.Index(fields=["at"], name="flip_unannounced", condition=models.Q(announced=False)),
        ]
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.old_health} -> {self.new_health} at {self.at:%Y-%m-%d %H:%M:%S}"


class ApiToken(models.Model):
    name = models.CharField(max_length=100)
    # The public half of the token, for lookup; only a hash of the whole is stored.
    key_id = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    all_sources = models.BooleanField(default=False)
    sources = models.ManyToManyField(Source, blank=True, related_name="tokens")
    # Posting reports (and pausing, resuming, acknowledging) is every token's; changing how its sources
    # are judged (settings, maintenance windows) is not: a leaked or misconfigured crawler token could
    # otherwise loosen the thresholds that watch it. Tokens made before 0029 were given it, as they had it.
    may_configure = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def scope(self) -> str:
        if self.all_sources:
            return "all sources"
        return _named(list(s.slug for s in self.sources.all())) or "no sources"

    @property
    def powers(self) -> str:
        # What the token may do beyond reporting, in the words its lists and the 403 use.
        if self.may_configure:
            return "may change settings and plan maintenance windows"
        return "may not change settings or plan maintenance windows"


def _named(parts: list[str], shown: int = 20) -> str:
    # A scope may name thousands of sources; the lists that show it stay a line or two.
    more = f" and {len(parts) - shown:,} more" if len(parts) > shown else ""
    return ", ".join(parts[:shown]) + more


class Channel(models.Model):
    """Where alerts go. The target (an address or a webhook URL) is a secret: pages show it masked."""

    class Kind(models.TextChoices):
        EMAIL = "email"
        SLACK = "slack"
        WEBHOOK = "webhook"
        HEARTBEAT = "heartbeat", "heartbeat (called after complete runs)"
        # On-call: one incident (PagerDuty) or alert (Opsgenie) per source, opened and closed with it.
        PAGERDUTY = "pagerduty", "PagerDuty (Events API v2 integration key)"
        OPSGENIE = "opsgenie", "Opsgenie (API integration key)"
        # Teams, Discord, Telegram, Mattermost and the long tail: one Apprise URL each.
        APPRISE = "apprise", "Apprise URL (Teams, Discord, Telegram, Mattermost, ...)"

    class Method(models.TextChoices):
        # HTTP's own spelling: without a label Django titles the name, and the form offered "Get".
        GET = "GET", "GET"
        POST = "POST", "POST"

    name = models.CharField(max_length=100, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    target = models.CharField(
        max_length=2000,
        help_text="email addresses (comma-separated), a URL, an Apprise URL, or an on-call integration key",
    )
    secret = models.CharField(max_length=200, blank=True, help_text="webhook only: signs the body with HMAC-SHA256")
    method = models.CharField(
        max_length=4, choices=Method.choices, default=Method.GET, help_text="heartbeat only: how the URL is called"
    )
    # Scope, as for API tokens: all sources, or the listed sources plus every source carrying a listed tag.
    all_sources = models.BooleanField(default=True)
    sources = models.ManyToManyField(Source, blank=True, related_name="channels")
    tags = models.ManyToManyField(Tag, blank=True, related_name="channels")
    # A permanent refusal (a 404 webhook) marks the channel broken until a delivery succeeds again.
    broken = models.BooleanField(default=False)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # Email and Slack channels send at most one alert message per grouping window: the worker that
    # moves this forward (a conditional UPDATE) sends; alerts arriving before it are held and go
    # out together when it comes.
    next_send_at = models.DateTimeField(null=True, blank=True)
    remind_every = models.DurationField(
        null=True,
        blank=True,
        help_text="say again that a source is still failing or overdue this often, until acknowledged; empty: never",
    )
    # Routing (completeness.alerts.severity): the least severity this channel hears, and sources picked
    # by owner or team beside those picked by slug or tag (names separated by commas).
    min_severity = models.CharField(
        max_length=16,
        choices=SEVERITY_CHOICES,
        default="info",
        help_text="the least severity this channel hears; recoveries follow the alerts it heard",
    )
    owners = models.CharField(
        max_length=500, blank=True, help_text="also the sources of these owners (separated by commas)"
    )
    # The weekly digest (email and Slack): wanted or not, and when the last one was written (a claim,
    # as next_send_at is: of two schedulers, one writes it).
    weekly_digest = models.BooleanField(default=False, help_text="email and Slack: each covered source's week")
    digest_sent_at = models.DateTimeField(null=True, blank=True)
    teams = models.CharField(
        max_length=500, blank=True, help_text="also the sources of these teams (separated by commas)"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["kind", "name", "id"]

    def __str__(self) -> str:
        return self.name or f"{self.kind} {self.masked_target}"

    @property
    def hears(self) -> str:
        """What the channel is told, in words: a heartbeat is called after complete runs and hears no
        alert, whatever its minimum severity (it read "hearing everything (also channel breakages)")."""
        if self.kind == self.Kind.HEARTBEAT:
            return "a call after each complete run, no alerts"
        return self.get_min_severity_display()

    @property
    def masked_target(self) -> str:
        return mask_target(self.target)

    @property
    def scope(self) -> str:
        if self.all_sources:
            return "all sources"
        parts = [s.slug for s in self.sources.all()] + [f"tag {t.name}" for t in self.tags.all()]
        parts += [f"owner {name}" for name in sorted(severity_names(self.owners))]
        parts += [f"team {name}" for name in sorted(severity_names(self.teams))]
        return _named(parts) or "no sources"


class PagingIncident(models.Model):
    """An incident a paging channel (PagerDuty, Opsgenie) holds open for one or more sources: a storm is
    one incident (completeness.alerts.paging decides), resolved when its last source recovers."""

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="paging_incidents")
    key = models.CharField(max_length=200, help_text="PagerDuty's dedup_key, Opsgenie's alias")
    opened_at = models.DateTimeField()
    last_joined_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    members = models.JSONField(default=list, help_text="slugs of the sources still in trouble")
    everyone = models.JSONField(default=list, help_text="slugs of every source it held")

    class Meta:
        indexes = [models.Index(fields=["channel", "closed_at"], name="paging_incident_open")]

    def __str__(self) -> str:
        return f"{self.key} on channel #{self.channel_id}"


class Notification(models.Model):
    """The outbox: one message for one channel, written in the transaction of what caused it."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        SENT = "sent"
        RETRYING = "retrying"
        FAILED = "failed"
        # A newer notification for the same source and channel made it stale: never sent.
        SUPERSEDED = "superseded"

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="notifications")
    source = models.ForeignKey(Source, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications")
    flip = models.ForeignKey(Flip, null=True, blank=True, on_delete=models.SET_NULL, related_name="notifications")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="notifications")
    kind = models.CharField(max_length=32)
    # What happened, frozen when it happened; each channel renders it when it sends.
    event = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Bumped by every state change: a claim is an UPDATE conditional on (status, version).
    version = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.TextField(blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="outbox_due",
                condition=models.Q(status__in=["pending", "retrying", "sending"]),
            ),
            models.Index(fields=["-created_at", "-id"], name="notification_recent"),
            models.Index(fields=["channel", "-created_at"], name="notification_by_channel"),
            # A channel's lane (sources.alerts.lanes): what is in flight or due for it.
            models.Index(
                fields=["channel", "next_attempt_at"],
                name="outbox_by_channel",
                condition=models.Q(status__in=["pending", "retrying", "sending"]),
            ),
            models.Index(fields=["source", "-created_at"], name="notification_by_source"),
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} -> {self.channel} ({self.status})"


class RetentionMark(models.Model):
    """How far a pass of the prune job got through the runs, by id (sources.services.retention).

    Trimming a run keeps the row, so without a mark each pass would read again every run it trimmed
    before: the whole table, every day.
    """

    name = models.CharField(max_length=32, unique=True)
    last_id = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name} up to run {self.last_id}"


class Acknowledgement(models.Model):
    """An operator saying "I have it": no reminders about the source until its health changes again.

    It holds for the problem it was given for, the one that started at health_since, and lapses with
    the next change of health (a recovery, or a different problem), so no one has to clear it.
    """

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="acknowledgements")
    health = models.CharField(max_length=16, choices=Health.choices)
    health_since = models.DateTimeField()
    by = models.CharField(max_length=200)
    note = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["source", "health_since"], name="ack_by_episode")]
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.source_id} {self.health} acknowledged by {self.by}"


class JobRun(models.Model):
    """When each periodic job last ran (sources.jobs records it): a stopped task cluster or beat shows
    as a job whose last run grows old, on /alerts/, /readyz and /metrics. A row per job, updated in place."""

    name = models.CharField(max_length=32, unique=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    # Empty when the last run finished without raising.
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.name} last started {self.started_at}"


class MaintenanceWindow(models.Model):
    """A pause planned ahead: from starts_at to ends_at (and, if weekly, the same hours every week
    after), for the listed sources, every source carrying a listed tag, and every source of the region.

    The clock job opens each occurrence by pausing the sources it covers until its end (origin
    "window"), so a window silences and keeps runs out of the baseline exactly as a pause does, and
    lifts itself as a pause with an end time does (sources.services.windows).
    """

    name = models.CharField(max_length=100)
    reason = models.CharField(max_length=500, blank=True)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    weekly = models.BooleanField(default=False)
    sources = models.ManyToManyField(Source, blank=True, related_name="maintenance_windows")
    tags = models.ManyToManyField(Tag, blank=True, related_name="maintenance_windows")
    region = models.CharField(max_length=100, blank=True)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["starts_at", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({'weekly from ' if self.weekly else ''}{self.starts_at:%Y-%m-%d %H:%M} UTC)"

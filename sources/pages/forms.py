"""Forms of the operator pages: every query parameter and post is validated here, so bad input is a
message or an ignored filter, never a 500."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import dateparse, timezone

from completeness.report import ProxyState
from sources.models import Health, HttpUrlFormField, Source
from sources.pages.selectors.overview import OverviewFilters
from sources.pages.selectors.proxies import ProxyFilters
from sources.services import pausing
from sources.services.rule_modes import switchable_mode


class OverviewFilterForm(forms.Form):
    health = forms.ChoiceField(required=False, choices=[("", "any health"), *Health.choices])
    region = forms.CharField(required=False, max_length=100)
    tag = forms.CharField(required=False, max_length=100)
    owner = forms.CharField(required=False, max_length=200)
    team = forms.CharField(required=False, max_length=100)
    silent = forms.BooleanField(required=False, label="silent only")
    q = forms.CharField(required=False, max_length=200, label="search")

    def filters(self) -> OverviewFilters:
        # An invalid field is dropped, the valid ones still apply: a stale bookmark still shows a page.
        data = (
            self.cleaned_data
            if self.is_valid()
            else {name: value for name, value in getattr(self, "cleaned_data", {}).items() if name not in self.errors}
        )
        return OverviewFilters(
            health=data.get("health") or "",
            region=(data.get("region") or "").strip(),
            tag=(data.get("tag") or "").strip(),
            owner=(data.get("owner") or "").strip(),
            team=(data.get("team") or "").strip(),
            silent_only=bool(data.get("silent")),
            q=(data.get("q") or "").strip(),
        )


class ProxyFilterForm(forms.Form):
    pool = forms.CharField(required=False, max_length=200)
    state = forms.ChoiceField(
        required=False, choices=[("", "any state"), *((s, s.replace("_", " ")) for s in get_args(ProxyState))]
    )
    lost = forms.BooleanField(required=False, label="lost by mistake only")

    def filters(self) -> ProxyFilters:
        # As on the overview: an invalid field (a NUL in the pool, an unknown state) is dropped.
        data = (
            self.cleaned_data
            if self.is_valid()
            else {name: value for name, value in getattr(self, "cleaned_data", {}).items() if name not in self.errors}
        )
        return ProxyFilters(
            pool=data.get("pool") or "", state=data.get("state") or "", lost_only=bool(data.get("lost"))
        )


class PauseForm(forms.Form):
    reason = forms.CharField(
        max_length=pausing.MAX_REASON,
        widget=forms.TextInput(attrs={"placeholder": "why (shown to everyone)"}),
    )
    until = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="optional, UTC; the pause lifts itself then",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The picker shows the browser's own date format under a label that says UTC: the time now in
        # UTC beside it is what tells someone two hours east that 09:00 is not their 09:00.
        now = timezone.now().astimezone(UTC)
        self.fields["until"].help_text = f"optional, UTC (now {now:%Y-%m-%d %H:%M} UTC); the pause lifts itself then"

    def clean_until(self) -> datetime | None:
        until: datetime | None = self.cleaned_data.get("until")
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


def format_share(value: float | None) -> str:
    """0.95 as "95%": what an operator reads and types back."""
    if value is None:
        return ""
    return f"{value * 100:.4g}%"


def parse_share(text: str, maximum: float = 1.0) -> float:
    """ "95%", "95 %", "0.95" or ".95" as 0.95; ValueError with a sentence an operator can act on.
    `maximum`: the most the setting may be (min_margin's is 50%), named in the error as a percentage."""
    text = text.strip()
    percent = text.endswith("%")
    number = text[:-1].strip() if percent else text
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"“{text}” is not a number: write 95% or 0.95") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"“{text}” is not a number: write 95% or 0.95")
    if percent:
        value /= 100
    elif value > 1:
        # "95" could mean 95% or a typo of 0.95: asking is cheaper than guessing.
        raise ValueError(f"{text} is more than 1: write {text}% or {value / 100:g}")
    elif value == 1:
        # So could "1": a fraction (100%) to some, one percent to others; taken as 100% it made every
        # run below 100% incomplete, and only the saved page's numbers showed it.
        raise ValueError(f"{text} could mean 100% or 1%: write 100% or 1%")
    if not 0 <= value <= maximum:
        # In the form's own unit: "less than or equal to 0.5" answered a field that speaks in percent.
        raise ValueError(f"“{text}” must lie between 0% and {format_share(maximum)}")
    return round(value, 6)


def _as_shown(text: Any) -> str:
    # A textarea posts its lines with \r\n, and a browser may trim or pad them.
    return "\n".join(line.strip() for line in str(text if text is not None else "").strip().splitlines())


class ShownAsTextMixin:
    """A field whose value is shown rounded (a share stored as 0.99996 reads "100%"): posted back as
    shown, it is unchanged, so saving the form keeps the stored value rather than its rounding."""

    def has_changed(self, initial: Any, data: Any) -> bool:
        if _as_shown(data) == _as_shown(self.prepare_value(initial)):  # type: ignore[attr-defined]
            return False
        return super().has_changed(initial, data)  # type: ignore[misc, no-any-return]


class ShareField(ShownAsTextMixin, forms.Field):
    """A share between 0 and `max_value` (1), typed as a percentage or a fraction."""

    def __init__(self, *, max_value: float = 1.0, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 7, "inputmode": "decimal", "maxlength": 20}))
        super().__init__(**kwargs)
        self.max_value = max_value

    def prepare_value(self, value: Any) -> Any:
        return format_share(value) if isinstance(value, (int, float)) else value

    def to_python(self, value: Any) -> float | None:
        text = str(value).strip() if value is not None else ""
        if not text:
            return None
        try:
            return parse_share(text, self.max_value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None


MAX_FIELDS = 200  # as many as a report may count (run-report-v1.md)


def parse_setting_lines(
    text: str,
    *,
    key: str,
    value: str,
    example: str,
    read: Callable[[str, str], Any],
    name_of: Callable[[str], str] = str,
) -> tuple[dict[str, Any], list[str]]:
    """One `name = value` (or `name: value`) per line; blank lines and `#` comments are skipped.

    `read(name, value)` gives the value or raises ValueError saying what is wrong; `name_of` gives
    the name as stored, so two spellings of one name are one name. Every bad line is named by its
    number, so one paste is fixed in one go: the values and the errors are returned.
    """
    values: dict[str, Any] = {}
    seen_on: dict[str, int] = {}
    errors: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        # The last separator splits: a field name may hold one, a share or a mode never does.
        cut = max(line.rfind("="), line.rfind(":"))
        if cut < 0:
            errors.append(f"line {number} “{raw.strip()}”: write it as {example}")
            continue
        name, given = name_of(line[:cut].strip()), line[cut + 1 :].strip()
        if name and not given:
            errors.append(f"line {number} “{raw.strip()}”: no {value} after the {key} name")
            continue
        try:
            parsed = read(name, given)
        except ValueError as exc:
            errors.append(f"line {number} “{raw.strip()}”: {exc}")
            continue
        if name in seen_on:
            errors.append(f"line {number}: {name} already has a {value} on line {seen_on[name]}")
            continue
        seen_on[name] = number
        values[name] = parsed
    return values, errors


def _field_minimum(name: str, share: str) -> float:
    if not name or len(name) > 100:
        raise ValueError("the field name must be 1-100 characters")
    return parse_share(share)


def parse_field_minimums(text: str) -> dict[str, float]:
    """One `field = 95%` per line (parse_setting_lines); raises ValidationError naming every bad line."""
    minimums, errors = parse_setting_lines(
        text, key="field", value="minimum", example="field = 95%", read=_field_minimum
    )
    if len(minimums) > MAX_FIELDS:
        errors.append(f"{len(minimums)} fields: at most {MAX_FIELDS}, as many as a report may count")
    if errors:
        raise forms.ValidationError(errors)
    return minimums


def format_field_minimums(minimums: dict[str, Any] | None) -> str:
    return "\n".join(f"{name} = {format_share(share)}" for name, share in sorted((minimums or {}).items()))


def _rule_mode(rule: str, mode: str) -> str:
    # Typed by hand, where "Trend = Observe" means what it says; the page's switch posts exact values.
    return switchable_mode(rule, mode.lower()).value


def parse_rule_modes(text: str) -> dict[str, str]:
    """One `rule = observe` per line: only rules that exist and may be switched, only modes that exist
    (a mode ingest cannot read made every report of the source answer 500)."""
    modes, errors = parse_setting_lines(
        text, key="rule", value="mode", example="rule = observe", read=_rule_mode, name_of=str.lower
    )
    if errors:
        raise forms.ValidationError(errors)
    return modes


def format_rule_modes(modes: dict[str, Any] | None) -> str:
    return "\n".join(f"{rule} = {mode}" for rule, mode in sorted((modes or {}).items()))


class SettingLinesField(forms.CharField):
    """A {name: value} object in the model, edited as lines of text (`parse` and `format` below)."""

    parse: Callable[[str], dict[str, Any]]
    format: Callable[[dict[str, Any] | None], str]
    placeholder = ""
    help = ""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", self.help)
        # Not sample values, which an empty box would seem to hold: what empty means.
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4, "cols": 32, "placeholder": self.placeholder}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return type(self).format(value) if isinstance(value, dict) else value

    # A text field whose Python value is not text: Django's own design, which the stubs type as str.
    def to_python(self, value: Any) -> dict[str, Any]:  # type: ignore[override]
        text = super().to_python(value) or ""
        # CharField's own NUL check runs on the parsed object, whose repr shows a NUL escaped.
        if "\x00" in text:
            raise forms.ValidationError("Null characters are not allowed.", code="null_characters_not_allowed")
        return type(self).parse(text)

    def has_changed(self, initial: Any, data: Any) -> bool:
        if _as_shown(data) == _as_shown(self.prepare_value(initial)):
            return False
        try:
            return self.to_python(data) != (initial or {})
        except forms.ValidationError:
            return True


class FieldMinimumsField(SettingLinesField):
    """Per-field minimums: `price = 95%` per line."""

    parse = staticmethod(parse_field_minimums)
    format = staticmethod(format_field_minimums)
    placeholder = "none set: each field's floor comes from its usual coverage (field_drop below it)"
    help = "one field per line, e.g. price = 95% or price = 0.95; replaces the learned floor for that field"


class RuleModesField(SettingLinesField):
    """Per-rule modes: `trend = observe` per line; a rule not named keeps its default."""

    parse = staticmethod(parse_rule_modes)
    format = staticmethod(format_rule_modes)
    placeholder = "none set: every rule in its default mode"
    help = (
        "one rule per line, e.g. trend = observe or delivery = enforce; rules not named keep their default "
        "(delivery and pacing_equilibrium observe, the others enforce; snapshot_overwritten always enforces)"
    )


DURATION_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
# "6h" as a schedule is written, and "2 days 4 h" or "45 min" as the pages write a duration back: a unit
# is read by its first letter, and only these spellings of it.
DURATION_PART = re.compile(r"(\d+)\s*(days?|d|hours?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])")


def parse_duration(text: str) -> timedelta | None:
    """'6h', '1d 12h', '90m' as an operator writes a schedule, or '2 days 4 h' as the pages write it;
    empty is None. A bare number is refused: minutes or hours, nobody can tell."""
    text = text.strip().lower()
    if not text:
        return None
    if ":" in text and (clock := dateparse.parse_duration(text)) is not None:
        # Django's own "1 06:00:00", as the admin showed durations before it took this format.
        return clock
    if DURATION_PART.sub("", text).strip():
        raise forms.ValidationError(f"“{text}”: write it as e.g. 6h, 1d 12h or 90m")
    return timedelta(seconds=sum(int(n) * DURATION_UNITS[unit[0]] for n, unit in DURATION_PART.findall(text)))


def format_duration(value: timedelta | None) -> str:
    if value is None:
        return ""
    seconds = int(value.total_seconds())
    parts: list[str] = []
    for unit, size in DURATION_UNITS.items():
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return " ".join(parts)


class DurationTextField(ShownAsTextMixin, forms.CharField):
    def __init__(self, *, limits_of: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.TextInput(attrs={"style": "width: 8em", "placeholder": "e.g. 6h"}))
        super().__init__(**kwargs)
        # The model column's own bounds, checked here to say them as the field is typed: the model's
        # validators said "greater than or equal to 0:01:00" of a field written as 6h or 90m.
        limits = _limits(limits_of) if limits_of else {}
        self.min_duration: timedelta | None = limits.get("min_value")
        self.max_duration: timedelta | None = limits.get("max_value")

    def validate(self, value: Any) -> None:
        super().validate(value)
        if value is None or (self.min_duration is None and self.max_duration is None):
            return
        low, high = self.min_duration or timedelta(0), self.max_duration
        if value < low or (high is not None and value > high):
            raise self.out_of_bounds(format_duration(value))

    def out_of_bounds(self, typed: str) -> forms.ValidationError:
        low, high = self.min_duration or timedelta(0), self.max_duration
        span = (
            f"between {format_duration(low)} and {format_duration(high)}"
            if high
            else f"at least {format_duration(low)}"
        )
        return forms.ValidationError(f"“{typed}” must lie {span}")

    def prepare_value(self, value: Any) -> Any:
        return format_duration(value) if isinstance(value, timedelta) else value

    # As FieldMinimumsField: text in the form, a duration in Python.
    def to_python(self, value: Any) -> timedelta | None:  # type: ignore[override]
        text = super().to_python(value) or ""
        try:
            return parse_duration(text)
        except OverflowError:
            # Past what a timedelta holds (999,999,999 days): "99999999999d" answered 500.
            if self.max_duration is None:
                raise forms.ValidationError(f"“{text.strip()}” is too long") from None
            raise self.out_of_bounds(text.strip()) from None


SETTING_HELP = {
    "expected_interval": "overdue: a report is due this often (e.g. 6h, 1d); empty: no overdue clock",
    "grace": "overdue: how late a report may be before the source is overdue (e.g. 1h, 0m)",
    "min_completeness": "declared_total: the least share of the declared total a run must bring",
    "drop_threshold": "drop and trend: how far below expected (or the baseline, or the trend's best) a run may fall",
    "field_drop": (
        "field_coverage: how many points below its usual (or the baseline's) coverage a field may fall;"
        " a field usually in fewer than 80% of records is optional: only its emptying counts"
    ),
    "trend_days": "trend: compare with the best good run of this many days",
    "trend_min_runs": "trend: good runs the window must hold before the rule speaks",
    "learn_days": "expectation: learn the source's own normal from the runs of this many days",
    "learn_min_runs": "expectation: runs (over at least 14 days) before the source is judged against its normal",
    "min_margin": "expectation: the least margin between expected and the low end of normal (at most 50%)",
    "owner": "who answers for this crawler (shown in the header and on the overview)",
    "team": "the team that owns it (an overview filter)",
    "runbook_url": "what to do when it fails: an http(s) link shown in the header",
}


def _limits(name: str) -> dict[str, Any]:
    """The model's own bounds, so the page and the admin refuse the same values."""
    limits = {}
    field = Source._meta.get_field(name)
    assert isinstance(field, models.Field), f"{name} is a column of Source"
    for validator in field.validators:
        if isinstance(validator, MinValueValidator):
            limits["min_value"] = validator.limit_value
        elif isinstance(validator, MaxValueValidator):
            limits["max_value"] = validator.limit_value
    return limits


def share_limit(name: str) -> float:
    """The most a share setting may be, from the model's own validator (min_margin's 50%)."""
    return float(_limits(name).get("max_value", 1.0))


class SourceSettingsForm(forms.Form):
    """The rule settings of one source, as staff edit them on its page."""

    min_completeness = ShareField(help_text=SETTING_HELP["min_completeness"])
    drop_threshold = ShareField(help_text=SETTING_HELP["drop_threshold"])
    field_drop = ShareField(help_text=SETTING_HELP["field_drop"])
    field_minimums = FieldMinimumsField(label="field minimums")
    trend_days = forms.IntegerField(
        help_text=SETTING_HELP["trend_days"],
        **_limits("trend_days"),
        widget=forms.NumberInput(attrs={"style": "width: 6em"}),
    )
    trend_min_runs = forms.IntegerField(
        help_text=SETTING_HELP["trend_min_runs"],
        **_limits("trend_min_runs"),
        widget=forms.NumberInput(attrs={"style": "width: 6em"}),
    )
    learn_days = forms.IntegerField(
        help_text=SETTING_HELP["learn_days"],
        **_limits("learn_days"),
        widget=forms.NumberInput(attrs={"style": "width: 6em"}),
    )
    learn_min_runs = forms.IntegerField(
        help_text=SETTING_HELP["learn_min_runs"],
        **_limits("learn_min_runs"),
        widget=forms.NumberInput(attrs={"style": "width: 6em"}),
    )
    min_margin = ShareField(help_text=SETTING_HELP["min_margin"], max_value=share_limit("min_margin"))
    expected_interval = DurationTextField(
        required=False, help_text=SETTING_HELP["expected_interval"], limits_of="expected_interval"
    )
    grace = DurationTextField(help_text=SETTING_HELP["grace"], limits_of="grace")
    owner = forms.CharField(required=False, max_length=200, help_text=SETTING_HELP["owner"])
    team = forms.CharField(required=False, max_length=100, help_text=SETTING_HELP["team"])
    runbook_url = HttpUrlFormField(
        required=False,
        max_length=500,
        assume_scheme="https",
        help_text=SETTING_HELP["runbook_url"],
        label="runbook URL",
    )

    @classmethod
    def of(cls, source: Source, data: Any = None) -> SourceSettingsForm:
        return cls(data, initial={name: getattr(source, name) for name in cls.base_fields})

    def changed_values(self) -> dict[str, Any]:
        """Only what was edited: a field left as shown keeps its stored value (the page rounds shares
        to four digits, and the settings API takes any precision)."""
        return {name: self.cleaned_data[name] for name in self.changed_data}

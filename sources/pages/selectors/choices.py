"""The overview's filter lists: regions, tags, owners and teams.

At 20,000 sources the owner and team DISTINCT alone took 13-17 ms of the overview's ~150, and the
lists change only when someone edits a source's region, owner or team, or adds or removes a tag. So
they are kept in the cache until such an edit (the receivers below, connected by the app) or for
CHOICES_CACHE_SECONDS at most, for a write that sends no signal (a queryset's `update()`).

Without the cache they are read from the database for each overview: slower, never wrong. An edit
made while the cache cannot be reached is not forgotten there, so a cache that comes back holding
the lists shows the old ones for CHOICES_CACHE_SECONDS at most, as after an `update()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from completeness.web import shared_cache
from sources.models import Source, Tag

CHOICES_KEY = "overview-filter-choices"
CHOICES_CACHE_SECONDS = 600
_SOURCE_FIELDS = frozenset({"region", "owner", "team"})


@dataclass(frozen=True)
class FilterChoices:
    regions: list[str]
    tags: list[str]
    owners: list[str]
    teams: list[str]


def filter_choices() -> FilterChoices:
    return shared_cache.kept(
        CHOICES_KEY, FilterChoices, _read_choices, CHOICES_CACHE_SECONDS, "overview filter lists read anew"
    )


def _read_choices() -> FilterChoices:
    regions = Source.objects.exclude(region="").order_by("region").values_list("region", flat=True).distinct()
    # One query over the sources that name an owner or a team, for both lists.
    pairs = Source.objects.exclude(owner="", team="").order_by().values_list("owner", "team").distinct()
    owners, teams = set(), set()
    for owner, team in pairs:
        owners.add(owner)
        teams.add(team)
    return FilterChoices(
        regions=list(regions),
        tags=list(Tag.objects.order_by("name").values_list("name", flat=True)),
        owners=sorted(owners - {""}),
        teams=sorted(teams - {""}),
    )


def forget_filter_choices(**_: Any) -> None:
    # After the commit: a request reading the lists before it would keep the old ones in the cache.
    transaction.on_commit(
        lambda: shared_cache.attempt(lambda: cache.delete(CHOICES_KEY), None, "edited filter lists left in the cache")
    )


def _source_saved(*, update_fields: frozenset[str] | None = None, **_: Any) -> None:
    if update_fields is None or not _SOURCE_FIELDS.isdisjoint(update_fields):
        forget_filter_choices()


def connect_receivers() -> None:
    post_save.connect(_source_saved, sender=Source, dispatch_uid="choices.source_saved")
    post_delete.connect(forget_filter_choices, sender=Source, dispatch_uid="choices.source_deleted")
    post_save.connect(forget_filter_choices, sender=Tag, dispatch_uid="choices.tag_saved")
    post_delete.connect(forget_filter_choices, sender=Tag, dispatch_uid="choices.tag_deleted")

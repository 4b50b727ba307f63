"""What keeps the admin's lists of history tables (runs, flips, notifications, pause events,
acknowledgements, acceptances) bounded however long the history grows.

Django's changelist counts every row of the table twice (the filtered count for the pager, the full
count beside it) and its change forms render a <select> of every row a foreign key may name: a form
listing every run. Here the pager counts at most COUNT_CAP rows, the full count is not taken, lists
are ordered by the primary key (an index walk, not a sort of the table), and foreign keys to big
tables are typed as ids. Deleting a source or a run asks for confirmation with counts of what goes
with it, not a list of every row (CountedDeletion).
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin
from django.contrib.auth import get_permission_codename
from django.core.paginator import Paginator
from django.db import models
from django.db.models import QuerySet
from django.utils.functional import cached_property

COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Counts up to COUNT_CAP rows (`SELECT COUNT(*) FROM (… LIMIT n)`): past that the pager stops at
    page COUNT_CAP / per_page, and older rows are found by filtering or searching."""

    @cached_property
    def count(self) -> int:
        # The admin pages a queryset; the stubs' paginator takes any sliceable sequence, which has no count().
        rows: QuerySet[Any] = self.object_list[:COUNT_CAP]  # type: ignore[assignment]
        return rows.count()


class HistoryAdmin(admin.ModelAdmin):
    paginator = CappedCountPaginator
    show_full_result_count = False
    ordering = ["-id"]
    # A click on a column header would sort the whole table by an unindexed column.
    sortable_by: ClassVar[list[str]] = []
    list_per_page = 100


class CountedDeletion:
    """The confirmation before deleting sources or runs counts what goes with them instead of listing
    every row: a source of a year holds 1,460 runs and their transitions, which Django's page read
    one by one and listed (1.8 s and 500 KB for one source at 20,000 sources)."""

    def get_deleted_objects(self, objs, request):
        objs = list(objs)
        model = self.model
        model_count = {model._meta.verbose_name_plural: len(objs)}
        perms_needed = set()
        held = []
        for relation in model._meta.related_objects:
            related = relation.related_model
            cascades = relation.on_delete is models.CASCADE and not relation.many_to_many
            if not (cascades or relation.many_to_many):
                continue
            # Capped like the history lists: a count past it reads "at least".
            n = related._default_manager.filter(**{f"{relation.field.name}__in": objs})[: COUNT_CAP + 1].count()
            if not n:
                continue
            counted = f"{'at least ' if n > COUNT_CAP else ''}{min(n, COUNT_CAP):,} {_named(related, n)}"
            if relation.many_to_many:
                # Kept, but what they name goes: a channel or window covers less from then on.
                held.append(f"named by {counted}, which will no longer cover it")
                continue
            name = related._meta.verbose_name_plural
            model_count[name] = model_count.get(name, 0) + n
            held.append(counted)
            perm = f"{related._meta.app_label}.{get_permission_codename('delete', related._meta)}"
            if not request.user.has_perm(perm):
                perms_needed.add(related._meta.verbose_name)
        deleted = [f"{model._meta.verbose_name.capitalize()}: {obj}" for obj in objs[:100]]
        if len(objs) > 100:
            deleted.append(f"and {len(objs) - 100:,} more {model._meta.verbose_name_plural}")
        return [*deleted, held] if held else deleted, model_count, perms_needed, []


def _named(model, n: int) -> str:
    return model._meta.verbose_name if n == 1 else model._meta.verbose_name_plural

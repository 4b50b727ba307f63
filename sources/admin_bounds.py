"""What keeps the admin's lists of history tables (runs, flips, notifications, pause events,
acknowledgements, acceptances) bounded however long the history grows.

Django's changelist counts every row of the table twice (the filtered count for the pager, the full
count beside it) and its change forms render a <select> of every row a foreign key may name: a form
listing every run. Here the pager counts at most COUNT_CAP rows, the full count is not taken, lists
are ordered by the primary key (an index walk, not a sort of the table), and foreign keys to big
tables are typed as ids.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.paginator import Paginator
from django.utils.functional import cached_property

COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Counts up to COUNT_CAP rows (`SELECT COUNT(*) FROM (… LIMIT n)`): past that the pager stops at
    page COUNT_CAP / per_page, and older rows are found by filtering or searching."""

    @cached_property
    def count(self) -> int:
        return self.object_list[:COUNT_CAP].count()


class HistoryAdmin(admin.ModelAdmin):
    paginator = CappedCountPaginator
    show_full_result_count = False
    ordering = ["-id"]
    # A click on a column header would sort the whole table by an unindexed column.
    sortable_by: list[str] = []
    list_per_page = 100

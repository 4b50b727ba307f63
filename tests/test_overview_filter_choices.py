"""The overview's region, tag, owner and team lists: read once, kept until an edit changes them."""

from __future__ import annotations

import pytest

from sources.models import Source, Tag
from sources.pages.selectors.choices import filter_choices
from sources.services.rule_settings import update_rule_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(db):
    Source.objects.create(slug="cars-ae", name="Cars AE", region="ae", owner="dana", team="cars")
    Source.objects.create(slug="flats-uk", name="Flats UK", region="uk", owner="", team="homes")
    Source.objects.create(slug="loose", name="Loose")
    Tag.objects.create(name="gulf")


def test_the_lists_are_read_once_and_follow_an_edit_of_a_team(
    fleet, django_assert_num_queries, django_capture_on_commit_callbacks
):
    with django_assert_num_queries(3):
        choices = filter_choices()
    assert (choices.regions, choices.tags, choices.owners, choices.teams) == (
        ["ae", "uk"],
        ["gulf"],
        ["dana"],
        ["cars", "homes"],
    )
    with django_assert_num_queries(0):
        assert filter_choices() == choices

    with django_capture_on_commit_callbacks(execute=True):
        update_rule_settings(Source.objects.get(slug="loose"), team="search", owner="eli")
    with django_assert_num_queries(3):
        choices = filter_choices()
    assert choices.teams == ["cars", "homes", "search"] and choices.owners == ["dana", "eli"]


def test_a_new_tag_shows_and_a_write_that_changes_no_list_keeps_them(
    fleet, django_assert_num_queries, django_capture_on_commit_callbacks
):
    filter_choices()
    with django_capture_on_commit_callbacks(execute=True):
        Source.objects.get(slug="cars-ae").save(update_fields=["name"])  # as health and state writes do
    with django_assert_num_queries(0):
        filter_choices()
    with django_capture_on_commit_callbacks(execute=True):
        Tag.objects.create(name="uae")
    assert filter_choices().tags == ["gulf", "uae"]


def test_the_chosen_option_is_marked_and_names_are_escaped(fleet, staff_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        update_rule_settings(Source.objects.get(slug="loose"), team="<b>ops</b>")
    html = staff_client.get("/?team=homes").content.decode()
    assert "<option selected>homes</option>" in html and "<option>cars</option>" in html
    assert "<option>&lt;b&gt;ops&lt;/b&gt;</option>" in html and "<b>ops</b>" not in html

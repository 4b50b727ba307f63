"""GET endpoints: sources and their run history, newest first, paginated; scoped tokens see their own."""

from sources.models import Source
from tests.conftest import assert_error_body, make_token, report
from tests.test_baseline import day, post


def test_source_detail_carries_state_settings_and_last_run(api):
    post(api, 1, collected=9000)
    post(api, 2, collected=1200)
    body = api.get("/sources/shop").json()
    assert body["health"] == "failing" and body["baseline"] == 9000 and body["baseline_run_id"] == "run-1"
    assert body["last_run"]["run_id"] == "run-2" and body["last_run"]["verdict"] == "incomplete"
    assert body["settings"]["rule_modes"]["delivery"] == "observe"
    assert body["settings"]["rule_modes"]["drop"] == "enforce"
    assert body["pause"]["paused"] is False


def test_runs_are_newest_first_and_paginated(api):
    for n in (3, 1, 4, 2, 5):
        post(api, n, collected=1000, outcomes={"generated": 3, "skipped": 1})
    first = api.get("/sources/shop/runs", per_page=2).json()
    assert first["count"] == 5 and [r["run_id"] for r in first["items"]] == ["run-5", "run-4"]
    third = api.get("/sources/shop/runs", per_page=2, page=3).json()
    assert [r["run_id"] for r in third["items"]] == ["run-1"]
    run = first["items"][0]
    assert (
        run["verdict"] == "complete"
        and run["findings"] == []
        and run["outcome_rates"] == {"generated": 7500, "skipped": 2500}
    )


def test_bad_paging_is_422_not_500(api):
    post(api, 1)
    for params in ({"page": 0}, {"page": "x"}, {"per_page": 10_000}):
        (name,) = params
        assert_error_body(api.get("/sources/shop/runs", **params), 422, naming=name)


def test_a_page_past_the_end_is_empty(api):
    post(api, 1)
    assert api.get("/sources/shop/runs", page=99).json()["items"] == []


def test_unknown_source_is_404(api):
    assert_error_body(api.get("/sources/nope"), 404, naming="nope")
    assert_error_body(api.get("/sources/nope/runs"), 404, naming="nope")
    assert_error_body(api.post("/sources/nope/pause", {"reason": "x"}), 404, naming="nope")
    assert not Source.objects.filter(slug="nope").exists()


def test_a_scoped_token_sees_only_its_sources(api):
    post(api, 1)
    api.post_run(report(source="other", run_id="o", **day(1)))
    scoped = make_token("shop-only", ["shop"])
    listing = api.get("/sources", token=scoped).json()
    assert [s["slug"] for s in listing["items"]] == ["shop"]
    assert api.get("/sources/other", token=scoped).status_code == 404
    assert api.get("/sources", token="").status_code == 401


def test_a_logged_in_operator_may_read_the_api(admin_client, api):
    post(api, 1)
    response = admin_client.get("/api/v1/sources/shop")
    assert response.status_code == 200 and response.json()["slug"] == "shop"


def test_listing_queries_do_not_grow_with_sources(api, django_assert_max_num_queries):
    for n in range(12):
        api.post_run(report(source=f"s{n}", run_id="r", **day(1)))
    # token, page, count, the page's last runs, baseline runs and tags (each one query by primary key)
    with django_assert_max_num_queries(6):
        assert api.get("/sources").json()["count"] == 12


def test_odd_slugs_in_the_path_are_404_not_500(api):
    post(api, 1)
    for slug in ["%00", "a%00b", "%ED%A0%80", "x" * 300, "..", "%F0%9F%98%80"]:
        assert_error_body(api.get(f"/sources/{slug}"), 404)
        assert_error_body(api.get(f"/sources/{slug}/runs"), 404)


def test_the_api_shows_field_counts_floors_and_the_data_quality_settings(api):
    post(api, 1, collected=1000, fields={"price": 990})
    post(api, 2, collected=1000, fields={"price": 500, "phone": 10})
    body = api.get("/sources/shop").json()
    assert body["last_run"]["fields"] == {"price": 500, "phone": 10}
    assert body["last_run"]["field_floors"] == {"price": 0.89}
    assert body["settings"] | {"rule_modes": None} == body["settings"] | {
        "field_drop": 0.1,
        "field_minimums": {},
        "trend_days": 30,
        "trend_min_runs": 3,
        "rule_modes": None,
    }
    assert body["settings"]["rule_modes"]["field_coverage"] == "enforce"
    assert body["settings"]["rule_modes"]["trend"] == "enforce"
    runs = api.get("/sources/shop/runs").json()["items"]
    assert [r["fields"] for r in runs] == [{"price": 500, "phone": 10}, {"price": 990}]


def test_a_source_says_while_it_learns_its_normal_and_from_when_it_may_have_one(api):
    from datetime import date, timedelta

    from tests.conftest import day, run_report

    for n in range(5, 0, -1):
        api.post_run(run_report("young", n, collected=400))
    since = date.fromisoformat(day(5)[:10])
    assert api.get("/sources/young").json()["learning"] == {
        "since": since.isoformat(),
        "spans_on": (since + timedelta(days=14)).isoformat(),
        "spanned": False,
    }
    for n in range(42, 0, -7):  # weekly: six runs over six weeks, too few
        api.post_run(run_report("weekly", n, collected=400))
    assert api.get("/sources/weekly").json()["learning"]["spanned"] is True
    for n in range(16, 0, -1):
        api.post_run(run_report("learned", n, collected=400))
    assert api.get("/sources/learned").json()["learning"] is None
    listed = {item["slug"]: item["learning"] for item in api.get("/sources").json()["items"]}
    assert listed["learned"] is None and listed["young"]["since"] == since.isoformat()


def test_one_run_is_read_by_its_run_id_as_the_answer_names_it(api):
    answer = api.post_run(report(run_id="2026-09-15/night", collected=1000, **day(1))).json()
    post(api, 2, collected=400)
    run = api.get(f"/sources/{answer['source']}/runs/{answer['run_id']}").json()
    listed = api.get("/sources/shop/runs").json()["items"][-1]
    assert run == listed and run["run_id"] == "2026-09-15/night" and str(run["id"]) == answer["run"]
    assert api.get("/sources/shop/runs/run-2").json()["verdict"] == "incomplete"


def test_a_run_nobody_may_see_or_nobody_posted_is_404(api):
    post(api, 1)
    api.post_run(report(source="other", run_id="o", **day(1)))
    scoped = make_token("shop-only", ["shop"])
    assert api.get("/sources/shop/runs/run-1", token=scoped).status_code == 200
    assert_error_body(api.get("/sources/other/runs/o", token=scoped), 404, naming="other")
    assert_error_body(api.get("/sources/shop/runs/o"), 404, naming="'o'")
    for run_id in ["%00", "a%00b", "%ED%A0%80", "x" * 300, "..", "%F0%9F%98%80"]:
        assert_error_body(api.get(f"/sources/shop/runs/{run_id}"), 404)


def test_sources_are_listed_by_health_one_or_several(api):
    post(api, 1, collected=9000)
    post(api, 2, collected=1200)  # shop fails
    api.post_run(report(source="calm", run_id="c", **day(1)))
    api.post_run(report(source="resting", run_id="r", paused=True, **day(1)))
    failing = api.get("/sources", health="failing").json()
    assert failing["count"] == 1 and [s["slug"] for s in failing["items"]] == ["shop"]
    several = api.get("/sources", health=["failing", "paused"]).json()
    assert [s["slug"] for s in several["items"]] == ["resting", "shop"]
    assert api.get("/sources").json()["count"] == 3
    assert_error_body(api.get("/sources", health="broken"), 422, naming="health")

"""Every page and list is bounded in rows, bytes and queries whatever is stored.

The data is made cheaply (bulk_create) and in two sizes: what a page fetches and renders must not
grow from the smaller to the larger.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sources.ingest import proxy_current
from sources.models import Channel, ProxyTransition, Run, Source
from tests.conftest import assert_error_body, run_report

STATES = ("eligible", "cooling", "probe_allowed", "excluded")
REASONS = ("connect_timeout", "slow_body", "account_revoked", "probe_succeeded")


@pytest.fixture
def rows_fetched(monkeypatch):
    """Rows the database handed back, whatever the query: a bound on what a page holds in memory."""
    fetched = {"rows": 0}

    def counting(name):
        def fetch(self, *args):
            rows = getattr(self.cursor, name)(*args)
            fetched["rows"] += (rows is not None) if name == "fetchone" else len(rows)
            return rows

        return fetch

    for name in ("fetchone", "fetchmany", "fetchall"):
        monkeypatch.setattr(CursorWrapper, name, counting(name), raising=False)
    return fetched


def a_run(api, slug: str = "shop") -> Run:
    assert api.post_run(run_report(slug, 1)).status_code == 201
    return Run.objects.get(source__slug=slug)


def store_transitions(run: Run, count: int, *, proxies: int, received_at=None, at=None) -> None:
    """`count` transitions spread over `proxies` proxies in four pools, a minute apart."""
    now = timezone.now()
    received_at = received_at or now
    ProxyTransition.objects.bulk_create(
        ProxyTransition(
            source_id=run.source_id,
            run=run,
            proxy=f"pool-{i % proxies % 4}/proxy-{i % proxies:05d}",
            at=at or now - timedelta(minutes=count - i),
            from_state=STATES[i % 4],
            to_state=STATES[(i + 1) % 4],
            reason="slow_body" if i % 4 == 2 else REASONS[i % 4],
            stage="connect",
            received_at=received_at,
        )
        for i in range(count)
    )
    proxy_current.rebuild()  # what ingest keeps up for reports


def figure(page: str, target: str) -> dict:
    return json.loads(re.search(rf'data-target="{target}">(.*?)</script>', page, re.S).group(1))


# --- /proxies/ -------------------------------------------------------------------------------


def proxies_page(client, rows_fetched, **params) -> tuple[str, int, int]:
    before = rows_fetched["rows"]
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/proxies/", params)
    assert response.status_code == 200
    return response.content.decode(), rows_fetched["rows"] - before, len(queries)


def test_proxies_page_holds_and_renders_the_same_whatever_the_number_of_transitions(api, staff_client, rows_fetched):
    run = a_run(api)
    store_transitions(run, 1_000, proxies=200)
    small, small_rows, small_queries = proxies_page(staff_client, rows_fetched)
    store_transitions(run, 4_000, proxies=1_000)
    large, large_rows, large_queries = proxies_page(staff_client, rows_fetched)

    assert large_queries == small_queries
    # A page of 50 proxies, up to 20 transitions each, per-hour counts, pools: not the 5,000 rows.
    assert large_rows < 1_500, large_rows
    assert len(large.encode()) < 250_000, len(large.encode())
    assert len(large) < 1.5 * len(small)
    assert large.count("data-proxy=") == 50
    # The counts still cover every proxy: they are counted by the database, not from the page.
    assert re.search(r'data-count="cooling"><span class="n">[0-9,]+<', large)
    total = sum(
        int(n.replace(",", ""))
        for n in re.findall(
            r'data-count="(?:eligible|cooling|probe_allowed|excluded)"><span class="n">([0-9,]+)<', large
        )
    )
    assert total == 1_000


def test_proxies_page_query_count_is_pinned(api, staff_client, django_assert_num_queries):
    store_transitions(a_run(api), 300, proxies=100)
    # Session, user and the broken-channel banner; totals, the page's count and rows, their histories,
    # the pools, the names of proxies lost by mistake, the chart's hourly changes.
    with django_assert_num_queries(10):
        assert staff_client.get("/proxies/").status_code == 200


def test_each_proxy_lists_at_most_twenty_transitions_and_says_how_many_arrived(api, staff_client):
    store_transitions(a_run(api), 500, proxies=2)
    page = staff_client.get("/proxies/").content.decode()
    assert "250 transitions, the latest 20 listed" in page
    start = page.index('data-proxy="pool-0/proxy-00000"')
    assert page[start : page.index("</details>", start)].count("&rarr;") == 20


def test_proxies_are_paged_with_the_filters_kept(api, staff_client):
    store_transitions(a_run(api), 240, proxies=120)
    first = staff_client.get("/proxies/").content.decode()
    second = staff_client.get("/proxies/", {"page": 2}).content.decode()
    assert "page 1 of 3" in first and "page 2 of 3" in second
    assert not set(re.findall(r'data-proxy="([^"]+)"', first)) & set(re.findall(r'data-proxy="([^"]+)"', second))
    pool = staff_client.get("/proxies/", {"pool": "pool-1"}).content.decode()
    assert set(re.findall(r'data-proxy="(pool-\d)/', pool)) == {"pool-1"}
    lost = staff_client.get("/proxies/", {"lost": "on", "page": 1}).content.decode()
    rows = re.findall(r'<tr data-proxy="[^"]+" class="([^"]*)"', lost)
    assert rows and set(rows) == {"lost"}


@pytest.mark.parametrize(
    "params",
    [
        {"page": "10" * 20},
        {"page": "-1"},
        {"page": "x"},
        {"pool": "a\x00b"},
        {"state": "nonsense"},
        {"lost": "maybe"},
    ],
)
def test_bad_filters_and_pages_are_ignored_not_errors(api, staff_client, params):
    store_transitions(a_run(api), 120, proxies=60)
    assert staff_client.get("/proxies/", params).status_code == 200


def test_lost_by_mistake_names_twenty_and_counts_the_rest(api, staff_client):
    run = a_run(api)
    now = timezone.now()
    ProxyTransition.objects.bulk_create(
        ProxyTransition(
            source_id=run.source_id,
            run=run,
            proxy=f"pool/p{i:03d}",
            at=now,
            from_state="eligible",
            to_state="excluded",
            reason="slow_body",
            stage="body",
        )
        for i in range(130)
    )
    proxy_current.rebuild()
    page = staff_client.get("/proxies/").content.decode()
    note = page[page.index('class="alarm-note"') : page.index("</p>", page.index('class="alarm-note"'))]
    assert note.count("<code>") == 20 and "110 more" in note
    assert re.search(r'data-count="lost-by-mistake"><span class="n">130<', page)


def test_capacity_chart_is_counted_per_hour_not_per_transition(api, staff_client):
    store_transitions(a_run(api), 5_000, proxies=500)  # a minute apart: 84 hours
    chart = figure(staff_client.get("/proxies/").content.decode(), "chart-capacity")
    eligible = next(t for t in chart["data"] if t["name"] == "eligible")
    assert len(eligible["x"]) <= 24 * 4 + 3


def test_a_future_dated_transition_leaves_the_window_once_it_arrived_thirty_days_ago(api, staff_client):
    run = a_run(api)
    now = timezone.now()
    old = dict(source_id=run.source_id, run=run, stage="connect", received_at=now - timedelta(days=31))
    ProxyTransition.objects.bulk_create(
        [
            # Dated a year ahead, arrived a month ago.
            ProxyTransition(
                proxy="pool/ahead",
                at=now + timedelta(days=365),
                from_state="eligible",
                to_state="excluded",
                reason="slow_body",
                **old,
            ),
            # The same proxy's later news, dated correctly, arrived yesterday.
            ProxyTransition(
                proxy="pool/ahead",
                at=now - timedelta(days=1),
                from_state="excluded",
                to_state="eligible",
                reason="probe_succeeded",
                source_id=run.source_id,
                run=run,
                stage="probe",
                received_at=now - timedelta(days=1),
            ),
            ProxyTransition(
                proxy="pool/gone",
                at=now + timedelta(days=365),
                from_state="eligible",
                to_state="cooling",
                reason="connect_timeout",
                **old,
            ),
        ]
    )
    proxy_current.rebuild()
    page = staff_client.get("/proxies/").content.decode()
    gone = page[page.index('data-proxy="pool/gone"') :]
    gone = gone[: gone.index("</tr>")]
    assert "none" in gone  # nothing of it arrived in the last 30 days
    ahead = page[page.index('data-proxy="pool/ahead"') :]
    ahead = ahead[: ahead.index("</tr>")]
    # Its current state is the news that arrived last, not the transition dated a year ahead...
    assert 'class="pstate eligible"' in ahead and "lost by mistake" not in ahead
    # ...and only that news is in its 30 days.
    assert "1 transition<" in ahead
    chart = figure(page, "chart-capacity")
    eligible = next(t for t in chart["data"] if t["name"] == "eligible")
    assert max(eligible["x"]) <= (now + timedelta(minutes=1)).isoformat()


def test_arrival_of_stored_transitions_is_filled_from_their_runs(api):
    import importlib

    from django.apps import apps

    run = a_run(api)
    store_transitions(run, 10, proxies=5, received_at=timezone.now() + timedelta(days=3))
    migration = importlib.import_module("sources.migrations.0009_proxy_transition_arrival")
    migration.copy_arrival(apps, SimpleNamespace(connection=connection))  # as migrate's schema editor
    assert set(ProxyTransition.objects.values_list("received_at", flat=True)) == {run.received_at}


def test_ingest_stamps_each_transition_with_its_runs_arrival(api):
    transition = {
        "proxy": "pool/p1",
        "at": "2090-01-01T00:00:00Z",
        "from": "eligible",
        "to": "cooling",
        "reason": "connect_timeout",
        "stage": "connect",
    }
    assert api.post_run(run_report("shop", 1, proxy_transitions=[transition])).status_code == 201
    stored = ProxyTransition.objects.select_related("run").get()
    assert stored.received_at == stored.run.received_at


# --- the source page's proxy chart ---------------------------------------------------------------


def source_page(client, rows_fetched, slug: str = "shop") -> tuple[str, int]:
    before = rows_fetched["rows"]
    response = client.get(f"/sources/{slug}/")
    assert response.status_code == 200
    return response.content.decode(), rows_fetched["rows"] - before


def test_source_page_proxy_chart_is_counted_in_sql(api, staff_client, rows_fetched):
    run = a_run(api)
    store_transitions(run, 1_000, proxies=100)
    small, small_rows = source_page(staff_client, rows_fetched)
    store_transitions(run, 5_000, proxies=100)
    large, large_rows = source_page(staff_client, rows_fetched)
    # 6,000 transitions a minute apart are 100 hours: a row per hour, not per transition.
    assert large_rows - small_rows < 150, (small_rows, large_rows)
    assert len(large) < len(small) + 20_000
    chart = figure(large, "chart-proxies")
    assert all(len(trace["x"]) <= 24 * 5 + 3 for trace in chart["data"] if trace.get("x") != [None])


def test_source_page_draws_a_future_dated_transition_when_it_arrived(api, staff_client):
    run = a_run(api)
    now = timezone.now()
    store_transitions(run, 4, proxies=4, at=now + timedelta(days=365), received_at=now - timedelta(days=1))
    chart = figure(staff_client.get("/sources/shop/").content.decode(), "chart-proxies")
    xs = [x for trace in chart["data"] for x in trace.get("x") or [] if x]
    assert xs and max(xs) <= (now + timedelta(minutes=1)).isoformat()


# --- the run page -------------------------------------------------------------------------------


def test_run_page_lists_the_first_two_hundred_of_each_list_and_counts_the_rest(api, staff_client, rows_fetched):
    n = 2_000
    body = run_report(
        "shop",
        1,
        collected=900,
        pages={
            "expected": 3_000,
            "fetched": 3_000 - n,
            "lost": n,
            "lost_urls": [f"https://shop.test/p/{i}" for i in range(n)],
        },
        failed_batches=[{"name": f"b{i}", "rows": 1, "error": "x"} for i in range(n)],
        failure_window={
            "size": 200,
            "threshold": 0.35,
            "min_samples": 50,
            "events": [
                {"at": "2026-09-14T03:10:00Z", "seq": i, "kind": "probe", "sent": 2, "bad": 1} for i in range(n)
            ],
        },
        proxy_transitions=[
            {
                "proxy": f"pool/p{i}",
                "at": "2026-09-14T03:11:02Z",
                "from": "eligible",
                "to": "cooling",
                "reason": "connect_refused",
                "stage": "connect",
            }
            for i in range(n)
        ],
        counters={f"c{i}": i for i in range(n)},
    )
    response = api.post_run(body)
    assert response.status_code == 201, response.content
    before = rows_fetched["rows"]
    page = staff_client.get(f"/runs/{response.json()['run']}/").content.decode()
    assert rows_fetched["rows"] - before < 500
    listed = page[: page.index('id="raw"')]  # the report as received holds them all, once
    assert listed.count("<li><code>https://shop.test/p/") == 200
    assert listed.count('<tr class="event probe">') == 200
    assert listed.count('<td data-label="proxy"><code>pool/p') == 200
    assert listed.count("<th><code>b") == 200
    assert listed.count("<th>counter: ") == 200
    assert listed.count("and 1,800 more") == 5


# --- API lists ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/sources", "/sources/shop/runs"])
def test_api_lists_never_read_the_report_bodies(api, path):
    # Up to a megabyte each: a page of 200 sources would otherwise read 400 of them.
    assert (
        api.post_run(run_report("shop", 1, pages={"lost": 1, "lost_urls": ["https://shop.test/x"]})).status_code == 201
    )
    with CaptureQueriesContext(connection) as queries:
        response = api.get(path, per_page=200)
    assert response.status_code == 200 and response.json()["items"]
    reads = [q["sql"] for q in queries.captured_queries if "sources_run" in q["sql"]]
    assert reads and not [sql for sql in reads if '"raw"' in sql or '"lost_urls"' in sql]


@pytest.mark.parametrize("path", ["/sources", "/sources/shop/runs"])
def test_api_lists_have_a_largest_page(api, path):
    assert api.post_run(run_report("shop", 1)).status_code == 201
    assert_error_body(api.get(path, per_page=201), 422, naming="per_page")
    page = api.get(path, per_page=200)
    assert page.status_code == 200 and page.json()["per_page"] == 200 and page.json()["count"] == 1


def test_a_health_filter_that_names_no_health_is_422_naming_the_query_parameter(api):
    # The error named the handler's argument as well ("filters.health[0]"): `page` and `per_page` are
    # named as the client spells them, and so is `health`, the parameter docs/api.md gives.
    assert api.post_run(run_report("shop", 1)).status_code == 201
    body = assert_error_body(api.get("/sources", health="bogus"), 422)
    assert [e["path"] for e in body["errors"]] == ["health[0]"], body
    assert api.get("/sources", health="ok").json()["count"] == 1


# --- the admin ----------------------------------------------------------------------------------


def many_runs(api, count: int) -> list[Run]:
    run = a_run(api)
    Run.objects.bulk_create(
        Run(
            source_id=run.source_id,
            run_id=f"bulk-{i}",
            report_digest="x",
            started_at=run.started_at,
            finished_at=run.finished_at,
            collected=1,
            raw={},
            verdict="complete",
        )
        for i in range(count)
    )
    return list(Run.objects.all())


HISTORY_LISTS = ["run", "flip", "notification", "pauseevent", "acknowledgement", "baselineacceptance"]


@pytest.mark.parametrize("model", HISTORY_LISTS)
def test_admin_history_lists_never_count_a_whole_table(api, admin_client, monkeypatch, model):
    monkeypatch.setattr("sources.admin_bounds.COUNT_CAP", 100)
    many_runs(api, 150)
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(f"/admin/sources/{model}/")
    assert response.status_code == 200
    counts = [q["sql"] for q in queries.captured_queries if re.match(r"SELECT COUNT\(", q["sql"])]
    assert counts and [sql for sql in counts if "LIMIT" not in sql] == []
    ordered = [
        q["sql"] for q in queries.captured_queries if f'FROM "sources_{model}"' in q["sql"] and "ORDER BY" in q["sql"]
    ]
    assert all(f'ORDER BY "sources_{model}"."id" DESC' in sql for sql in ordered), ordered


def test_admin_run_list_pages_stop_at_the_cap(api, admin_client, monkeypatch):
    monkeypatch.setattr("sources.admin_bounds.COUNT_CAP", 100)
    many_runs(api, 150)
    page = admin_client.get("/admin/sources/run/").content.decode()
    assert "100 runs" in page  # not 151: counted up to the cap


@pytest.mark.parametrize(
    "path", ["/admin/sources/pauseevent/add/", "/admin/sources/flip/add/", "/admin/sources/baselineacceptance/add/"]
)
def test_admin_forms_take_runs_and_sources_by_id_not_from_a_list_of_all(api, admin_client, path):
    many_runs(api, 300)
    page = admin_client.get(path).content.decode()
    assert page.count("<option") < 20


def many_sources(count: int) -> None:
    Source.objects.bulk_create(Source(slug=f"fleet-{i:05d}") for i in range(count))


@pytest.mark.parametrize("path", ["/admin/sources/channel/add/", "/admin/sources/maintenancewindow/add/"])
def test_admin_forms_search_sources_instead_of_listing_every_one(admin_client, path):
    many_sources(300)
    page = admin_client.get(path).content.decode()
    assert page.count("fleet-") == 0 and page.count("<option") < 20
    found = admin_client.get(
        "/admin/autocomplete/",
        {
            "app_label": "sources",
            "model_name": path.split("/")[3],
            "field_name": "sources",
            "term": "fleet-0012",
        },
    ).json()
    assert [item["text"] for item in found["results"]][:1] == ["fleet-00120"]


def test_admin_token_form_searches_sources_instead_of_listing_every_one(admin_client):
    from sources.services.tokens import create_token

    many_sources(300)
    token, _ = create_token("scoped", ["fleet-00001"])
    page = admin_client.get(f"/admin/sources/apitoken/{token.pk}/change/").content.decode()
    assert page.count("<option") < 20 and "fleet-00002" not in page


def test_deleting_a_source_counts_what_goes_with_it_instead_of_listing_it(api, admin_client):
    runs = many_runs(api, 300)
    source = runs[0].source
    Channel.objects.create(kind="webhook", target="http://127.0.0.1:9/hook", all_sources=False).sources.add(source)
    with CaptureQueriesContext(connection) as queries:
        page = admin_client.get(f"/admin/sources/source/{source.pk}/delete/").content.decode()
    assert "301 runs" in page and "bulk-12" not in page
    assert "named by 1 channel, which will no longer cover it" in page
    assert len(page) < 30_000 and len(queries) < 30
    # The confirmation still deletes everything.
    assert admin_client.post(f"/admin/sources/source/{source.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Run.objects.exists()


def test_a_count_of_one_reads_in_the_singular(api, admin_client):
    source = a_run(api).source
    page = admin_client.get(f"/admin/sources/source/{source.pk}/delete/").content.decode()
    assert "<li>1 run</li>" in page and "1 runs" not in page


def test_deleting_a_run_counts_its_transitions(api, admin_client):
    run = a_run(api)
    store_transitions(run, 500, proxies=50)
    page = admin_client.get(f"/admin/sources/run/{run.pk}/delete/").content.decode()
    assert "500 proxy transitions" in page and page.count("pool-1/proxy-") == 0


def test_the_channel_form_names_sources_by_slug_once_the_fleet_outgrows_checkboxes(staff_client):
    from sources.alerts.forms import SOURCE_CHECKBOXES_UP_TO

    many_sources(SOURCE_CHECKBOXES_UP_TO + 1)
    page = staff_client.get("/alerts/channels/").content.decode()
    assert 'type="checkbox" name="sources"' not in page and "<textarea" in page and len(page) < 30_000
    body = {"kind": "webhook", "target": "http://127.0.0.1:9/hook", "method": "POST", "name": "ops"}
    refused = staff_client.post("/alerts/channels/", {**body, "sources": "fleet-00001, nope-1\nnope-2"})
    assert refused.status_code == 200 and "no source has the slug nope-1, nope-2" in refused.content.decode()
    assert (
        staff_client.post("/alerts/channels/", {**body, "sources": "fleet-00001, fleet-00002\nfleet-00001"}).status_code
        == 302
    )
    channel = Channel.objects.get(name="ops")
    assert sorted(channel.sources.values_list("slug", flat=True)) == ["fleet-00001", "fleet-00002"]


def test_a_channel_naming_many_sources_shows_twenty_in_its_scope(staff_client):
    many_sources(50)
    channel = Channel.objects.create(kind="webhook", target="http://127.0.0.1:9/hook", name="wide", all_sources=False)
    channel.sources.set(Source.objects.all())
    page = staff_client.get("/alerts/channels/").content.decode()
    table = page[page.index('<table class="grid cards channels">') : page.index("</table>")]
    assert "fleet-00019" in table and "fleet-00020" not in table and "and 30 more" in table


# --- the source page's runs ---------------------------------------------------------------------


def test_source_page_loads_at_most_its_run_limit_and_says_from_when(api, staff_client, rows_fetched, monkeypatch):
    monkeypatch.setattr("sources.pages.selectors.source.CHART_MAX_RUNS", 100, raising=False)
    run = a_run(api)
    start = timezone.now() - timedelta(days=6)
    Run.objects.bulk_create(
        Run(
            source_id=run.source_id,
            run_id=f"bulk-{i}",
            report_digest="x",
            started_at=start + timedelta(minutes=10 * i),
            finished_at=start + timedelta(minutes=10 * i + 5),
            collected=1000,
            raw={},
            verdict="complete",
        )
        for i in range(400)
    )
    before = rows_fetched["rows"]
    page = staff_client.get("/sources/shop/", {"range": "7d"}).content.decode()
    assert rows_fetched["rows"] - before < 300
    assert re.search(r'data-points="100"', page)
    assert 'data-cut="runs"' in page


# --- /alerts/ -----------------------------------------------------------------------------------


def test_alerts_page_lists_a_hundred_open_problems_and_counts_the_rest(staff_client):
    since = timezone.now() - timedelta(days=1)
    Source.objects.bulk_create(Source(slug=f"s{i:04d}", health="failing", health_since=since) for i in range(520))
    page = staff_client.get("/alerts/").content.decode()
    assert page.count('<input name="note"') == 100
    assert "and 420 more" in page


def test_alerts_page_counts_notifications_up_to_a_cap(staff_client):
    with CaptureQueriesContext(connection) as queries:
        assert staff_client.get("/alerts/").status_code == 200
    counts = [
        q["sql"]
        for q in queries.captured_queries
        if re.match(r"SELECT COUNT\(", q["sql"]) and "sources_notification" in q["sql"]
    ]
    assert counts and [sql for sql in counts if "LIMIT" not in sql] == []

"""Each run keeps the least completeness it was complete at, and the chart draws that floor, not a flat
min_completeness: a source whose share of an approximate total hovers at 99% is judged by its own band
("normal from 98.8%"), and its complete runs at 98.9% sat under a 99% line as if they had failed."""

import random
from datetime import UTC, datetime, timedelta

from sources.models import Run, Source
from sources.pages.charts import figures as charts
from sources.pages.selectors import source as source_selectors

START = datetime(2026, 8, 3, 3, 0, tzinfo=UTC)


def post(api, source: str, day: int, collected: int, **fields) -> dict:
    started = START + timedelta(days=day)
    response = api.post_run(
        {
            "source": source,
            "run_id": f"{source}-{day}",
            "started_at": started.isoformat(),
            "finished_at": (started + timedelta(minutes=30)).isoformat(),
            "exit_code": 0,
            "collected": collected,
            **fields,
        }
    )
    assert response.status_code == 201, response.content
    return response.json()


def floor_line(slug: str) -> dict:
    runs = source_selectors.chart_runs(Source.objects.get(slug=slug), START + timedelta(days=60))
    figure = charts.completeness_figure(runs, 0.99)
    (line,) = [trace for trace in figure["data"] if trace["name"].startswith(("complete from", "min_completeness"))]
    return line


def test_a_hovering_share_keeps_its_own_floor_and_the_chart_draws_it_under_its_complete_runs(api, staff_client):
    rng = random.Random(4)
    for day in range(30):
        post(api, "approx", day, rng.randint(9860, 9990), declared_total=10000)
    answer = post(api, "approx", 30, 9885, declared_total=10000)
    assert answer["verdict"] == "complete"

    stored = Run.objects.get(run_id="approx-30")
    assert stored.completeness == 0.9885
    assert 0.98 <= stored.completeness_floor < stored.completeness < 0.99
    line = floor_line("approx")
    assert line["name"] == "complete from (own normal; min_completeness 99.0%)"
    assert line["y"][-1] == stored.completeness_floor

    page = staff_client.get(f"/runs/{stored.pk}/").content.decode()
    assert f"98.9%, complete from {stored.completeness_floor:.1%}" in page
    listed = api.get("/sources/approx/runs").json()["items"][0]
    assert listed["completeness_floor"] == stored.completeness_floor

    # Below its own floor a run is incomplete, and the floor it failed is the one kept.
    failed = post(api, "approx", 31, 9500, declared_total=10000)
    assert failed["verdict"] == "incomplete"
    assert 0.95 < Run.objects.get(run_id="approx-31").completeness_floor < 0.99


def test_an_exact_share_keeps_min_completeness_and_the_chart_names_it(api):
    for day in range(30):
        post(api, "exact", day, 10000 - day % 3, declared_total=10000)
    post(api, "exact", 30, 9895, declared_total=10000)
    assert Run.objects.get(run_id="exact-30").verdict == "incomplete"
    assert set(Run.objects.filter(source__slug="exact").values_list("completeness_floor", flat=True)) == {0.99}
    line = floor_line("exact")
    assert line["name"] == "min_completeness 99.0%" and set(line["y"]) == {0.99}


def test_no_floor_without_a_ratio_or_while_paused_and_older_runs_draw_the_setting(api):
    post(api, "plain", 0, 500)
    post(api, "paused", 0, 0, declared_total=100, paused=True)
    assert Run.objects.get(run_id="plain-0").completeness_floor is None
    assert Run.objects.get(run_id="paused-0").completeness_floor is None

    post(api, "older", 0, 995, declared_total=1000)
    Run.objects.filter(run_id="older-0").update(completeness_floor=None)  # stored before the floor was kept
    assert floor_line("older")["y"] == [0.99]

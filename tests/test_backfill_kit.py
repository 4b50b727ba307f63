"""The kit's completeness-backfill against this service: a history given newest first is judged as
if posted oldest first, so the loss in its newest run is caught."""

import json

import pytest

from completeness_client import exit_codes
from completeness_client.backfill import main as backfill
from completeness_client.cli import main as report_one
from sources.models import Run
from tests.conftest import make_token

# Twelve days of a steady 9,000 and, on the last, a run that timed out at 6,000 and exited 0.
COLLECTED = {day: 9000 + (day % 3) * 20 for day in range(1, 13)} | {13: 6000}


def history(source: str) -> list[dict]:
    newest_first = sorted(COLLECTED, reverse=True)
    return [
        {
            "source": source,
            "run_id": f"{source}-{day:02d}",
            "started_at": f"2026-09-{day:02d}T03:00:00Z",
            "finished_at": f"2026-09-{day:02d}T04:00:00Z",
            "exit_code": 0,
            "collected": COLLECTED[day],
        }
        for day in newest_first
    ]


@pytest.mark.django_db(transaction=True)
def test_a_history_given_newest_first_catches_the_loss_in_its_newest_run(live_server, tmp_path, capsys):
    token = make_token("backfill")
    files = []
    for report in history("shop"):
        files.append(tmp_path / f"{report['run_id']}.json")
        files[-1].write_text(json.dumps(report))
    command = ["--url", live_server.url, "--token", token]
    assert backfill([*map(str, files), *command]) == exit_codes.COMPLETE
    newest = Run.objects.get(run_id="shop-13")
    assert newest.verdict == "incomplete" and newest.silent
    assert "drop" in {f["rule"] for f in newest.findings if f["mode"] == "enforce"}
    assert set(Run.objects.exclude(pk=newest.pk).values_list("verdict", flat=True)) == {"complete"}
    out = capsys.readouterr().out
    assert "shop-13: incomplete SILENT" in out
    assert "shop: 13 runs started 2026-09-01 03:00 to 2026-09-13 03:00 UTC: 12 complete, 1 incomplete" in out


@pytest.mark.django_db(transaction=True)
def test_the_same_files_posted_one_by_one_newest_first_let_the_loss_pass(live_server, tmp_path):
    # Why the backfill sorts: the newest run, posted first, has nothing before it to be judged by.
    token = make_token("loop")
    for report in history("loop-shop"):
        path = tmp_path / f"{report['run_id']}.json"
        path.write_text(json.dumps(report))
        report_one([str(path), "--url", live_server.url, "--token", token, "--spool-dir", str(tmp_path / "spool")])
    assert Run.objects.get(run_id="loop-shop-13").verdict == "complete"

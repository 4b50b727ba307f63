"""completeness-backfill: a crawler's past runs posted oldest first, whatever order the files give."""

from __future__ import annotations

import json
from pathlib import Path

from reports import minimal_report

from completeness_client import exit_codes
from completeness_client.backfill import main


def run_of(day: int, **overrides) -> dict:
    times = {"started_at": f"2026-09-{day:02d}T03:00:00Z", "finished_at": f"2026-09-{day:02d}T04:00:00Z"}
    return minimal_report(**{"run_id": f"run-{day:02d}", **times, **overrides})


def args(url: str, *files: Path | str) -> list[str]:
    return [*(str(f) for f in files), "--url", url, "--token", "test-token"]


def test_reports_given_newest_first_in_any_form_are_posted_oldest_first(service, tmp_path, capsys):
    # One file an array (newest first), one JSON Lines, one a single report; a start at +04:00 that
    # is two hours before run-05's by its instant, though its text sorts after.
    (tmp_path / "array.json").write_text(json.dumps([run_of(9), run_of(5)]))
    (tmp_path / "lines.jsonl").write_text(json.dumps(run_of(7)) + "\n\n" + json.dumps(run_of(3)) + "\n")
    (tmp_path / "one.json").write_text(
        json.dumps(
            run_of(
                5,
                run_id="run-05-dubai",
                started_at="2026-09-05T05:00:00+04:00",
                finished_at="2026-09-05T06:00:00+04:00",
            )
        )
    )
    files = [tmp_path / "array.json", tmp_path / "lines.jsonl", tmp_path / "one.json"]
    assert main(args(service.url, *files)) == exit_codes.COMPLETE
    assert [r["run_id"] for r in service.reports] == ["run-03", "run-05-dubai", "run-05", "run-07", "run-09"]
    out = capsys.readouterr().out
    assert "dubizzle-ae: 5 runs started 2026-09-03 03:00 to 2026-09-09 03:00 UTC: 5 complete" in out


def test_incomplete_past_runs_are_listed_with_their_findings_and_the_exit_is_0(service, tmp_path, capsys):
    history = [run_of(2), run_of(1), run_of(3, declared_total=9000, collected=1200)]
    (tmp_path / "runs.json").write_text(json.dumps(history))
    assert main(args(service.url, tmp_path / "runs.json")) == exit_codes.COMPLETE
    out = capsys.readouterr().out
    assert f"{tmp_path / 'runs.json'}[2]: dubizzle-ae/run-03: incomplete SILENT" in out
    assert "[enforce] stub: the test service judged it incomplete" in out
    assert "3 runs started 2026-09-01 03:00 to 2026-09-03 03:00 UTC: 2 complete, 1 incomplete" in out


def test_one_invalid_report_posts_nothing_and_names_where_it_is(service, tmp_path, capsys):
    (tmp_path / "runs.jsonl").write_text(json.dumps(run_of(1)) + "\n" + json.dumps(run_of(2, collected=-5)) + "\n")
    assert main(args(service.url, tmp_path / "runs.jsonl")) == exit_codes.BAD_INPUT
    err = capsys.readouterr().err
    assert f"{tmp_path / 'runs.jsonl'}:2: collected:" in err and "nothing was posted" in err
    assert service.posts == []


def test_a_line_that_is_not_json_posts_nothing_and_names_its_line(service, tmp_path, capsys):
    (tmp_path / "runs.jsonl").write_text(json.dumps(run_of(1)) + "\n{not json\n")
    assert main(args(service.url, tmp_path / "runs.jsonl", tmp_path / "missing.json")) == exit_codes.BAD_INPUT
    assert f"{tmp_path / 'runs.jsonl'}:2: not JSON" in capsys.readouterr().err
    assert main(args(service.url, tmp_path / "missing.json")) == exit_codes.BAD_INPUT
    assert "cannot read" in capsys.readouterr().err
    assert service.posts == []


def test_run_again_after_an_outage_everything_stored_is_a_repeat(service, dead_url, tmp_path, capsys):
    (tmp_path / "runs.json").write_text(json.dumps([run_of(2), run_of(1)]))
    sleeps: list[float] = []
    assert main(args(dead_url, tmp_path / "runs.json"), sleep=sleeps.append) == exit_codes.SPOOLED
    err = capsys.readouterr().err
    assert "stopped at" in err and "report 1 of 2" in err and "run the same command again" in err
    assert "spooled to" not in err  # nothing is left to be sent out of order by a later live run
    assert main(args(service.url, tmp_path / "runs.json")) == exit_codes.COMPLETE
    assert main(args(service.url, tmp_path / "runs.json")) == exit_codes.COMPLETE
    assert "2 complete (2 already stored: repeats)" in capsys.readouterr().out
    assert [r["run_id"] for r in service.reports] == ["run-01", "run-02", "run-01", "run-02"]


def test_a_rate_limit_is_waited_out_not_a_failure(service, tmp_path):
    service.scripted = [(429, {"detail": "slow down"}, {"Retry-After": "45"})]
    (tmp_path / "runs.json").write_text(json.dumps([run_of(2), run_of(1)]))
    sleeps: list[float] = []
    assert main(args(service.url, tmp_path / "runs.json"), sleep=sleeps.append) == exit_codes.COMPLETE
    assert sleeps == [45.0]
    assert [r["run_id"] for r in service.reports] == ["run-01", "run-02"]


def test_a_refused_report_is_named_the_others_are_posted_and_the_exit_is_65(service, tmp_path, capsys):
    service.stored[("dubizzle-ae", "run-01")] = b"an earlier, different report of run-01"
    (tmp_path / "runs.json").write_text(json.dumps([run_of(2), run_of(1), run_of(3)]))
    assert main(args(service.url, tmp_path / "runs.json")) == exit_codes.BAD_INPUT
    captured = capsys.readouterr()
    assert "dubizzle-ae/run-01: rejected" in captured.err and "refused 1 of 3 reports" in captured.err
    assert "dubizzle-ae: 3 runs started 2026-09-01 03:00 to 2026-09-03 03:00 UTC: 2 complete, 1 refused" in captured.out
    assert [r["run_id"] for r in service.reports] == ["run-02", "run-03"]


def test_a_refused_token_stops_at_once(service, tmp_path, capsys):
    (tmp_path / "runs.json").write_text(json.dumps([run_of(2), run_of(1)]))
    command = [str(tmp_path / "runs.json"), "--url", service.url, "--token", "wrong"]
    assert main(command) == exit_codes.AUTH
    assert len(service.posts) == 1 and "stopped at" in capsys.readouterr().err


def test_a_dry_run_sorts_and_checks_and_posts_nothing(service, tmp_path, capsys):
    (tmp_path / "runs.json").write_text(json.dumps([run_of(4), run_of(1, source="other")]))
    assert main([str(tmp_path / "runs.json"), "--dry-run"]) == exit_codes.COMPLETE
    out = capsys.readouterr().out
    assert "dubizzle-ae: 1 runs started 2026-09-04 03:00 to 2026-09-04 03:00 UTC, would be posted oldest first" in out
    assert "other: 1 runs" in out
    assert service.posts == []

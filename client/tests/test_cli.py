from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from reports import minimal_report

from completeness_client import exit_codes
from completeness_client.cli import main


def write(tmp_path: Path, report: object, name: str = "report.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(report) if not isinstance(report, str) else report)
    return str(path)


def args(service_url: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--url",
        service_url,
        "--token",
        "test-token",
        "--spool-dir",
        str(tmp_path / "spool"),
        "--attempts",
        "1",
        *extra,
    ]


def test_complete_exits_0_incomplete_exits_3(service, tmp_path, capsys):
    ok = write(tmp_path, minimal_report(), "ok.json")
    assert main([ok, *args(service.url, tmp_path)]) == 0
    short = write(tmp_path, minimal_report(run_id="r2", declared_total=9000, collected=1200), "short.json")
    assert main([short, *args(service.url, tmp_path)]) == 3
    out = capsys.readouterr().out
    assert "complete -> exit 0" in out and "incomplete SILENT" in out


def test_paused_exits_0(service, tmp_path):
    report = write(tmp_path, minimal_report(paused=True, pause_reason="proxy pool migration", collected=0))
    assert main([report, *args(service.url, tmp_path)]) == 0


def test_bad_input_exits_65(service, tmp_path):
    assert main([write(tmp_path, "{not json"), *args(service.url, tmp_path)]) == exit_codes.BAD_INPUT
    assert main([str(tmp_path / "missing.json"), *args(service.url, tmp_path)]) == exit_codes.BAD_INPUT
    invalid = write(tmp_path, minimal_report(collected=-5), "invalid.json")
    assert main([invalid, *args(service.url, tmp_path)]) == exit_codes.BAD_INPUT
    assert service.posts == []


def test_missing_url_or_token_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPLETENESS_URL", raising=False)
    monkeypatch.delenv("COMPLETENESS_TOKEN", raising=False)
    assert main([write(tmp_path, minimal_report())]) == exit_codes.USAGE


def test_unreachable_exits_75_and_spools(dead_url, tmp_path, capsys):
    report = write(tmp_path, minimal_report())
    assert main([report, *args(dead_url, tmp_path)]) == exit_codes.SPOOLED
    assert "spooled" in capsys.readouterr().err
    assert len(list((tmp_path / "spool").glob("*.json"))) == 1


def test_wrong_token_exits_77(service, tmp_path):
    report = write(tmp_path, minimal_report())
    assert (
        main(
            [report, "--url", service.url, "--token", "nope", "--attempts", "1", "--spool-dir", str(tmp_path / "spool")]
        )
        == exit_codes.AUTH
    )


def test_console_script_reads_url_and_token_from_environment(service, tmp_path):
    script = shutil.which("completeness-report", path=os.path.dirname(sys.executable))
    assert script, "install the kit: pip install -e client[scrapy]"
    env = {
        **os.environ,
        "COMPLETENESS_URL": service.url,
        "COMPLETENESS_TOKEN": "test-token",
        "COMPLETENESS_SPOOL_DIR": str(tmp_path / "spool"),
    }
    short = write(tmp_path, minimal_report(declared_total=9000, collected=1200))
    done = subprocess.run([script, short], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 3, done.stderr
    full = write(tmp_path, minimal_report(run_id="r-full"), "full.json")
    done = subprocess.run([script, full], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_a_spooled_report_sent_later_is_printed_with_its_run_id_and_verdict(service, dead_url, tmp_path, capsys):
    earlier = write(tmp_path, minimal_report(run_id="run-earlier", declared_total=9000, collected=1200), "e.json")
    assert main([earlier, *args(dead_url, tmp_path)]) == exit_codes.SPOOLED
    now = write(tmp_path, minimal_report(run_id="run-now"), "now.json")
    assert main([now, *args(service.url, tmp_path)]) == 0  # this run's verdict only
    out = capsys.readouterr().out
    assert (
        "spooled report of an earlier run, sent now: dubizzle-ae/run-earlier: incomplete SILENT "
        "(the crawler claimed success) -> exit 3 (not this run's exit code)"
    ) in out
    assert "dubizzle-ae/run-now: complete -> exit 0" in out

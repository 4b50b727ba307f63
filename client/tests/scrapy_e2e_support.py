"""Run the catalogue crawl in a subprocess (Twisted's reactor cannot restart
in-process) against any service: the recording stub here, or the real Django
service in the lead's test:

    run = run_catalogue_crawl(service_url, token, site_url, workdir=tmp_path)
    run.exit_code, run.report  # the posted report, as the crawler wrote it
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPIDER_FILE = Path(__file__).with_name("catalogue_spider.py")

# Small breaker numbers so a 150-item catalogue exercises trip, probe and stop in seconds.
FAST_BREAKER = {
    "COMPLETENESS_BREAKER_SIZE": 20,
    "COMPLETENESS_BREAKER_MIN_SAMPLES": 10,
    "COMPLETENESS_BREAKER_THRESHOLD": 0.35,
    "COMPLETENESS_BREAKER_PAUSE_SECONDS": 0.2,
    "COMPLETENESS_BREAKER_PROBE_SIZE": 5,
    "COMPLETENESS_BREAKER_MAX_FAILED_PROBES": 3,
    "COMPLETENESS_BREAKER_SERIES_EVERY": 20,
}
CRAWL_SETTINGS = {
    "CONCURRENT_REQUESTS": 4,
    "RETRY_TIMES": 2,
    "DOWNLOAD_TIMEOUT": 10,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "COMPLETENESS_POST_ATTEMPTS": 2,
    "COMPLETENESS_POST_TIMEOUT": 5,
}


@dataclass
class CrawlRun:
    exit_code: int
    report_path: Path
    report: dict[str, Any] | None
    log: str


def crawl_command(
    service_url: str,
    token: str,
    site_url: str,
    *,
    workdir: Path,
    source: str = "catalogue-e2e",
    settings: dict[str, Any] | None = None,
    spider_file: Path = SPIDER_FILE,
    spider_args: dict[str, str] | None = None,
) -> tuple[list[str], dict[str, str], Path]:
    """The runner's command line, its environment and where the report goes."""
    workdir.mkdir(parents=True, exist_ok=True)
    report_path = workdir / "report.json"
    merged = {
        **CRAWL_SETTINGS,
        **FAST_BREAKER,
        "COMPLETENESS_URL": service_url,
        "COMPLETENESS_TOKEN": token,
        "COMPLETENESS_SOURCE": source,
        "COMPLETENESS_REPORT_FILE": str(report_path),
        "COMPLETENESS_SPOOL_DIR": str(workdir / "spool"),
        **(settings or {}),
    }
    # The installed console script, as a scheduler would run it.
    runner = shutil.which("completeness-scrapy", path=os.path.dirname(sys.executable))
    launcher = [runner] if runner else [sys.executable, "-m", "completeness_client.scrapy_kit.runner"]
    command = [*launcher, "runspider", str(spider_file), "-a", f"site_url={site_url}"]
    for name, value in (spider_args or {}).items():
        command += ["-a", f"{name}={value}"]
    for name, value in merged.items():
        # Scrapy reads a dict setting given on the command line as JSON.
        text = json.dumps(value) if isinstance(value, (dict, list)) else value
        command += ["-s", f"{name}={text}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPLETENESS_")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return command, env, report_path


def run_catalogue_crawl(
    service_url: str,
    token: str,
    site_url: str,
    *,
    workdir: Path,
    source: str = "catalogue-e2e",
    settings: dict[str, Any] | None = None,
    timeout_seconds: float = 90,
    spider_file: Path = SPIDER_FILE,
    spider_args: dict[str, str] | None = None,
) -> CrawlRun:
    command, env, report_path = crawl_command(
        service_url,
        token,
        site_url,
        workdir=workdir,
        source=source,
        settings=settings,
        spider_file=spider_file,
        spider_args=spider_args,
    )
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout_seconds)
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return CrawlRun(done.returncode, report_path, report, done.stdout + done.stderr)

"""A run that is stopped by signals still leaves its report:
a second Ctrl-C, and a SIGTERM (even one followed by a SIGKILL before the
graceful stop is done), write the report and spool it before the process
ends; a graceful stop that does finish posts the final report instead, once."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("scrapy")

from scrapy_e2e_support import crawl_command
from service_stub import RecordingService
from toscrape_site import ToScrapeConfig, ToScrapeSite

from completeness_client import exit_codes

SPIDER = Path(__file__).with_name("third_party") / "books.py"
# Slow enough that the crawl is still running when the signals come.
SLOW = {
    "ADDONS": {"completeness_client.scrapy_kit.Addon": 0},
    "CONCURRENT_REQUESTS": 1,
    "DOWNLOAD_DELAY": 0.05,
    "COMPLETENESS_POST_ATTEMPTS": 1,
    "COMPLETENESS_POST_TIMEOUT": 2,
}


@contextmanager
def silent_service() -> Iterator[str]:
    """Accepts connections and never answers: a post hangs until its timeout."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def start_crawl(tmp_path: Path, site: ToScrapeSite, service_url: str) -> tuple[subprocess.Popen, Path]:
    spider = tmp_path / "books.py"
    spider.write_text(
        SPIDER.read_text().replace("http://books.toscrape.com", site.url).replace('"books.toscrape.com"', '"127.0.0.1"')
    )
    command, env, report_path = crawl_command(
        service_url,
        "test-token",
        site.url,
        workdir=tmp_path / "run",
        source="books-interrupted",
        settings=SLOW,
        spider_file=spider,
    )
    process = subprocess.Popen(
        command, cwd=tmp_path / "run", env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 60
    while sum(1 for path, _ in site.config.log if "book_" in path) < 10:
        assert time.monotonic() < deadline and process.poll() is None, "the crawl never got going"
        time.sleep(0.05)
    return process, report_path


def spooled(tmp_path: Path) -> list[dict]:
    return [json.loads(path.read_text())["report"] for path in (tmp_path / "run" / "spool").glob("*.json")]


def test_a_second_ctrl_c_still_writes_and_spools_the_report(tmp_path):
    with ToScrapeSite(ToScrapeConfig(books=400)) as site, silent_service() as url:
        process, report_path = start_crawl(tmp_path, site, url)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)  # the graceful stop is posting to a service that does not answer
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == exit_codes.SPOOLED, output[-3000:]
    [report] = spooled(tmp_path)
    assert report["end_reason"] == "shutdown" and report["crawler_verdict"] == "incomplete"
    assert 0 < report["collected"] < 400
    assert json.loads(report_path.read_text())["run_id"] == report["run_id"]
    assert "completeness-scrapy: exit 75: stopped by a second SIGINT" in output


def test_sigterm_spools_the_report_before_a_sigkill_can_lose_it(tmp_path):
    with ToScrapeSite(ToScrapeConfig(books=400)) as site, silent_service() as url:
        process, _ = start_crawl(tmp_path, site, url)
        process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        process.kill()  # the scheduler's grace period is over
        process.communicate(timeout=30)
    [report] = spooled(tmp_path)
    assert report["end_reason"] == "shutdown" and report["crawler_verdict"] == "incomplete"
    assert report["collected"] > 0


def test_a_graceful_stop_after_sigterm_posts_the_final_report_once(tmp_path):
    with ToScrapeSite(ToScrapeConfig(books=400)) as site, RecordingService() as service:
        process, _ = start_crawl(tmp_path, site, service.url)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == exit_codes.INCOMPLETE, output[-3000:]
    [report] = service.reports
    assert report["end_reason"] == "shutdown" and report["crawler_verdict"] == "incomplete"
    assert spooled(tmp_path) == []  # the spooled copy was taken back, not sent as a second report
    assert [p["status"] for p in service.posts] == [201]

"""A Scrapy crawl paused and resumed with JOBDIR is one run: real crawls (subprocesses, through
`completeness-scrapy`) of the flaky shop on 127.0.0.1, stopped by a real SIGTERM (or a second
Ctrl-C) and started again with the same JOBDIR, posting to the recording service. Each starts with a
published snapshot of 600 previous rows, read back from disk."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("scrapy")

from scrapy.utils.test import get_crawler
from scrapy_e2e_support import CrawlRun, crawl_command, run_catalogue_crawl
from service_stub import RecordingService
from shop_site import ShopConfig, ShopSite
from shop_spider import ShopSpider

from completeness_client import FailureWindowBreaker, exit_codes, validate_report
from completeness_client.fields import FieldCoverage
from completeness_client.scrapy_kit import CompletenessExtension
from completeness_client.scrapy_kit.jobdir import STATE_NAME, JobDirRun

TOKEN = "test-token"
SPIDER_FILE = Path(__file__).with_name("shop_spider.py")
PREVIOUS_ROWS = 600
# Slow enough that the crawl is still running when the signal comes; a breaker that never trips.
SLOW = {
    "CONCURRENT_REQUESTS": 1,
    "DOWNLOAD_DELAY": 0.04,
    "RETRY_TIMES": 1,
    "COMPLETENESS_BREAKER_SIZE": 1000,
    "COMPLETENESS_BREAKER_MIN_SAMPLES": 1000,
}


class Crawl:
    """One JOBDIR crawl's folders: the job, the staging feed, the published snapshots."""

    def __init__(
        self,
        tmp_path: Path,
        site: ShopSite,
        service: RecordingService,
        *,
        overwrite: bool = False,
        jobdir: bool = True,
        **settings: Any,
    ) -> None:
        self.workdir = tmp_path / "run"
        self.site, self.service = site, service
        self.published = tmp_path / "published"
        self.published.mkdir()
        for name in ("closed.jsonl", "pipeline.jsonl", "feed.jsonl"):
            (self.published / name).write_text("".join(json.dumps({"previous": i}) + "\n" for i in range(600)))
        self.staging = tmp_path / "staging" / "shop.jsonl"
        self.jobdir = tmp_path / "job"
        self.settings = {
            **SLOW,
            "FEEDS": {str(self.staging): {"format": "jsonlines", "overwrite": overwrite}},
            "COMPLETENESS_SNAPSHOT_FILES": {str(self.staging): str(self.published / "feed.jsonl")},
            **settings,
        }
        if jobdir:
            self.settings["JOBDIR"] = str(self.jobdir)
        self.args = {"snapshot_dir": str(self.published)}

    def stop_midway(self, *signals: signal.Signals, products: int = 10, stall: bool = False) -> CrawlRun:
        """Start the crawl, and send the signals once it fetched `products` product pages (`stall`: with
        a download hanging, so a graceful stop cannot finish before the next signal)."""
        command, env, report_path = crawl_command(
            self.service.url,
            TOKEN,
            self.site.url,
            workdir=self.workdir,
            source="shop-jobdir",
            settings=self.settings,
            spider_file=SPIDER_FILE,
            spider_args=self.args,
        )
        report_path.unlink(missing_ok=True)
        process = subprocess.Popen(
            command, cwd=self.workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + 30
        while sum(1 for _, path, _ in self.site.config.log if path.startswith("/p/")) < products:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail("the crawl never got going: " + process.communicate()[0][-3000:])
            time.sleep(0.02)
        if stall:
            self.site.config.stall_seconds = 5.0
            time.sleep(0.3)
        for signum in signals:
            process.send_signal(signum)
            time.sleep(0.3)
        output, _ = process.communicate(timeout=30)
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        return CrawlRun(process.returncode, report_path, report, output)

    def run_to_end(self) -> CrawlRun:
        (self.workdir / "report.json").unlink(missing_ok=True)
        return run_catalogue_crawl(
            self.service.url,
            TOKEN,
            self.site.url,
            workdir=self.workdir,
            source="shop-jobdir",
            settings=self.settings,
            spider_file=SPIDER_FILE,
            spider_args=self.args,
            timeout_seconds=30,
        )

    def rows(self, name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.published / name).read_text().splitlines()]

    def staged_skus(self) -> list[int]:
        return [json.loads(line)["sku"] for line in self.staging.read_text().splitlines()]

    @property
    def state_file(self) -> Path:
        return self.jobdir / STATE_NAME


def posted(service: RecordingService) -> dict[str, Any]:
    [report] = service.reports
    assert validate_report(report) == []
    return report


def assert_snapshot_kept(crawl: Crawl) -> None:
    assert crawl.rows("feed.jsonl") == [{"previous": i} for i in range(PREVIOUS_ROWS)]


def test_a_crawl_stopped_and_resumed_posts_one_whole_run_and_publishes_the_whole_snapshot(tmp_path):
    with ShopSite(ShopConfig(products=40)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service)
        first = crawl.stop_midway(signal.SIGTERM)
        assert first.exit_code == exit_codes.RESUMABLE, first.log[-3000:]
        assert service.reports == []  # no alarm for a pause
        assert not list((crawl.workdir / "spool").glob("*.json"))  # nor one for the next run to send
        part = first.report
        assert part is not None and part["paused"] is True and part["end_reason"] == "shutdown"
        assert part["run_id"].endswith("-part1") and 10 <= part["collected"] < 40
        assert f"{part['collected']} collected so far; resumable from JOBDIR" in part["pause_reason"]
        assert "completeness-scrapy: exit 75: stopped by SIGTERM: paused: part 1 of run" in first.log
        assert crawl.state_file.exists()
        # The staging file stays for the next part to append to; the published snapshot is untouched.
        assert len(crawl.staged_skus()) == part["collected"]
        assert not crawl.staging.with_name("shop.jsonl.incomplete").exists()
        assert_snapshot_kept(crawl)

        second = crawl.run_to_end()
    assert second.exit_code == 0, second.log[-3000:]
    report = posted(service)
    assert report == second.report
    assert report["run_id"] == part["run_id"].removesuffix("-part1")
    assert report["started_at"] == part["started_at"]
    assert (report["declared_total"], report["collected"], report["written"]) == (40, 40, 40)
    assert report["crawler_verdict"] == "complete" and report["end_reason"] == "finished"
    assert report["pages"] == {"expected": 5, "fetched": 5, "lost": 0, "lost_urls": []}
    assert report["fields"] == {"brand": 30, "name": 40, "price": 40, "sku": 40}
    assert report["requests"]["by_class"]["ok"] == sum(1 for *_, s in site.config.log if s == 200)
    assert report["meta"]["jobdir_parts"] == 2 and report["failed_batches"] == []
    assert report["snapshot"] == {"action": "replaced", "rows": 40}
    assert sorted(row["sku"] for row in crawl.rows("feed.jsonl")) == list(range(1, 41))
    # Rows a process kept in memory are its part's only: those integrations keep the previous snapshot.
    assert len(crawl.rows("closed.jsonl")) == len(crawl.rows("pipeline.jsonl")) == PREVIOUS_ROWS
    assert not crawl.state_file.exists()  # the next start with this JOBDIR is a new run
    assert not list((crawl.workdir / "spool").glob("*.json"))  # the copy spooled before posting is gone


def test_without_jobdir_a_sigterm_is_an_incomplete_run_as_before(tmp_path):
    with ShopSite(ShopConfig(products=40)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service, jobdir=False)
        run = crawl.stop_midway(signal.SIGTERM)
    assert run.exit_code == exit_codes.INCOMPLETE, run.log[-3000:]
    report = posted(service)
    assert report["end_reason"] == "shutdown" and report["crawler_verdict"] == "incomplete"
    assert report["paused"] is False and 10 <= report["collected"] < 40
    assert report["snapshot"] == {"action": "kept_previous", "rows": None}
    assert_snapshot_kept(crawl)
    assert crawl.staging.with_name("shop.jsonl.incomplete").exists() and not crawl.staging.exists()
    assert not crawl.jobdir.exists()


def test_the_opt_out_makes_every_stop_an_incomplete_run(tmp_path):
    with ShopSite(ShopConfig(products=40)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service, COMPLETENESS_JOBDIR_RESUME=False)
        first = crawl.stop_midway(signal.SIGTERM)
        assert first.exit_code == exit_codes.INCOMPLETE, first.log[-3000:]
        stopped = posted(service)
        assert stopped["end_reason"] == "shutdown" and stopped["paused"] is False
        assert_snapshot_kept(crawl)
        assert not crawl.state_file.exists()
        second = crawl.run_to_end()  # Scrapy resumes; the kit counts this part alone, as it always did
    assert second.exit_code == exit_codes.INCOMPLETE, second.log[-3000:]
    resumed = service.reports[1]
    assert resumed["run_id"] != stopped["run_id"] and resumed["collected"] < 40
    assert resumed["crawler_verdict"] == "incomplete"
    assert_snapshot_kept(crawl)


def test_a_resumed_crawl_that_loses_records_in_its_second_part_is_incomplete(tmp_path):
    with ShopSite(ShopConfig(products=40)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service)
        first = crawl.stop_midway(signal.SIGTERM)
        assert first.exit_code == exit_codes.RESUMABLE, first.log[-3000:]
        # Two products the first part did not reach break for good before the crawl is resumed.
        broken = sorted(set(range(1, 41)) - set(crawl.staged_skus()))[:2]
        site.config.broken_products = frozenset(broken)
        second = crawl.run_to_end()
    assert second.exit_code == exit_codes.INCOMPLETE, second.log[-3000:]
    report = posted(service)
    assert (report["collected"], report["records_lost"], report["written"]) == (38, 2, 38)
    assert report["crawler_verdict"] == "incomplete"
    assert report["snapshot"] == {"action": "kept_previous", "rows": None}
    assert_snapshot_kept(crawl)
    assert crawl.staging.with_name("shop.jsonl.incomplete").exists()
    assert not crawl.state_file.exists()


def test_a_snapshot_feed_that_overwrites_is_refused_not_published_truncated(tmp_path):
    with ShopSite(ShopConfig(products=40)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service, overwrite=True)
        first = crawl.stop_midway(signal.SIGTERM)
        assert first.exit_code == exit_codes.RESUMABLE, first.log[-3000:]
        assert "has overwrite on in a JOBDIR crawl" in first.log
        second = crawl.run_to_end()
    assert second.exit_code == exit_codes.INCOMPLETE, second.log[-3000:]
    report = posted(service)
    assert report["collected"] == 40 and report["written"] < 40
    [batch] = report["failed_batches"]
    assert batch["name"] == f"feed:{crawl.staging}" and batch["rows"] == 40 - report["written"]
    assert "started over when the crawl resumed" in batch["error"]
    assert report["snapshot"] == {"action": "kept_previous", "rows": None}
    assert_snapshot_kept(crawl)


def test_a_part_killed_before_scrapy_saved_its_queue_makes_the_run_incomplete(tmp_path):
    with ShopSite(ShopConfig(products=40)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service)
        # A second Ctrl-C stops the reactor at once: Scrapy's queue is never saved.
        first = crawl.stop_midway(signal.SIGINT, signal.SIGINT, stall=True)
        assert first.exit_code == exit_codes.RESUMABLE, first.log[-3000:]
        assert json.loads(crawl.state_file.read_text())["clean"] is False
        site.config.stall_seconds = 0
        second = crawl.run_to_end()
    assert second.exit_code == exit_codes.INCOMPLETE, second.log[-3000:]
    report = posted(service)
    assert report["run_id"] == first.report["run_id"].removesuffix("-part1")
    assert report["crawler_verdict"] == "incomplete"
    assert "killed before Scrapy saved its queue" in second.log
    assert_snapshot_kept(crawl)


@pytest.mark.parametrize(
    ("saved", "why"),
    [
        ("{not json", "not JSON"),
        (json.dumps({"format": 1, "source": "another-shop"}), "saved by a crawl of source 'another-shop'"),
        (json.dumps({"format": 1, "source": "shop-jobdir", "clean": False, "part": 1}), "malformed"),
    ],
)
def test_an_unusable_saved_state_is_set_aside_with_a_log_line_and_the_crawl_runs(tmp_path, saved, why):
    with ShopSite(ShopConfig(products=16)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service)
        crawl.jobdir.mkdir()
        crawl.state_file.write_text(saved)
        run = crawl.run_to_end()
    assert run.exit_code == 0, run.log[-3000:]
    assert f"cannot be used: {why}" in run.log
    report = posted(service)
    assert report["collected"] == 16 and report["snapshot"]["action"] == "replaced"
    assert (crawl.jobdir / (STATE_NAME + ".unusable")).read_text() == saved
    assert not crawl.state_file.exists()


def test_a_jobdir_reused_after_a_finished_crawl_is_no_whole_crawl(tmp_path):
    with ShopSite(ShopConfig(products=16)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service)
        first = crawl.run_to_end()
        assert first.exit_code == 0, first.log[-3000:]  # its healthy twin: a one-part JOBDIR crawl
        assert service.reports[0]["collected"] == 16 and service.reports[0]["meta"]["jobdir_parts"] == 1
        second = crawl.run_to_end()  # Scrapy skips every request it saw: nothing left to crawl
    assert second.exit_code == exit_codes.INCOMPLETE, second.log[-3000:]
    report = service.reports[1]
    assert report["run_id"] != service.reports[0]["run_id"] and report["crawler_verdict"] == "incomplete"
    assert "holds Scrapy's state of an earlier crawl" in second.log
    assert sorted(row["sku"] for row in crawl.rows("feed.jsonl")) == list(range(1, 17))  # the first run's


def test_a_new_run_does_not_append_to_a_staging_file_an_earlier_run_left(tmp_path):
    with ShopSite(ShopConfig(products=16)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service)
        crawl.staging.parent.mkdir()
        crawl.staging.write_text('{"sku": 999}\n')  # a JOBDIR deleted to start over left its rows
        run = crawl.run_to_end()
    assert run.exit_code == 0, run.log[-3000:]
    assert "was left by an earlier run, not by a part of this one" in run.log
    assert sorted(row["sku"] for row in crawl.rows("feed.jsonl")) == list(range(1, 17))
    assert crawl.staging.with_name("shop.jsonl.incomplete").read_text() == '{"sku": 999}\n'


def test_a_run_that_cannot_be_saved_ends_as_a_stopped_run(tmp_path):
    with ShopSite(ShopConfig(products=40)) as site, RecordingService(token=TOKEN) as service:
        crawl = Crawl(tmp_path, site, service)
        (crawl.jobdir / (STATE_NAME + ".partial")).mkdir(parents=True)  # where the save is written first
        run = crawl.stop_midway(signal.SIGTERM)
    assert run.exit_code == exit_codes.INCOMPLETE, run.log[-3000:]
    assert "the run could not be saved in JOBDIR" in run.log
    report = posted(service)
    assert report["end_reason"] == "shutdown" and report["paused"] is False
    assert_snapshot_kept(crawl)
    assert not crawl.state_file.exists()


# -- what is saved goes on where it stopped ----------------------------------------------------------


def test_field_counts_saved_and_restored_go_on_as_one_count():
    records = [{"a": i % 2 or None, f"k{i % 7}": "x", "b": [i] if i % 3 else []} for i in range(60)]
    whole, first = FieldCoverage(max_fields=5), FieldCoverage(max_fields=5)
    for record in records:
        whole.observe(record)
    for record in records[:25]:
        first.observe(record)
    second = FieldCoverage(max_fields=5)
    second.restore(json.loads(json.dumps(first.to_saved())))
    for record in records[25:]:
        second.observe(record)
    assert second.to_report() == whole.to_report() and second.dropped_names == whole.dropped_names


def test_breaker_progress_and_events_carry_on_and_its_window_starts_empty():
    first = FailureWindowBreaker(size=20, min_samples=10, threshold=0.5, series_every=5)
    for n in range(12):
        first.record("http_5xx", key=f"u{n}")
    assert first.state.value == "paused" and first.events[-1]["kind"] == "tripped"
    second = FailureWindowBreaker(size=20, min_samples=10, threshold=0.5, series_every=5)
    second.restore(json.loads(json.dumps(first.to_saved())))
    assert second.seq == first.seq and second.to_report()["events"] == first.to_report()["events"]
    assert second.state.value == "running" and second.ratio == 0


def _part(tmp_path: Path) -> tuple[Any, Any, JobDirRun]:
    """One part of a JOBDIR crawl as the extension sets it up, without crawling."""
    # The spider's ADDONS build the kit's extension, which starts the JOBDIR run.
    crawler = get_crawler(ShopSpider, {"JOBDIR": str(tmp_path / "job"), "COMPLETENESS_SOURCE": "shop"})
    crawler.spider = ShopSpider()
    crawler.stats.open_spider()
    [extension] = [e for e in crawler.extensions.middlewares if isinstance(e, CompletenessExtension)]
    assert extension.jobdir is not None
    return crawler, extension.state, extension.jobdir


def test_what_the_spider_said_in_a_stopped_part_holds_for_the_whole_run(tmp_path):
    crawler, state, run = _part(tmp_path)
    crawler.stats.set_value("item_scraped_count", 7)
    crawler.spider.declared_total = 20
    state.report.page_lost("http://shop.example/catalogue?page=9")
    state.report.add_failed_batch("warehouse", 3, "timeout")
    state.report.pause("proxy migration")
    state.close_reason = "shutdown"
    state.report.to_dict()
    run.save(clean=True)
    queue = tmp_path / "job" / "requests.queue"
    queue.mkdir()
    (queue / "active.json").write_text("{}")  # Scrapy's queue, saved by the graceful stop

    crawler, state, run = _part(tmp_path)  # the next start: the spider has not read the total again
    assert run.part == 2
    crawler.stats.set_value("item_scraped_count", 13)
    state.close_reason = "finished"
    body = state.report.to_dict()
    assert (body["collected"], body["declared_total"]) == (20, 20)
    assert body["pages"]["lost_urls"] == ["http://shop.example/catalogue?page=9"]
    assert body["failed_batches"] == [{"name": "warehouse", "rows": 3, "error": "timeout"}]
    assert body["paused"] is True and body["pause_reason"] == "proxy migration"

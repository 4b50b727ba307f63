"""LOG_FORMAT=json: every log line a JSON object; each stored report logged with its source and run id."""

import json
import logging
import os
import sys

import pytest

from completeness.web.jsonlog import JsonFormatter
from tests.alerts.stack import manage
from tests.conftest import report


def test_a_record_becomes_one_json_line_with_its_extra_fields():
    record = logging.LogRecord("completeness.ingest", logging.INFO, __file__, 1, "stored %s", ("shop",), None)
    record.source, record.run_id = "shop", "run-1"
    line = JsonFormatter().format(record)
    assert "\n" not in line
    body = json.loads(line)
    assert body["message"] == "stored shop" and body["level"] == "INFO" and body["logger"] == "completeness.ingest"
    assert body["source"] == "shop" and body["run_id"] == "run-1"
    assert body["time"].endswith("+00:00")


def test_an_exception_stays_on_the_one_line():
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    body = json.loads(JsonFormatter().format(record))
    assert "ValueError: boom" in body["exception"]


@pytest.mark.django_db
def test_each_stored_report_is_logged_with_its_source_and_run_id(api, caplog):
    with caplog.at_level(logging.INFO, logger="completeness.ingest"):
        assert api.post_run(report(source="shop", run_id="run-7")).status_code == 201
        assert api.post_run(report(source="shop", run_id="run-7")).status_code == 200
    stored, repeated = [r for r in caplog.records if r.name == "completeness.ingest"]
    body = json.loads(JsonFormatter().format(stored))
    assert body["source"] == "shop" and body["run_id"] == "run-7" and isinstance(body["run"], int)
    assert body["verdict"] == "complete" and body["new_run"] is True
    assert "source=shop run_id=run-7" in stored.getMessage()  # the text format says it too
    assert repeated.new_run is False


def test_a_refused_report_is_logged_with_its_source_run_id_token_and_why(api, caplog):
    # Django's own line said "Unprocessable Entity: /api/v1/runs": nothing to search a crawler's name by.
    with caplog.at_level(logging.INFO, logger="completeness.ingest"):
        refused = api.post_run(report(source="shop", run_id="run-8", collected="48"))
        assert refused.status_code == 422
        assert api.post_run(report(source="shop", run_id="run-9")).status_code == 201
        assert api.post("/runs", [1, 2]).status_code == 422
    ours = [r for r in caplog.records if r.name == "completeness.ingest"]
    assert [r.levelname for r in ours] == ["WARNING", "INFO", "WARNING"]
    line = ours[0].getMessage()
    assert (
        line.startswith("report refused (422): source='shop' run_id='run-8' token='") and "collected: must be" in line
    )
    body = json.loads(JsonFormatter().format(ours[0]))
    assert body["source"] == "shop" and body["run_id"] == "run-8" and body["status"] == 422
    # A body that names neither says so, quoted as sent: a newline in a value cannot forge a line.
    assert ours[2].getMessage().startswith("report refused (422): source=None run_id=None")
    with caplog.at_level(logging.INFO, logger="completeness.ingest"):
        api.post_run(report(source="shop\nreport stored", run_id="x", collected=-1))
    assert "\n" not in caplog.records[-1].getMessage()


def test_log_format_json_makes_the_settings_log_json_lines():
    script = "import logging; logging.getLogger('completeness.ingest').warning('hello', extra={'source': 'shop'})"
    env = {**os.environ, "LOG_FORMAT": "json", "VAR_DIR": "/tmp/completeness-json-log-test"}
    done = manage(env, "shell", "-c", script, timeout=60)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stderr.strip().splitlines()[-1])
    assert body["message"] == "hello" and body["source"] == "shop" and body["level"] == "WARNING"


def test_an_unknown_log_format_is_refused_at_start():
    env = {**os.environ, "LOG_FORMAT": "xml", "VAR_DIR": "/tmp/completeness-json-log-test"}
    done = manage(env, "check", timeout=60)
    assert done.returncode != 0 and "LOG_FORMAT" in done.stderr

from __future__ import annotations

import pytest

pytest.importorskip("scrapy")

from completeness_client.classes import classify_exception, classify_exception_name, classify_status
from completeness_client.scrapy_kit.runner import combine
from completeness_client.scrapy_kit.stats_mapping import report_fields_from_stats


def test_absent_counters_are_zero():
    fields = report_fields_from_stats({})
    assert fields["collected"] == 0
    assert fields["requests"]["total"] == 0
    assert set(fields["requests"]["by_class"].values()) == {0}
    assert fields["counters"] == {"retry_max_reached": 0, "item_dropped_count": 0}
    assert fields["meta"] == {}


def test_scrapy_stats_map_onto_request_classes():
    stats = {
        "item_scraped_count": 120,
        "downloader/response_status_count/200": 130,
        "downloader/response_status_count/301": 2,
        "downloader/response_status_count/404": 5,
        "downloader/response_status_count/410": 1,
        "downloader/response_status_count/429": 3,
        "downloader/response_status_count/403": 4,
        "downloader/response_status_count/503": 7,
        "downloader/exception_type_count/twisted.internet.error.TimeoutError": 2,
        "downloader/exception_type_count/twisted.internet.error.TCPTimedOutError": 1,
        "downloader/exception_type_count/twisted.internet.error.ConnectionRefusedError": 6,
        "downloader/exception_type_count/twisted.web._newclient.ResponseNeverReceived": 4,
        "downloader/exception_type_count/twisted.internet.error.ConnectionLost": 1,
        "downloader/exception_type_count/twisted.internet.error.DNSLookupError": 1,
        "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest": 9,
        "completeness/short_body_count": 10,
        "retry/max_reached": 3,
        "item_dropped_count": 2,
        "finish_reason": "finished",
        "elapsed_time_seconds": 12.3456,
    }
    fields = report_fields_from_stats(stats)
    assert fields["collected"] == 120
    assert fields["requests"]["by_class"] == {
        "ok": 122,
        "not_found": 6,
        "http_5xx": 7,
        "http_429": 3,
        "http_4xx_other": 4,
        "timeout": 3,
        "connection_reset": 5,
        "connection_refused": 6,
        "short_body": 10,
        "other": 1,
    }
    assert fields["requests"]["total"] == 167  # 132 + 6 + 3 + 4 + 7 + 15 exceptions, no IgnoreRequest
    assert fields["counters"] == {"retry_max_reached": 3, "item_dropped_count": 2}
    assert fields["meta"] == {"finish_reason": "finished", "elapsed_time_seconds": 12.346}


def test_status_classes():
    assert classify_status(200, 5000, 1024) == "ok"
    assert classify_status(200, 200, 1024) == "short_body"
    assert classify_status(200, 200) == "ok"  # no minimum configured
    assert classify_status(404) == classify_status(410) == "not_found"
    assert classify_status(500) == "http_5xx"
    assert classify_status(429) == "http_429"
    assert classify_status(418) == "http_4xx_other"


def test_exception_classes():
    assert classify_exception(ConnectionRefusedError()) == "connection_refused"
    assert classify_exception(ConnectionResetError()) == "connection_reset"
    assert classify_exception(TimeoutError()) == "timeout"
    assert classify_exception(ValueError()) == "other"
    assert classify_exception_name("twisted.internet.error.ConnectionRefusedError") == "connection_refused"


def test_runner_combines_exit_codes():
    assert combine([]) == 0
    assert combine([0, 0]) == 0
    assert combine([0, 3, 75]) == 3
    assert combine([0, 75]) == 75

from __future__ import annotations

import json

from reports import minimal_report

from completeness_client import ReportPoster, exit_codes
from completeness_client.summary import describe, describe_flushed, exit_reason

DATABASE_DOWN = "the database is unavailable; retry later (nothing was stored)"


def poster_for(url: str, tmp_path, token: str = "test-token", **kwargs) -> tuple[ReportPoster, list[float]]:
    sleeps: list[float] = []
    kwargs.setdefault("max_attempts", 3)
    poster = ReportPoster(url, token, spool_dir=tmp_path / "spool", sleep=sleeps.append, timeout_seconds=5, **kwargs)
    return poster, sleeps


def test_posts_with_bearer_token_and_returns_the_verdict(service, tmp_path):
    poster, sleeps = poster_for(service.url + "/", tmp_path)
    result = poster.post(minimal_report())
    assert result.outcome == "judged" and result.http_status == 201
    assert (result.verdict, result.silent, result.exit_code, result.findings) == ("complete", False, 0, [])
    [post] = service.posts
    assert post["path"] == "/api/v1/runs"
    assert post["headers"]["Authorization"] == "Bearer test-token"
    assert post["headers"]["Content-Type"] == "application/json"
    assert json.loads(post["body"]) == minimal_report()
    assert sleeps == []


def test_incomplete_verdict_gives_exit_3_and_findings(service, tmp_path):
    poster, _ = poster_for(service.url, tmp_path)
    result = poster.post(minimal_report(declared_total=10_000, collected=1200, exit_code=0))
    assert (result.verdict, result.exit_code, result.silent) == ("incomplete", 3, True)
    assert result.findings[0]["rule"] == "stub"


def test_repeat_is_identical_and_gets_200(service, tmp_path):
    poster, _ = poster_for(service.url, tmp_path)
    first = poster.post(minimal_report())
    again = poster.post(minimal_report())
    assert (first.http_status, again.http_status) == (201, 200)
    assert service.posts[0]["body"] == service.posts[1]["body"]
    assert (first.repeat, again.repeat) == (False, True)
    assert describe(first) == "dubizzle-ae/run-2026-09-14: complete -> exit 0"
    assert describe(again) == (
        "dubizzle-ae/run-2026-09-14: complete, a repeat (the service had this report already: "
        "its verdict then, nothing new stored) -> exit 0"
    )
    assert exit_reason(again).startswith("the service judged the run complete, a repeat (")


def test_retries_5xx_and_429_under_the_same_run_id(service, tmp_path):
    service.scripted = [(503, None, {}), (429, {"detail": "slow down"}, {"Retry-After": "2"})]
    poster, sleeps = poster_for(service.url, tmp_path, backoff_seconds=0.5)
    result = poster.post(minimal_report())
    assert result.outcome == "judged" and result.http_status == 201
    assert len(service.posts) == 3
    assert {json.loads(p["body"])["run_id"] for p in service.posts} == {"run-2026-09-14"}
    assert len({p["body"] for p in service.posts}) == 1  # byte-identical retries
    assert sleeps == [0.5, 2.0]  # backoff, then the service's Retry-After


def test_changed_body_under_same_run_id_is_a_clear_409_not_retried(service, tmp_path):
    poster, sleeps = poster_for(service.url, tmp_path)
    poster.post(minimal_report())
    result = poster.post(minimal_report(collected=1))
    assert result.outcome == "rejected" and result.http_status == 409
    assert "different body" in result.message and result.exit_code == exit_codes.BAD_INPUT
    assert len(service.posts) == 2 and sleeps == []
    assert poster.spooled_paths() == []  # a rejected report is kept aside, never re-sent
    assert (tmp_path / "spool" / "rejected").is_dir()


def test_401_and_403_are_reported_clearly_and_not_retried(service, tmp_path):
    poster, sleeps = poster_for(service.url, tmp_path, token="wrong")
    result = poster.post(minimal_report())
    assert (result.outcome, result.http_status, result.exit_code) == ("rejected", 401, exit_codes.AUTH)
    assert "COMPLETENESS_TOKEN" in result.message
    service.scripted = [(403, {"detail": "token scoped to other sources"}, {})]
    poster, sleeps = poster_for(service.url, tmp_path)
    result = poster.post(minimal_report())
    assert (result.http_status, result.exit_code) == (403, exit_codes.AUTH)
    assert "scoped" in result.message
    assert sleeps == [] and len(service.posts) == 2


def test_422_names_the_fields_and_413_is_clear(service, tmp_path):
    service.scripted = [
        (422, {"errors": [{"path": "collected", "message": "must not be negative"}]}, {}),
        (413, None, {}),
    ]
    poster, _ = poster_for(service.url, tmp_path)
    result = poster.post(minimal_report())
    assert result.http_status == 422 and "collected: must not be negative" in result.message
    assert result.errors == [{"path": "collected", "message": "must not be negative"}]
    result = poster.post(minimal_report(run_id="other"))
    assert result.http_status == 413 and "larger" in result.message
    assert len(service.posts) == 2


def test_invalid_report_is_refused_locally_without_a_request(service, tmp_path):
    poster, _ = poster_for(service.url, tmp_path)
    result = poster.post(minimal_report(collected=-1, started_at="2026-09-14T03:00:00"))
    assert result.outcome == "invalid" and result.exit_code == exit_codes.BAD_INPUT
    assert {e["path"] for e in result.errors} == {"collected", "started_at"}
    assert service.posts == []


def test_unreachable_service_spools_then_sends_spooled_first(service, dead_url, tmp_path):
    down, sleeps = poster_for(dead_url, tmp_path)
    first = down.post(minimal_report(run_id="night-1"))
    assert first.outcome == "spooled" and first.exit_code == exit_codes.SPOOLED
    assert len(sleeps) == 2  # three attempts, then spool
    assert first.spool_path is not None and first.spool_path.exists()
    second = down.post(minimal_report(run_id="night-2"))
    assert second.outcome == "spooled"
    assert len(down.spooled_paths()) == 2

    up, _ = poster_for(service.url, tmp_path)
    third = up.post(minimal_report(run_id="night-3"))
    assert third.outcome == "judged"
    assert [r.run_id for r in third.flushed] == ["night-1", "night-2"]
    assert all(r.outcome == "judged" for r in third.flushed)
    assert [json.loads(p["body"])["run_id"] for p in service.posts] == ["night-1", "night-2", "night-3"]
    assert up.spooled_paths() == []


def test_healthy_service_leaves_nothing_in_the_spool(service, tmp_path):
    poster, _ = poster_for(service.url, tmp_path)
    poster.post(minimal_report())
    assert poster.spooled_paths() == []
    assert not (tmp_path / "spool").exists()


def test_service_failing_with_5xx_throughout_spools_too(service, tmp_path):
    service.scripted = [(502, None, {})] * 3
    poster, _ = poster_for(service.url, tmp_path)
    result = poster.post(minimal_report())
    assert result.outcome == "spooled" and "502" in result.message
    assert poster.flush()[0].outcome == "judged"
    assert poster.spooled_paths() == []


def test_a_spooled_report_already_received_is_a_harmless_repeat(service, tmp_path):
    """The service stored it but the answer was lost: the resend gets 200."""
    poster, _ = poster_for(service.url, tmp_path)
    poster.post(minimal_report())
    poster._spool(minimal_report())  # as if the first answer never arrived
    result = poster.post(minimal_report(run_id="next"))
    assert [r.http_status for r in result.flushed] == [200]


def test_a_spooled_earlier_version_of_the_same_run_is_replaced_not_sent(service, tmp_path):
    poster, _ = poster_for(service.url, tmp_path)
    poster.spool(minimal_report(collected=10, end_reason="shutdown"))  # written when the run was stopped
    poster.spool(minimal_report(run_id="an-earlier-run"))
    result = poster.post(minimal_report(collected=12, end_reason="shutdown"))
    assert result.outcome == "judged" and [r.run_id for r in result.flushed] == ["an-earlier-run"]
    assert [(r["run_id"], r["collected"]) for r in service.reports] == [
        ("an-earlier-run", 9000),
        ("run-2026-09-14", 12),
    ]
    assert poster.spooled_paths() == []


def test_a_service_answering_503_throughout_was_reached_and_its_detail_is_kept(service, tmp_path):
    service.scripted = [(503, {"detail": DATABASE_DOWN, "errors": []}, {"Retry-After": "1"})] * 3
    poster, _ = poster_for(service.url, tmp_path)
    result = poster.post(minimal_report())
    assert (result.outcome, result.exit_code, result.http_status) == ("spooled", exit_codes.SPOOLED, 503)
    assert result.message == (
        f"the service answered 503: {DATABASE_DOWN} (after 3 attempts); the report is spooled to {result.spool_path}"
    )
    assert exit_reason(result) == f"{result.message}; the next run sends it"
    assert "could not be reached" not in exit_reason(result)
    assert poster.spooled_paths() == [result.spool_path]


def test_only_a_service_that_could_not_be_reached_is_said_to_be_unreachable(dead_url, tmp_path):
    poster, _ = poster_for(dead_url, tmp_path, max_attempts=1)
    result = poster.post(minimal_report())
    assert (result.outcome, result.exit_code, result.http_status) == ("spooled", exit_codes.SPOOLED, None)
    assert result.message.startswith(f"the service could not be reached at {dead_url}/api/v1/runs: ")
    assert result.message.endswith(f" (after 1 attempt); the report is spooled to {result.spool_path}")
    assert exit_reason(result).startswith("the service could not be reached at ")


def test_a_503_for_a_spooled_report_is_said_so_too(service, tmp_path):
    poster, _ = poster_for(service.url, tmp_path, max_attempts=1)
    poster.spool(minimal_report(run_id="an-earlier-run"))
    service.scripted = [(503, {"detail": DATABASE_DOWN, "errors": []}, {})]
    result = poster.post(minimal_report())
    assert (result.outcome, result.http_status, len(poster.spooled_paths())) == ("spooled", 503, 2)
    assert result.message.startswith(
        f"the service answered 503: {DATABASE_DOWN} (after 1 attempt) while sending an earlier run's spooled "
        f"report ({minimal_report()['source']}/an-earlier-run), so this run's report was not tried; "
        "the report is spooled to "
    )


def test_a_refused_token_leaves_earlier_runs_reports_in_the_spool_for_one_that_may_post_them(service, tmp_path):
    # Two crawlers share the spool. The first spooled its report while the service was down; the second
    # runs with a mistyped token. Before, the first one's report was moved aside for good.
    poster_for(service.url, tmp_path)[0].spool(minimal_report(run_id="an-earlier-run"))
    wrong, _ = poster_for(service.url, tmp_path, token="mistyped")
    result = wrong.post(minimal_report(run_id="this-run"))
    assert (result.outcome, result.exit_code, result.http_status) == ("rejected", exit_codes.AUTH, 401)
    [kept] = result.flushed
    assert (kept.outcome, kept.run_id, kept.http_status) == ("kept", "an-earlier-run", 401)
    assert describe_flushed(kept).startswith("spooled report of an earlier run, left in the spool: ")
    # This run's own report is kept too, and neither is put aside as rejected.
    assert len(wrong.spooled_paths()) == 2 and not (tmp_path / "spool" / "rejected").exists()
    assert "kept in the spool" in result.message
    # A run with the right token sends both.
    right, _ = poster_for(service.url, tmp_path)
    sent = right.post(minimal_report(run_id="the-next-run"))
    assert sent.outcome == "judged" and sorted(r.run_id for r in sent.flushed) == ["an-earlier-run", "this-run"]
    assert right.spooled_paths() == []
    assert {r["run_id"] for r in service.reports} == {"an-earlier-run", "this-run", "the-next-run"}


def test_a_report_the_service_refuses_for_its_content_is_still_put_aside(service, tmp_path):
    service.scripted = [(422, {"errors": [{"path": "collected", "message": "not an integer"}]}, {})]
    poster, _ = poster_for(service.url, tmp_path)
    result = poster.post(minimal_report())
    assert (result.outcome, result.http_status) == ("rejected", 422)
    assert poster.spooled_paths() == [] and (tmp_path / "spool" / "rejected").is_dir()


class EarlyAnswerServer:
    """Answers after the request's headers, before its body (413, as the service does far over its
    size limit), or hangs up without answering; then closes with the body unread."""

    def __init__(self, answer: bytes) -> None:
        import socket
        import threading

        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                head = b""
                while b"\r\n\r\n" not in head and (chunk := connection.recv(4096)):
                    head += chunk
                connection.sendall(self.answer)

    def close(self) -> None:
        self.listener.close()


TOO_LARGE = json.dumps({"detail": "the report is larger than 65536 bytes", "errors": []}).encode()


def test_an_answer_sent_before_the_body_was_read_is_read_not_taken_for_an_unreachable_service(tmp_path):
    big = minimal_report(
        pages={"fetched": 1, "lost": 4_000, "lost_urls": ["https://s.example/?q=" + "x" * 1_900] * 4_000}
    )
    answered = EarlyAnswerServer(
        b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(TOO_LARGE)}\r\n\r\n".encode()
        + TOO_LARGE
    )
    try:
        poster, _ = poster_for(answered.url, tmp_path)
        result = poster.post(big)
    finally:
        answered.close()
    assert (result.outcome, result.http_status, result.exit_code) == ("rejected", 413, exit_codes.BAD_INPUT)
    assert "larger than 65536 bytes" in result.message and poster.spooled_paths() == []
    # Beside it: a server that hangs up without a word was not reached, and the report waits.
    silent = EarlyAnswerServer(b"")
    try:
        poster, _ = poster_for(silent.url, tmp_path / "silent")
        result = poster.post(big)
    finally:
        silent.close()
    assert (result.outcome, result.exit_code) == ("spooled", exit_codes.SPOOLED)
    assert len(poster.spooled_paths()) == 1


def test_a_redirect_is_said_with_where_it_points_and_the_report_kept_for_the_right_url(service, tmp_path):
    # http:// in front of a service behind SECURE_SSL_REDIRECT: urllib followed the 301 with a GET
    # without the report, and the answer to that GET (405) put the report aside as refused, every run.
    moved_to = service.url.replace("http://", "https://") + "/api/v1/runs"
    poster, _ = poster_for(service.url, tmp_path)
    poster.spool(minimal_report(run_id="an-earlier-run"))
    service.scripted = [(301, None, {"Location": moved_to}), (308, None, {"Location": moved_to})]
    result = poster.post(minimal_report(run_id="this-run"))
    assert (result.outcome, result.exit_code, result.http_status) == ("rejected", exit_codes.BAD_INPUT, 308)
    assert result.message.startswith(
        f"the service answered 308, redirecting {service.url}/api/v1/runs to {moved_to}: "
        "set the service's URL (COMPLETENESS_URL) to the address it names"
    )
    [kept] = result.flushed
    assert (kept.outcome, kept.run_id, kept.http_status) == ("kept", "an-earlier-run", 301)
    assert "a run with the service's URL sends it" in describe_flushed(kept)
    assert [post["status"] for post in service.posts] == [301, 308]  # neither followed
    # Both reports wait in the spool for the right URL; none is put aside as refused.
    assert len(poster.spooled_paths()) == 2 and not (tmp_path / "spool" / "rejected").exists()
    right, _ = poster_for(service.url, tmp_path)
    assert right.post(minimal_report(run_id="the-next-run")).outcome == "judged"
    assert {r["run_id"] for r in service.reports} == {"an-earlier-run", "this-run", "the-next-run"}


def test_a_url_with_no_runs_endpoint_is_said_so_and_the_report_kept(service, tmp_path):
    # COMPLETENESS_URL ending in /api/v1, or missing a path prefix: "rejected (404): Not Found" (or the
    # service's HTML 404 page, quoted) put the report aside for good, as if the report were wrong.
    poster, _ = poster_for(service.url + "/api/v1", tmp_path)
    result = poster.post(minimal_report())
    assert (result.outcome, result.exit_code, result.http_status) == ("rejected", exit_codes.BAD_INPUT, 404)
    assert result.message.startswith(
        f"nothing at {service.url}/api/v1/api/v1/runs takes run reports (404): set the service's URL "
        "(COMPLETENESS_URL) to its base address, without /api/v1/runs; the report is kept in the spool ("
    )
    assert len(poster.spooled_paths()) == 1 and not (tmp_path / "spool" / "rejected").exists()
    assert poster_for(service.url, tmp_path)[0].post(minimal_report(run_id="next")).flushed[0].outcome == "judged"


def test_a_paused_verdict_says_the_run_was_not_judged(service, tmp_path):
    poster, _ = poster_for(service.url, tmp_path)
    answer = {"run": "1", "source": "dubizzle-ae", "run_id": "run-2026-09-14", "verdict": "paused"}
    service.scripted = [(201, {**answer, "silent": False, "exit_code": 0, "findings": []}, {})]
    paused = poster.post(minimal_report())
    assert (paused.verdict, paused.exit_code) == ("paused", 0)
    assert exit_reason(paused) == (
        "the source is paused in the service: the run was recorded, not judged, and alerts nobody"
    )
    complete = poster.post(minimal_report(run_id="run-2026-09-15"))
    assert exit_reason(complete) == "the service judged the run complete"


def test_a_service_url_without_http_is_a_setting_to_fix_not_an_outage(service, tmp_path):
    # "127.0.0.1:8450" (as ADDR is written) was tried four times with backoff, "could not be reached:
    # unknown url type", exit 75: an outage to wait out, on every run, while the setting was wrong.
    address = service.url.split("://", 1)[1]
    poster, sleeps = poster_for(address, tmp_path)
    result = poster.post(minimal_report())
    assert (result.outcome, result.exit_code, sleeps, service.posts) == ("invalid", exit_codes.BAD_INPUT, [], [])
    assert f"COMPLETENESS_URL) '{address}' is no http:// or https:// address" in result.message, result.message
    assert f"e.g. http://{address}" in result.message
    assert exit_reason(result).startswith("the report was not sent: the service's URL")
    assert poster.spooled_paths() == [result.spool_path]
    assert poster.flush() == [] and poster.spooled_paths() == [result.spool_path]  # kept, untouched
    # Set right, the next run sends the kept report first, then its own.
    fixed, _ = poster_for(service.url, tmp_path)
    later = fixed.post(minimal_report(run_id="run-2026-09-15"))
    assert later.outcome == "judged" and [f.run_id for f in later.flushed] == ["run-2026-09-14"]
    assert fixed.spooled_paths() == []


def test_http_and_https_urls_are_posted_to_as_before(service, tmp_path):
    for url in (service.url, service.url.replace("http://", "HTTP://")):
        poster, _ = poster_for(url, tmp_path)
        assert poster.url_problem is None
    assert ReportPoster("https://completeness.example", "t", spool_dir=tmp_path).url_problem is None
    assert "e.g." not in ReportPoster("ftp://completeness.example", "t", spool_dir=tmp_path).url_problem

"""A crawler with a wrong token, behind an address already held back for unknown tokens, is told its
token is refused (exit 77, the report kept for a token that may post it), not to wait and retry."""

import pytest
from django.test import override_settings

from completeness_client import ReportPoster, exit_codes
from sources.models import Run
from tests.conftest import make_token, report


@pytest.mark.django_db(transaction=True)
@override_settings(API_FAILED_TOKENS_PER_ADDRESS="1/10min")
def test_a_held_back_unknown_token_exits_77_at_once_and_keeps_the_report(live_server, tmp_path):
    make_token("the-real-one")
    sleeps: list[float] = []
    poster = ReportPoster(
        live_server.url, "cmpl_000000000000_typo", spool_dir=tmp_path / "spool", sleep=sleeps.append, max_attempts=3
    )
    first = poster.post(report(run_id="run-1"))
    assert (first.http_status, first.exit_code) == (401, exit_codes.AUTH)
    held = poster.post(report(run_id="run-2"))
    # The service answered 429 (too many unknown tokens from here) with RFC 6750's invalid_token.
    assert (held.outcome, held.http_status, held.exit_code) == ("rejected", 401, exit_codes.AUTH), held.message
    assert "unknown" in held.message and "kept in the spool" in held.message
    assert sleeps == []
    assert len(poster.spooled_paths()) == 2
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
# A day's window: the limiter's windows are fixed, and with a minute's the retry (its sleep is not
# slept) crossed into the next minute one run in a few hundred and was taken (CI, 2026-12-05).
@override_settings(API_RATE_PER_TOKEN="1/day")
def test_a_valid_token_over_its_rate_still_waits_and_retries(live_server, tmp_path):
    sleeps: list[float] = []
    token = make_token("busy")
    poster = ReportPoster(live_server.url, token, spool_dir=tmp_path / "spool", sleep=sleeps.append, max_attempts=2)
    assert poster.post(report(run_id="run-1")).exit_code == exit_codes.COMPLETE
    held = poster.post(report(run_id="run-2"))
    assert (held.outcome, held.http_status, held.exit_code) == ("spooled", 429, exit_codes.SPOOLED)
    assert len(sleeps) == 1 and sleeps[0] >= 1

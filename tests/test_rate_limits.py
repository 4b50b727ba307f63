"""Rate limits: logins (django-axes), the API per token and per address, token guessing, and the
password-reset form. Beyond a limit: 429 (with Retry-After where the caller is a program); within it,
everything works as before."""

from datetime import timedelta

import pytest
from django.core import mail
from django.test import override_settings

from completeness.web.throttle import Rate
from sources.models import Run
from tests.conftest import make_token, report

OTHER_ADDRESS = {"REMOTE_ADDR": "10.9.8.7"}


def log_in(client, password: str, **extra):
    return client.post("/accounts/login/", {"username": "ops", "password": password}, **extra)


# --- logins ---------------------------------------------------------------------------------------


@override_settings(AXES_FAILURE_LIMIT=5)
def test_after_five_wrong_passwords_even_the_right_one_is_refused(client, staff):
    for _ in range(4):
        assert log_in(client, "wrong").status_code == 200
    assert log_in(client, "wrong").status_code == 429
    response = log_in(client, "ops-password")
    assert response.status_code == 429
    assert client.get("/").status_code == 302  # still not logged in


@override_settings(AXES_FAILURE_LIMIT=5, AXES_COOLOFF_TIME=timedelta(minutes=15))
def test_a_locked_out_login_says_when_to_try_again(client, staff):
    for _ in range(5):
        response = log_in(client, "wrong")
    assert response.status_code == 429
    assert response["Retry-After"] == "900"
    assert "locked" in response.content.decode().lower()
    assert log_in(client, "ops-password")["Retry-After"] == "900"


@override_settings(AXES_FAILURE_LIMIT=5)
def test_after_four_wrong_passwords_the_right_one_logs_in(client, staff):
    for _ in range(4):
        assert log_in(client, "wrong").status_code == 200
    response = log_in(client, "ops-password")
    assert response.status_code == 302 and response["Location"] == "/"


@override_settings(AXES_FAILURE_LIMIT=5)
def test_a_lockout_holds_for_one_address_not_for_the_operator_elsewhere(client, staff):
    for _ in range(5):
        log_in(client, "wrong")
    assert log_in(client, "ops-password", **OTHER_ADDRESS).status_code == 302


# Behind a reverse proxy every client arrives from the proxy's address: five wrong passwords from
# anyone locked the username out for every operator, and one address's password resets were everyone's.
BEHIND_PROXY = {"REMOTE_ADDR": "127.0.0.1"}


@override_settings(AXES_FAILURE_LIMIT=5, CLIENT_ADDRESS_HEADER="X-Forwarded-For")
def test_behind_a_proxy_a_lockout_holds_for_the_client_not_for_everyone_it_forwards(client, staff):
    for _ in range(5):
        log_in(client, "wrong", HTTP_X_FORWARDED_FOR="198.51.100.1", **BEHIND_PROXY)
    assert log_in(client, "ops-password", HTTP_X_FORWARDED_FOR="198.51.100.1", **BEHIND_PROXY).status_code == 429
    assert log_in(client, "ops-password", HTTP_X_FORWARDED_FOR="203.0.113.9", **BEHIND_PROXY).status_code == 302


@override_settings(AXES_FAILURE_LIMIT=5, CLIENT_ADDRESS_HEADER="X-Forwarded-For")
def test_behind_a_proxy_a_client_cannot_name_its_own_address(client, staff):
    # The proxy appends the address it saw: what the client sent before it is not read.
    for n in range(5):
        log_in(client, "wrong", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}, 198.51.100.1", **BEHIND_PROXY)
    assert log_in(client, "ops-password", HTTP_X_FORWARDED_FOR="198.51.100.1", **BEHIND_PROXY).status_code == 429


@override_settings(CLIENT_ADDRESS_HEADER="X-Real-IP")
def test_behind_a_proxy_password_resets_are_counted_per_client(client, staff):
    staff.email = "ops@example.test"
    staff.save()
    for _ in range(5):
        client.post(
            "/accounts/password_reset/", {"email": "x@example.test"}, HTTP_X_REAL_IP="198.51.100.1", **BEHIND_PROXY
        )
    reset = client.post(
        "/accounts/password_reset/", {"email": "ops@example.test"}, HTTP_X_REAL_IP="203.0.113.9", **BEHIND_PROXY
    )
    assert reset.status_code == 302 and len(mail.outbox) == 1


# --- the API --------------------------------------------------------------------------------------


def assert_throttled(response):
    assert response.status_code == 429, response.content
    assert int(response["Retry-After"]) >= 1
    body = response.json()
    assert body["errors"] == [] and body["detail"]


@override_settings(API_RATE_PER_TOKEN="3/min")
def test_a_token_over_its_rate_gets_429_with_retry_after(api):
    for n in range(3):
        assert api.post_run(report(run_id=f"r{n}")).status_code == 201
    assert_throttled(api.post_run(report(run_id="r3")))
    assert_throttled(api.get("/sources"))
    # A valid token over its rate is told to wait, not that its token is refused.
    assert "WWW-Authenticate" not in api.post_run(report(run_id="r4"))


@override_settings(API_RATE_PER_TOKEN="3/min")
def test_another_token_is_not_held_back_by_a_busy_one(api):
    for n in range(4):
        api.post_run(report(run_id=f"r{n}"))
    assert api.post_run(report(run_id="r4"), token=make_token("other")).status_code == 201


@override_settings(API_RATE_PER_ADDRESS="3/min", API_RATE_PER_TOKEN="off")
def test_an_address_over_its_rate_gets_429_whatever_the_token(api):
    tokens = [make_token(f"t{n}") for n in range(4)]
    for n in range(3):
        assert api.post_run(report(run_id=f"r{n}"), token=tokens[n]).status_code == 201
    assert_throttled(api.post_run(report(run_id="r3"), token=tokens[3]))
    other = api.client.post(
        "/api/v1/runs", data=b"{}", content_type="application/json", **api.headers(tokens[3]), **OTHER_ADDRESS
    )
    assert other.status_code == 422


@override_settings(API_FAILED_TOKENS_PER_ADDRESS="5/10min")
def test_an_address_that_guesses_tokens_is_held_back_but_a_good_token_from_it_never_is(api):
    # Anyone behind the same NAT or proxy as a crawler could otherwise lock the crawler out.
    for n in range(5):
        assert api.post_run(report(), token=f"guess-{n}").status_code == 401
    assert_throttled(api.post_run(report(), token="guess-5"))
    assert_throttled(api.post_run(report(), token=make_token("revoked-later")[:-1] + "x"))
    response = api.post_run(report())
    assert response.status_code == 201, response.content
    assert Run.objects.get().run_id == "run-1"
    # Still held back for the next unknown token, after the good one went through.
    assert_throttled(api.post_run(report(), token="guess-6"))


@override_settings(API_FAILED_TOKENS_PER_ADDRESS="2/10min")
def test_an_unknown_token_held_back_is_told_its_token_is_unknown_not_to_retry_later(api):
    # "Too many requests." read as a rate to wait out: the crawler's kit retried and spooled the
    # report (exit 75) for a token that no retry could make valid.
    for n in range(2):
        assert api.post_run(report(), token=f"typo-{n}").status_code == 401
    response = api.post_run(report(), token="typo-2")
    assert_throttled(response)
    assert response.json()["detail"].startswith("too many unknown tokens from this address, and this one is unknown")
    # Said for clients too (RFC 6750): the token is refused, whatever the status.
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'


@override_settings(API_FAILED_TOKENS_PER_ADDRESS="5/10min", API_RATE_PER_ADDRESS="3/min")
def test_unknown_tokens_do_not_spend_the_addresss_rate_of_good_requests(api):
    for n in range(4):
        assert api.post_run(report(), token=f"guess-{n}").status_code == 401
    assert [api.post_run(report(run_id=f"r{n}")).status_code for n in range(3)] == [201, 201, 201]
    assert_throttled(api.post_run(report(run_id="r3")))


@override_settings(API_FAILED_TOKENS_PER_ADDRESS="5/10min")
def test_a_few_wrong_tokens_do_not_hold_back_the_good_one(api):
    for n in range(4):
        assert api.post_run(report(), token=f"guess-{n}").status_code == 401
    assert api.post_run(report()).status_code == 201


def test_the_default_rates_let_a_busy_crawler_fleet_through(api):
    for n in range(100):
        assert api.post_run(report(run_id=f"r{n}")).status_code == 201


# --- password reset -------------------------------------------------------------------------------


@override_settings(PASSWORD_RESET_RATE_PER_ADDRESS="2/hour")
def test_the_password_reset_form_mails_an_address_only_so_often(client, staff):
    staff.email = "ops@example.test"
    staff.save()
    for _ in range(2):
        assert client.post("/accounts/password_reset/", {"email": "ops@example.test"}).status_code == 302
    response = client.post("/accounts/password_reset/", {"email": "ops@example.test"})
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    assert len(mail.outbox) == 2
    assert client.post("/accounts/password_reset/", {"email": "ops@example.test"}, **OTHER_ADDRESS).status_code == 302
    assert len(mail.outbox) == 3
    assert client.get("/accounts/password_reset/").status_code == 200


# --- the rate setting -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,rate",
    [
        ("600/min", Rate(600, 60)),
        ("20/10min", Rate(20, 600)),
        ("5/hour", Rate(5, 3600)),
        ("off", None),
        ("", None),
    ],
)
def test_a_rate_reads_as_count_per_period(text, rate):
    assert Rate.parse(text) == rate


@pytest.mark.parametrize("text", ["600", "0/min", "ten/min", "5/fortnight", "-1/min"])
def test_a_rate_that_is_no_rate_is_refused_by_name(text):
    with pytest.raises(ValueError, match="no rate"):
        Rate.parse(text)

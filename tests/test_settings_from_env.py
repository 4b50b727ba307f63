"""A wrong value of a setting in the environment stops start-up with a message that names the variable
and what it takes; a right one (and an empty one, as a compose file's `${VAR:-}` passes it) starts.

The settings module is run afresh (runpy) with the environment of each case: what a process reads at
start-up, without starting one per case."""

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

SETTINGS = Path(__file__).resolve().parent.parent / "completeness" / "settings.py"


@pytest.fixture
def start(monkeypatch, tmp_path):
    monkeypatch.setenv("VAR_DIR", str(tmp_path))

    def start(**env: str) -> dict:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return runpy.run_path(str(SETTINGS))

    return start


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("DB_CONN_MAX_AGE", "10m", "a whole number, at least 0"),
        ("REPORT_MAX_BYTES", "1MiB", "a whole number, at least 1"),
        ("PRUNE_BATCH", "0", "a whole number, at least 1"),  # pruned nothing, ever, without a word
        ("EMAIL_PORT", "smtp", "a whole number, 1 to 65535"),
        ("LOGIN_FAILURE_LIMIT", "five", "a whole number, at least 1"),
        ("Q_WORKERS", "two", "a whole number, at least 1"),
        ("PRUNE_SECONDS", "1d", "a number more than 0, without a unit"),
        ("CACHE_TIMEOUT_SECONDS", "nan", "a number more than 0, without a unit"),
        ("LOGIN_COOLOFF_MINUTES", "15m", "a number more than 0, without a unit"),
        ("ALERTS_GROUP_SECONDS", "-1", "a number (0 or more), without a unit"),
        ("SECURE_COOKIES", "ture", "true or false"),  # was read as false: cookies over plain HTTP
        ("DEBUG", "maybe", "true or false"),
        ("TASK_ENGINE", "celry", "django_q or celery"),  # started, then failed at the first alert
        ("LOG_LEVEL", "verbose", "DEBUG, INFO, WARNING, ERROR or CRITICAL"),
        ("SITE_URL", "monitor.example", "the address people open"),  # alert links without a scheme
        # Both counted every client as the proxy, in the login lockout and the rate limits.
        ("CLIENT_ADDRESS_HEADER", "Forwarded", "have the proxy set X-Forwarded-For or X-Real-IP"),
        ("CLIENT_ADDRESS_HEADER", "HTTP_X_FORWARDED_FOR", "name the header as the proxy sends it"),
        ("SITE_URL", "https://", "the address people open"),
    ],
)
def test_a_wrong_value_stops_start_up_naming_the_variable_and_what_it_takes(start, name, value, says):
    with pytest.raises(ImproperlyConfigured) as refused:
        start(**{name: value})
    assert str(refused.value).startswith(f"{name} is {value!r}: ") and says in str(refused.value)


def test_the_right_values_of_the_same_variables_start_and_are_read(start):
    settings = start(
        DB_CONN_MAX_AGE="600",
        REPORT_MAX_BYTES="2048",
        PRUNE_BATCH="500",
        EMAIL_PORT="587",
        LOGIN_FAILURE_LIMIT="3",
        Q_WORKERS="4",
        PRUNE_SECONDS="3600",
        CACHE_TIMEOUT_SECONDS="0.25",
        LOGIN_COOLOFF_MINUTES="30",
        ALERTS_GROUP_SECONDS="0",  # 0 means no grouping
        SECURE_COOKIES="TRUE",
        DEBUG="0",
        TASK_ENGINE="celery",
        LOG_LEVEL="warning",
        SITE_URL="https://monitor.example/",
        CLIENT_ADDRESS_HEADER="X-Real-IP",
    )
    assert settings["DATABASES"]["default"]["CONN_MAX_AGE"] == 600
    assert (settings["REPORT_MAX_BYTES"], settings["PRUNE_BATCH"], settings["EMAIL_PORT"]) == (2048, 500, 587)
    assert (settings["AXES_FAILURE_LIMIT"], settings["Q_CLUSTER"]["workers"]) == (3, 4)
    assert (settings["PRUNE_SECONDS"], settings["CACHE_TIMEOUT_SECONDS"]) == (3600, 0.25)
    assert settings["AXES_COOLOFF_TIME"].total_seconds() == 1800 and settings["ALERTS_GROUP_SECONDS"] == 0
    assert settings["SESSION_COOKIE_SECURE"] is True and settings["DEBUG"] is False
    assert settings["TASK_ENGINE"] == "celery" and settings["LOGGING"]["root"]["level"] == "WARNING"
    assert settings["SITE_URL"] == "https://monitor.example" and settings["CLIENT_ADDRESS_HEADER"] == "X-Real-IP"


def test_an_empty_value_is_the_default(start):
    settings = start(
        DB_CONN_MAX_AGE="", EMAIL_PORT=" ", SECURE_COOKIES="", TASK_ENGINE="", LOG_LEVEL="", ALLOWED_HOSTS=""
    )
    assert settings["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "[::1]"]
    assert settings["DATABASES"]["default"]["CONN_MAX_AGE"] == 0 and settings["EMAIL_PORT"] == 25
    assert settings["SESSION_COOKIE_SECURE"] is False and settings["TASK_ENGINE"] == "django_q"
    assert settings["LOGGING"]["root"]["level"] == "INFO"


@pytest.mark.parametrize(("threads", "refused"), [("x", True), ("0", True), ("4", False), ("", False)])
def test_gunicorn_refuses_a_wrong_web_threads_naming_it(tmp_path, threads, refused):
    # gunicorn reads WEB_THREADS in gunicorn.conf.py, outside the settings module.
    env = {**os.environ, "VAR_DIR": str(tmp_path), "WEB_THREADS": threads}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gunicorn"), "--check-config", "completeness.wsgi"],
        cwd=SETTINGS.parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode != 0) is refused, done.stderr
    assert (f"WEB_THREADS is {threads!r}: a whole number, at least 1" in done.stderr) is refused


# A typo started the service: every report was answered 500 at the cache's first use, and every
# alert's queueing failed on the broker. Refused without repeating the URL, which may hold a password.
URL_SETTINGS = {
    "CACHE_URL": (
        ("redis//:hunter2@127.0.0.1:6379/1", "memcached://127.0.0.1:11211", "127.0.0.1:6379"),
        "CACHE_URL is no Redis URL: say redis://host:6379/1",
        ("redis://:hunter2@127.0.0.1:6379/1", "rediss://cache.example:6380/0", "unix:///run/redis.sock"),
        lambda settings: settings["CACHES"]["default"]["LOCATION"],
    ),
    "CELERY_BROKER_URL": (
        ("redis//:hunter2@127.0.0.1:6379/0", "127.0.0.1:6379", "hunter2@redis-host"),
        "CELERY_BROKER_URL is no broker URL: say redis://host:6379/0",
        ("redis://:hunter2@127.0.0.1:6379/0", "rediss://broker.example:6380/0", "amqp://guest@rabbit//"),
        lambda settings: settings["CELERY_BROKER_URL"],
    ),
}


@pytest.mark.parametrize("name", URL_SETTINGS)
def test_a_url_setting_without_its_scheme_stops_start_up_without_repeating_it(start, name):
    wrongs, says, rights, read = URL_SETTINGS[name]
    for wrong in wrongs:
        with pytest.raises(ImproperlyConfigured) as refused:
            start(**{name: wrong})
        assert str(refused.value).startswith(says) and "hunter2" not in str(refused.value)
    for right in rights:
        assert read(start(**{name: right})) == right


def test_a_database_url_of_an_unknown_scheme_stops_start_up_naming_the_scheme_not_the_password(start):
    with pytest.raises(ImproperlyConfigured) as refused:
        start(DATABASE_URL="postgress://completeness:hunter2@127.0.0.1:5432/completeness")
    assert str(refused.value).startswith("DATABASE_URL begins with 'postgress'://, no database this service runs on")
    assert "hunter2" not in str(refused.value)
    right = start(DATABASE_URL="postgres://completeness:hunter2@127.0.0.1:5432/completeness")
    assert right["DATABASES"]["default"]["ENGINE"] == "django.db.backends.postgresql"


def test_gunicorn_opens_no_control_socket(tmp_path):
    # gunicorn 27 opened one at $XDG_RUNTIME_DIR or $HOME/.gunicorn/gunicorn.ctl, one path for every
    # gunicorn of the user on the host (a second server took it over, the first to stop deleted it),
    # and in the image, whose user's home does not exist, logged an ERROR at every start. The service
    # uses none of it: signals (HUP, TERM, TTIN) do what it offers.
    from tests.web_process import procfile_web

    home, runtime = tmp_path / "home", tmp_path / "runtime"
    home.mkdir()
    runtime.mkdir()
    with procfile_web(tmp_path, 1, HOME=str(home), XDG_RUNTIME_DIR=str(runtime)):
        assert list(home.rglob("*")) == [] and list(runtime.rglob("*")) == []
    assert "Control server" not in (tmp_path / "web.log").read_text()

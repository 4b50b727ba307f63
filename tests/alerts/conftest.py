import pytest
from django.contrib.auth.models import User
from django.db import connection

from sources.alerts import channels, delivery
from tests.alerts.sinks import SmtpSink
from tests.conftest import report


@pytest.fixture
def smtp_sink(settings):
    with SmtpSink() as sink:
        # pytest-django swaps in the in-memory mail backend; these tests talk SMTP for real.
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST = "127.0.0.1"
        settings.EMAIL_PORT = sink.port
        settings.EMAIL_TIMEOUT = 5
        yield sink


@pytest.fixture
def inline_jobs(settings):
    """Jobs run where they are enqueued (django-q2's sync mode): a test sees delivery happen."""
    settings.TASK_ENGINE = "django_q"
    settings.TASKS_SYNC = True


@pytest.fixture
def no_backoff(settings):
    settings.ALERTS_RETRY_BASE_SECONDS = 0
    settings.ALERTS_RETRY_MAX_SECONDS = 0
    settings.ALERTS_HTTP_TIMEOUT = (2, 2)


@pytest.fixture
def slack(db, http_sink):
    return channels.create_channel(kind="slack", target=http_sink.url("/slack"))


def pending_kinds(**filters) -> list[str]:
    from sources.models import Notification

    return list(Notification.objects.filter(**filters).order_by("id").values_list("kind", flat=True))


def deliver_all(now=None) -> list[str]:
    """Deliver every due notification here and now (or at now); returns the statuses they were left in."""
    from sources.models import Notification

    due = Notification.objects.filter(status__in=delivery.DELIVERABLE).order_by("id").values_list("pk", flat=True)
    return [delivery.deliver(pk, now=now) for pk in list(due)]


postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (row locks and real concurrency)"
)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Users are created per test here; PBKDF2's deliberate slowness buys nothing in a test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def e2e_template(tmp_path_factory, django_db_blocker):
    """One migrated database per run; each end-to-end test starts from a copy."""
    from tests.alerts.stack import Database

    with django_db_blocker.unblock():
        template = Database.migrated(tmp_path_factory.mktemp("e2e-template"))
    yield template
    template.__exit__(None, None, None)


def post_day(api, slug: str, n: int, **fields) -> None:
    """A complete-unless-overridden report of `slug` for 2026-09-`n`, 03:00-04:00 UTC, stored as new."""
    body = report(
        source=slug,
        run_id=f"{slug}-{n}",
        started_at=f"2026-09-{n:02d}T03:00:00Z",
        finished_at=f"2026-09-{n:02d}T04:00:00Z",
        **fields,
    )
    assert api.post_run(body).status_code == 201


@pytest.fixture
def member(client):
    """A logged-in user who is not staff."""
    client.force_login(User.objects.create_user("member", password="x"))
    return client

"""A stand-in for a well-known Django monitor's heartbeat ping, to measure ingest against on the same
machine at the same moment: look the check up by its code, lock it, record the ping, update the check.

Served by gunicorn exactly like the service (2 sync workers, persistent connections, same database).
"""

import os
import uuid

import dj_database_url
from django.conf import settings

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["127.0.0.1"],
    ROOT_URLCONF=__name__,
    SECRET_KEY="bench",
    DATABASES={"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=600)},
    INSTALLED_APPS=[],
    MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
    USE_TZ=True,
)

import django  # noqa: E402

django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils import timezone  # noqa: E402


def ping(request, code: uuid.UUID):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT id, n_pings FROM bench_check WHERE code = %s FOR UPDATE", [str(code)])
        row = cursor.fetchone()
        if row is None:
            return HttpResponse("not found", status=404)
        now = timezone.now()
        cursor.execute(
            "INSERT INTO bench_ping (check_id, n, created, remote_addr, ua, body) VALUES (%s, %s, %s, %s, %s, %s)",
            [
                row[0],
                row[1] + 1,
                now,
                request.META.get("REMOTE_ADDR", ""),
                request.headers.get("User-Agent", ""),
                request.body.decode()[:10000],
            ],
        )
        cursor.execute(
            "UPDATE bench_check SET n_pings = %s, last_ping = %s, status = 'up' WHERE id = %s",
            [row[1] + 1, now, row[0]],
        )
    return HttpResponse("OK")


urlpatterns = [path("ping/<uuid:code>", ping)]
application = get_wsgi_application()

SCHEMA = """
DROP TABLE IF EXISTS bench_ping; DROP TABLE IF EXISTS bench_check;
CREATE TABLE bench_check (id serial PRIMARY KEY, code uuid UNIQUE NOT NULL, n_pings int NOT NULL DEFAULT 0,
                          last_ping timestamptz, status text NOT NULL DEFAULT 'new');
CREATE TABLE bench_ping (id bigserial PRIMARY KEY, check_id int NOT NULL REFERENCES bench_check(id), n int,
                         created timestamptz NOT NULL, remote_addr text, ua text, body text);
CREATE INDEX ON bench_ping (check_id, created);
"""


def create_checks(count: int) -> list[str]:
    codes = [str(uuid.uuid4()) for _ in range(count)]
    with connection.cursor() as cursor:
        cursor.execute(SCHEMA)
        for code in codes:
            cursor.execute("INSERT INTO bench_check (code) VALUES (%s)", [code])
    return codes

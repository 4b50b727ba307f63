"""One settings module for every environment; everything that differs comes from the environment."""

import logging
import math
import os
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from django.core.checks.security.base import SECRET_KEY_MIN_LENGTH, SECRET_KEY_MIN_UNIQUE_CHARACTERS
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
# Absolute, whatever it was given as (bin/serve says "var"): the file cache refuses a relative path.
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var")).resolve()
# The embedded database and collected static files live here; SQLite will not create a folder.
(VAR_DIR / "static").mkdir(parents=True, exist_ok=True)


# A value that is not one of these is refused at start-up: `SECURE_COOKIES=ture` read as false sent
# session cookies over plain HTTP without a word. Empty is unset, as a compose file's `${VAR:-}` gives it.
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


def env_text(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def env_bool(name: str, default: bool) -> bool:
    value = env_text(name)
    if value is None:
        return default
    if value.lower() not in TRUE_WORDS | FALSE_WORDS:
        raise ImproperlyConfigured(f"{name} is {value!r}: true or false (also 1/0, yes/no, on/off)")
    return value.lower() in TRUE_WORDS


def env_int(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    """A whole number from the environment, or start-up stops naming the variable: int()'s own
    ValueError named only the value, so the operator had to guess which of forty settings it was."""
    value = env_text(name)
    if value is None:
        return default
    bounds = f"at least {minimum}" if maximum is None else f"{minimum} to {maximum}"
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum or (maximum is not None and number > maximum):
        raise ImproperlyConfigured(f"{name} is {value!r}: a whole number, {bounds}")
    return number


def env_float(name: str, default: float, *, zero: bool = False) -> float:
    """A number of seconds (or minutes) from the environment: more than 0 (or 0 too, where 0 means
    something), never nan or inf; else start-up stops naming the variable."""
    value = env_text(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise ImproperlyConfigured(
            f"{name} is {value!r}: a number{' (0 or more)' if zero else ' more than 0'}, without a unit"
        )
    return number


def env_list(name: str, default: str) -> list[str]:
    # Empty is unset here too: ALLOWED_HOSTS= made every request a 400, the probes' included.
    return [item.strip() for item in (env_text(name) or default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
# The built-in key is public (it is in this file): sessions, password-reset links and CSRF tokens
# signed with it can be forged, so it is only accepted with DEBUG on. bin/serve and bin/test make
# and pass a key of their own.
BUILTIN_SECRET_KEY = "insecure-development-key-set-SECRET_KEY-in-production"
SECRET_KEY = os.environ.get("SECRET_KEY", "").strip() or BUILTIN_SECRET_KEY
MAKE_A_KEY = (
    "Set SECRET_KEY to a long random value, e.g. the output of "
    "python3 -c 'import secrets; print(secrets.token_urlsafe(50))' (or DEBUG=true on a laptop)."
)
if SECRET_KEY == BUILTIN_SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured(
        "SECRET_KEY is not set and DEBUG is false: refusing to start with the built-in key, which anyone "
        f"can read. {MAKE_A_KEY}"
    )
# The bar of Django's own deploy check (security.W009), refused rather than warned about: a short
# key signs sessions and CSRF tokens anyone can forge by guessing it.
if not DEBUG and (len(SECRET_KEY) < SECRET_KEY_MIN_LENGTH or len(set(SECRET_KEY)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS):
    raise ImproperlyConfigured(
        f"SECRET_KEY is too weak and DEBUG is false: it has {len(SECRET_KEY)} characters ({len(set(SECRET_KEY))} "
        f"different); at least {SECRET_KEY_MIN_LENGTH} ({SECRET_KEY_MIN_UNIQUE_CHARACTERS} different) are needed. "
        f"{MAKE_A_KEY}"
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
SITE_URL = env_text("SITE_URL") or "http://127.0.0.1:8000"
# Every alert's links are SITE_URL + a path: without a scheme (SITE_URL=monitor.example) they were no
# links, and email Message-IDs named no host.
if urlsplit(SITE_URL).scheme not in ("http", "https") or not urlsplit(SITE_URL).hostname:
    raise ImproperlyConfigured(f"SITE_URL is {SITE_URL!r}: the address people open, e.g. https://monitor.example")
SITE_URL = SITE_URL.rstrip("/")


def env_proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """`X-Forwarded-Proto: https` as Django wants it: ("HTTP_X_FORWARDED_PROTO", "https")."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    header, sep, expected = value.partition(":")
    if not sep or not header.strip() or not expected.strip():
        raise ImproperlyConfigured(f"{name} is {value!r}: say e.g. 'X-Forwarded-Proto: https'")
    return "HTTP_" + header.strip().upper().replace("-", "_"), expected.strip()


# HTTPS (docs in the README's configuration table). Off by default so that a laptop and the tests
# run on plain HTTP; a deployment behind TLS turns them on and `manage.py check --deploy` is clean.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Probes and the metrics scraper reach a pod over plain HTTP, from inside; a redirect would fail them.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
# completeness/web/security.py sends it; {nonce} is the request's own. CONTENT_SECURITY_POLICY=off sends none.
CONTENT_SECURITY_POLICY = os.environ.get(
    "CONTENT_SECURITY_POLICY",
    "; ".join(
        [
            "default-src 'self'",
            "script-src 'self' 'nonce-{nonce}'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    ),
)
if CONTENT_SECURITY_POLICY.strip().lower() in ("", "off", "none"):
    CONTENT_SECURITY_POLICY = ""

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ninja",
    "django_q",
    "axes",
    "sources",
]

MIDDLEWARE = [
    # Outermost, so that it sees every answer of the API (docs in the module).
    "sources.api.middleware.ErrorResponsesMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "completeness.web.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # demo / demo (seed_demo) is refused from anywhere but this machine: its password is public.
    "sources.demo.backend.DemoLoginFromThisMachineOnly",
    "django.contrib.auth.backends.ModelBackend",
]
# Logins: after LOGIN_FAILURE_LIMIT wrong passwords for one username from one address, that pair is
# locked out (429, the right password included) for LOGIN_COOLOFF_MINUTES. The pair, not the
# username alone, so that nobody can lock an operator out from elsewhere.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Behind a reverse proxy every client arrives from the proxy's address. CLIENT_ADDRESS_HEADER names the
# header in which the proxy passes its client on (X-Forwarded-For, X-Real-IP): the lockout and the rate
# limits then count each client, not the proxy (completeness/web/throttle.py). Only when every request
# comes through a proxy that sets it: a client reaching the service directly could name any address.
CLIENT_ADDRESS_HEADER = env_text("CLIENT_ADDRESS_HEADER") or ""
# Two spellings that were read as no address at all, so that every client still counted as the proxy
# (five wrong passwords from anyone locked a username out for everyone), without a word: RFC 7239's
# Forwarded, whose for="..." is not a bare address, and Django's META name of a header.
if CLIENT_ADDRESS_HEADER.lower() == "forwarded":
    raise ImproperlyConfigured(
        "CLIENT_ADDRESS_HEADER is 'Forwarded': its for=... form is not read; have the proxy set "
        "X-Forwarded-For or X-Real-IP and name that"
    )
if CLIENT_ADDRESS_HEADER.upper().startswith("HTTP_"):
    raise ImproperlyConfigured(
        f"CLIENT_ADDRESS_HEADER is {CLIENT_ADDRESS_HEADER!r}: name the header as the proxy sends it, "
        "e.g. X-Forwarded-For, not as Django's request.META spells it"
    )
AXES_CLIENT_IP_CALLABLE = "completeness.web.lockout.client_ip"
# axes' own 429, with Retry-After (the cool-off), which axes leaves out.
AXES_LOCKOUT_CALLABLE = "completeness.web.lockout.lockout_response"
# Its start-up banner would open the output of every manage.py command.
AXES_VERBOSE = False

# Rate limits (completeness/web/throttle.py): "N/min", "N/10min", "N/hour" or "off". Beyond them: 429 and
# Retry-After. Counted in the cache, which every worker shares: files under VAR_DIR/cache on one machine
# (completeness/web/counters.py), or Redis at CACHE_URL (redis://...) when the web runs on several.
API_RATE_PER_ADDRESS = os.environ.get("API_RATE_PER_ADDRESS", "600/min")
API_RATE_PER_TOKEN = os.environ.get("API_RATE_PER_TOKEN", "600/min")
API_FAILED_TOKENS_PER_ADDRESS = os.environ.get("API_FAILED_TOKENS_PER_ADDRESS", "20/10min")
PASSWORD_RESET_RATE_PER_ADDRESS = os.environ.get("PASSWORD_RESET_RATE_PER_ADDRESS", "5/hour")
# A Redis that accepts connections and never answers held each report for redis-py's own 5 s per
# cache call (two on the ingest path): the service goes on without the cache (web/shared_cache.py),
# so it waits for it no longer than this. A healthy Redis answers in well under a millisecond.
CACHE_TIMEOUT_SECONDS = env_float("CACHE_TIMEOUT_SECONDS", 1)


def redis_cache(url: str, timeout: float) -> dict[str, Any]:
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": url,
        "OPTIONS": {"socket_connect_timeout": timeout, "socket_timeout": timeout},
    }


# redis-py takes these; anything else (a typo: redis//host) raised ValueError at the first use of the
# cache, which the service's way around a cache that is down does not catch: every report was a 500.
CACHE_URL_SCHEMES = ("redis://", "rediss://", "unix://")
CACHE_URL = env_text("CACHE_URL")
if CACHE_URL is not None and not CACHE_URL.lower().startswith(CACHE_URL_SCHEMES):
    # The URL itself is not repeated: it may hold Redis' password.
    raise ImproperlyConfigured(
        "CACHE_URL is no Redis URL: say redis://host:6379/1 (rediss:// with TLS, unix:///path/to/redis.sock)"
    )

CACHES: dict[str, dict[str, Any]]
if CACHE_URL is not None:
    CACHES = {"default": redis_cache(CACHE_URL, CACHE_TIMEOUT_SECONDS)}
else:
    CACHES = {
        "default": {
            "BACKEND": "completeness.web.counters.SharedFileCache",
            "LOCATION": str(VAR_DIR / "cache"),
            # A counter per address and per token each window: room for a large fleet before a cull.
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    }

ROOT_URLCONF = "completeness.urls"
WSGI_APPLICATION = "completeness.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "sources.alerts.context.broken_channels",
                "completeness.web.security.csp_nonce",
            ],
        },
    },
]

try:
    DATABASES = {
        "default": dj_database_url.config(
            default=f"sqlite:///{VAR_DIR / 'completeness.sqlite3'}",
            conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
            conn_health_checks=True,
        )
    }
except dj_database_url.UnknownSchemeError:
    # In place of the library's traceback (which lists some twenty backends this service does not
    # run on); the URL itself is not repeated: it holds the database's password.
    raise ImproperlyConfigured(
        f"DATABASE_URL begins with {urlsplit(os.environ.get('DATABASE_URL', '')).scheme!r}://, no database this "
        "service runs on: say postgres://user:password@host:5432/name, or leave it unset for the SQLite file"
    ) from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Bind parameters on the server and prepare what a connection repeats: the ingest path runs
    # the same handful of statements for every report, and planning them anew each time cost the
    # database more than running them. Django turns preparing off by default for the sake of
    # connection poolers in transaction mode (PgBouncer before 1.21): DB_PREPARE_THRESHOLD=off.
    options = DATABASES["default"].setdefault("OPTIONS", {})
    options["server_side_binding"] = env_bool("DB_SERVER_SIDE_BINDING", True)
    prepare_threshold = os.environ.get("DB_PREPARE_THRESHOLD", "2").strip().lower()
    if prepare_threshold in ("", "off", "none"):
        options["prepare_threshold"] = None
    elif prepare_threshold.isdigit():
        options["prepare_threshold"] = int(prepare_threshold)
    else:
        raise ImproperlyConfigured(f"DB_PREPARE_THRESHOLD is {prepare_threshold!r}: a whole number, or off")
    # PostgreSQL compiles a query whose estimated cost passes jit_above_cost: at 20,000 sources the
    # overview's sort was estimated that high and spent 750 ms compiling an 80 ms query
    # (docs/benchmarks.md). Our queries are short; compiling never pays. DB_JIT=on keeps the server's
    # setting (needed behind PgBouncer, which refuses the startup option).
    if not env_bool("DB_JIT", False):
        options["options"] = "-c jit=off"
    # A database that hangs instead of refusing (a frozen host, a dropped route) held every request
    # thread until each client gave up, and with all of them held /healthz went unanswered too. A
    # connection is given up after DB_CONNECT_TIMEOUT seconds (the request answers 503, as when the
    # database refuses), and an open one whose sent bytes go unacknowledged for 30 s is broken off by
    # the kernel (tcp_user_timeout); keepalives find a silent peer of an idle connection. A query that
    # merely runs long is not cut: its bytes were acknowledged.
    options.update(
        connect_timeout=env_int("DB_CONNECT_TIMEOUT", 5, minimum=1),
        keepalives=1,
        keepalives_idle=30,
        keepalives_interval=10,
        keepalives_count=3,
        tcp_user_timeout=30_000,
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE takes the write lock when a transaction starts, so two reports of one
    # source cannot both read the same baseline and then race to write; WAL lets the
    # pages read while the task worker writes.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# Times in the admin and Django's filters as on the pages: "2026-12-01 10:00 UTC".
FORMAT_MODULE_PATH = ["completeness.formats"]
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "completeness" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names and gzip/brotli copies after collectstatic (bin/serve and the image run it).
    "staticfiles": {"BACKEND": "completeness.web.storage.StaticStorage"},
}
# Serve straight from the finders too, so a fresh clone works before collectstatic.
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

# The run report contract: bodies above this are answered 413 before being parsed.
REPORT_MAX_BYTES = env_int("REPORT_MAX_BYTES", 1024 * 1024, minimum=1)
# How many recent runs the rules table counts "would have fired" over.
RULE_COST_WINDOW = 50

# LOG_FORMAT=json: one JSON object per line, with a log call's `extra` fields as keys (docs/operations.md).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "text").strip().lower()
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT is {LOG_FORMAT!r}: text or json")
# Checked here: logging's own refusal ("Unable to configure root logger") named neither the variable
# nor the words it takes, and it takes them in capitals only.
LOG_LEVEL = env_text("LOG_LEVEL") or "INFO"
if LOG_LEVEL.upper() not in logging.getLevelNamesMapping():
    raise ImproperlyConfigured(f"LOG_LEVEL is {LOG_LEVEL!r}: DEBUG, INFO, WARNING, ERROR or CRITICAL")
LOG_LEVEL = LOG_LEVEL.upper()

# The periodic jobs of sources/jobs.py and the setting that says how often each runs, in seconds:
# django-q2's schedules and Celery's beat are both made from this table.
PERIODIC_JOBS = {
    "sweep_outbox": "ALERTS_SWEEP_SECONDS",
    "check_overdue": "ALERTS_OVERDUE_SECONDS",
    "prune": "PRUNE_SECONDS",
    "send_digests": "ALERTS_DIGEST_CHECK_SECONDS",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "completeness.web.jsonlog.JsonFormatter"}},
    "filters": {
        "enqueued_at_debug": {"()": "completeness.web.logfilters.EnqueuedAtDebug"},
        "routine_jobs_at_debug": {"()": "completeness.web.logfilters.RoutineJobsAtDebug", "jobs": list(PERIODIC_JOBS)},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", **({"formatter": "json"} if LOG_FORMAT == "json" else {})}
    },
    "loggers": {"django-q": {"filters": ["enqueued_at_debug", "routine_jobs_at_debug"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

# /metrics answers the loopback address freely; anyone else needs this bearer token (none: refused).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
# false: no request is taken as sent from this machine (/metrics needs METRICS_TOKEN, the demo login's
# public password is refused). For a proxy on the same host that passes no header naming its client
# (a TCP proxy, stunnel, HAProxy in TCP mode): its every request comes from 127.0.0.1.
TRUST_LOOPBACK = env_bool("TRUST_LOOPBACK", True)
# How long /readyz waits for the database, the broker or the cache's Redis before calling it down.
READYZ_TIMEOUT_SECONDS = env_float("READYZ_TIMEOUT_SECONDS", 2)


def env_days(name: str, default: str) -> int | None:
    """Days to keep something; `off` (or empty) keeps it forever."""
    value = os.environ.get(name, default).strip().lower()
    if value in ("", "off", "never", "none"):
        return None
    if not value.isdigit() or int(value) < 1:
        raise ImproperlyConfigured(f"{name} is {value!r}: a whole number of days (at least 1), or off")
    return int(value)


# Retention (docs/operations.md): what the prune job removes, and after how many days since arrival.
RETAIN_DETAIL_DAYS = env_days("RETAIN_DETAIL_DAYS", "30")  # raw bodies, breaker series, long lost-URL lists
RETAIN_LOST_URLS = env_int("RETAIN_LOST_URLS", 20)  # lost URLs a run keeps past that age
RETAIN_RUNS_DAYS = env_days("RETAIN_RUNS_DAYS", "400")  # runs, with their breaker events and proxy transitions
RETAIN_SENT_NOTIFICATIONS_DAYS = env_days("RETAIN_SENT_NOTIFICATIONS_DAYS", "90")
PRUNE_BATCH = env_int("PRUNE_BATCH", 1000, minimum=1)
PRUNE_SECONDS = env_float("PRUNE_SECONDS", 24 * 3600)
# A job that takes longer queues its continuation: django-q2 kills a job after Q_CLUSTER["timeout"] (60 s).
PRUNE_TIME_BUDGET_SECONDS = env_float("PRUNE_TIME_BUDGET_SECONDS", 40)

# Background jobs: django-q2 on the same database by default; Celery + Redis at scale.
TASK_ENGINE = env_text("TASK_ENGINE") or "django_q"
# Refused here, not when the first alert is queued: an engine misspelt started every process, and
# each flip then failed to queue its delivery while /readyz named no broker to check.
if TASK_ENGINE not in ("django_q", "celery"):
    raise ImproperlyConfigured(f"TASK_ENGINE is {TASK_ENGINE!r}: django_q or celery")
Q_CLUSTER = {
    "name": "completeness",
    "orm": "default",
    "workers": env_int("Q_WORKERS", 2, minimum=1),
    "timeout": 60,
    "retry": 120,
    "catch_up": False,
}
# Run jobs inline where they are enqueued (tests and debugging only: it puts delivery in the request).
TASKS_SYNC = env_bool("TASKS_SYNC", False)
CELERY_BROKER_URL = env_text("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/0"
# A typo (redis//host, host:6379) was taken, and every alert's queueing then failed on the broker.
# Any transport kombu knows is taken (Redis is the one documented): a URL needs its scheme.
if not urlsplit(CELERY_BROKER_URL).scheme or "://" not in CELERY_BROKER_URL:
    # The URL itself is not repeated: it may hold Redis' password.
    raise ImproperlyConfigured("CELERY_BROKER_URL is no broker URL: say redis://host:6379/0 (rediss:// with TLS)")
# Deployments (and test runs) sharing one Redis keep apart by queue name.
CELERY_TASK_QUEUE = os.environ.get("CELERY_TASK_QUEUE", "completeness")

# Alerts (docs/alerts.md). Mail goes through Django's SMTP backend with these settings.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "completeness@localhost")
# Seconds to connect and to read an answer, for Slack, webhooks and heartbeats.
ALERTS_HTTP_TIMEOUT = (
    env_float("ALERTS_HTTP_CONNECT_TIMEOUT", 3),
    env_float("ALERTS_HTTP_READ_TIMEOUT", 10),
)
# Transient failures back off from BASE doubling up to MAX; after GIVE_UP the notification fails.
ALERTS_RETRY_BASE_SECONDS = env_float("ALERTS_RETRY_BASE_SECONDS", 60)
ALERTS_RETRY_MAX_SECONDS = env_float("ALERTS_RETRY_MAX_SECONDS", 1800)
ALERTS_GIVE_UP_AFTER_SECONDS = env_float("ALERTS_GIVE_UP_AFTER_SECONDS", 24 * 3600)
# A channel whose deliveries have failed (transiently) for this long is marked broken and announced,
# while they are still retried until GIVE_UP; 0: only when its alerts are given up.
ALERTS_BROKEN_AFTER_SECONDS = env_float("ALERTS_BROKEN_AFTER_SECONDS", 3600, zero=True)
# A notification claimed longer ago than this is taken as lost with its worker and sent again.
ALERTS_CLAIM_TIMEOUT_SECONDS = env_float("ALERTS_CLAIM_TIMEOUT_SECONDS", 300)
# How often the periodic jobs run (Celery beat; django-q2 schedules run every minute at best).
ALERTS_SWEEP_SECONDS = env_float("ALERTS_SWEEP_SECONDS", 60)
ALERTS_OVERDUE_SECONDS = env_float("ALERTS_OVERDUE_SECONDS", 60)
ALERTS_SWEEP_BATCH = env_int("ALERTS_SWEEP_BATCH", 500, minimum=1)
# How often the weekly digests are looked at (each channel gets one a week, the hour it falls due).
ALERTS_DIGEST_CHECK_SECONDS = env_float("ALERTS_DIGEST_CHECK_SECONDS", 3600)
# An email or Slack channel sends at most one alert message per this many seconds: alerts within it
# (a storm: one proxy pool down, thirty sources failing) go out together as one message. 0: no grouping.
ALERTS_GROUP_SECONDS = env_float("ALERTS_GROUP_SECONDS", 30, zero=True)


def env_seconds_or_off(name: str, default: str) -> float | None:
    value = os.environ.get(name, default).strip().lower()
    if value in ("", "off", "never", "none"):
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ImproperlyConfigured(f"{name} is {value!r}: a number of seconds (more than 0), or off")
    return seconds


# A report received this long after its run finished is history (a backfill of past runs, a spool
# emptied days later): its changes of health are recorded, not sent, and the channels hear where the
# source stands once its history stops arriving (docs/alerts.md, "History"). off: every report alerts.
ALERTS_HISTORY_AFTER_SECONDS = env_seconds_or_off("ALERTS_HISTORY_AFTER_SECONDS", "86400")
# The on-call services' endpoints: EU accounts (and tests, pointing at 127.0.0.1) change them.
ALERTS_PAGERDUTY_EVENTS_URL = os.environ.get("ALERTS_PAGERDUTY_EVENTS_URL", "https://events.pagerduty.com/v2/enqueue")
ALERTS_OPSGENIE_API_URL = os.environ.get("ALERTS_OPSGENIE_API_URL", "https://api.opsgenie.com").rstrip("/")

STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.js from the installed plotly package (completeness/web/staticfinders.py).
    "completeness.web.staticfinders.PlotlyFinder",
]

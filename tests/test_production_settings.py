"""Production settings from the environment: HTTPS settings, no start with the
built-in key when DEBUG is off, `check --deploy` clean when configured, and a Content-Security-Policy
on every answer."""

import os
import re
import subprocess
from pathlib import Path

import pytest
from django.test import override_settings

from tests.alerts.stack import manage as run_manage

ROOT = Path(__file__).resolve().parent.parent
DEPLOYED = {
    "SECRET_KEY": "k" * 10 + "Zq8x!v2#Lm9@Pw4$Rt6^Yh3&Nb7*Jc5(Gd1)Fs0-ea" + "e" * 10,
    "ALLOWED_HOSTS": "completeness.example.com",
    "SITE_URL": "https://completeness.example.com",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_COOKIES": "true",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto: https",
}
# Ours to set, and what a test run puts in the environment that no deployment has (the browser
# tests allow the ORM inside Playwright's event loop, which check --deploy rightly calls an error).
OURS = {*DEPLOYED, "DEBUG", "CONTENT_SECURITY_POLICY", "DJANGO_ALLOW_ASYNC_UNSAFE"}


@pytest.fixture(autouse=True)
def own_var_dir(tmp_path, monkeypatch):
    # check reads the static files collected under VAR_DIR: a developer's VAR_DIR with files collected
    # by older code made `check --deploy` warn (completeness.W002) and this file fail for it.
    monkeypatch.setenv("VAR_DIR", str(tmp_path))


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {name: value for name, value in os.environ.items() if name not in OURS}
    return run_manage({**base, **env}, *args)


def test_without_secret_key_and_debug_off_it_refuses_to_start_saying_why():
    done = manage("check")
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "SECRET_KEY is not set and DEBUG is false" in done.stderr


@pytest.mark.parametrize("key", ["short", "x" * 49, "abab" * 20, "insecure-development-key-set-SECRET_KEY-in-prod"])
def test_a_weak_secret_key_with_debug_off_is_refused_saying_why(key):
    done = manage("check", SECRET_KEY=key)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "SECRET_KEY is too weak and DEBUG is false" in done.stderr
    assert key not in done.stderr  # the key is described, never printed


def test_a_weak_secret_key_is_allowed_with_debug_on():
    done = manage("check", SECRET_KEY="short", DEBUG="true")
    assert done.returncode == 0, done.stderr


def test_without_secret_key_it_starts_with_debug_on():
    done = manage("check", DEBUG="true")
    assert done.returncode == 0, done.stderr


def test_check_deploy_is_clean_with_the_production_environment():
    done = manage("check", "--deploy", "--fail-level", "WARNING", **DEPLOYED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_names_what_the_environment_left_unset():
    done = manage("check", "--deploy", SECRET_KEY=DEPLOYED["SECRET_KEY"])
    for warning in ("W004", "W008", "W012", "W016"):
        assert f"security.{warning}" in done.stdout + done.stderr, warning


def test_the_proxy_ssl_header_is_read_as_django_wants_it():
    done = manage(
        "shell", "-c", "from django.conf import settings; print(settings.SECURE_PROXY_SSL_HEADER)", **DEPLOYED
    )
    assert done.stdout.strip().splitlines()[-1] == "('HTTP_X_FORWARDED_PROTO', 'https')", done.stderr
    done = manage("check", **{**DEPLOYED, "SECURE_PROXY_SSL_HEADER": "https"})
    assert done.returncode != 0 and "X-Forwarded-Proto: https" in done.stderr


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"))
def test_plain_http_is_redirected_except_for_probes_and_https_behind_the_proxy_is_served(client, db):
    response = client.get("/accounts/login/")
    assert response.status_code == 301 and response["Location"].startswith("https://")
    assert client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https").status_code == 200
    assert client.get("/healthz").status_code == 200


def csp(response) -> dict[str, str]:
    return {part.split()[0]: part for part in response["Content-Security-Policy"].split("; ")}


def test_every_answer_has_a_content_security_policy_with_a_fresh_nonce(client, db):
    first, second = client.get("/accounts/login/"), client.get("/accounts/login/")
    policy = csp(first)
    assert policy["default-src"] == "default-src 'self'"
    assert policy["object-src"] == "object-src 'none'" and policy["frame-ancestors"] == "frame-ancestors 'none'"
    nonce = re.fullmatch(r"script-src 'self' 'nonce-([\w-]+)'", policy["script-src"]).group(1)
    # The nonce reaches the templates, for an inline script that must be: <script nonce="{{ csp_nonce }}">.
    assert first.context["csp_nonce"] == nonce
    assert nonce not in second["Content-Security-Policy"]
    assert "Content-Security-Policy" in client.get("/api/v1/openapi.json")
    assert "Content-Security-Policy" in client.get("/static/completeness/charts.js")


@pytest.mark.parametrize("template", sorted(p.relative_to(ROOT) for p in (ROOT / "templates").rglob("*.html")))
def test_no_template_has_inline_script_or_event_handler(template):
    # What the policy blocks, caught before a browser sees it: code in a page runs only with the nonce.
    text = (ROOT / template).read_text()
    for script in re.finditer(r"<script\b([^>]*)>", text):
        attributes = script.group(1)
        assert "src=" in attributes or 'type="application/json"' in attributes or "csp_nonce" in attributes, (
            f'{template}: inline <script{attributes}> needs nonce="{{{{ csp_nonce }}}}"'
        )
    assert not re.search(r"\son[a-z]+\s*=", text), f"{template}: an inline event handler (onclick=...) is blocked"
    assert "javascript:" not in text, f"{template}: a javascript: URL is blocked"

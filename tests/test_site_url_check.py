"""SITE_URL left at its loopback default on a service served under another name is named at check time
(manage.py check, migrate), since every alert link is made from it."""

from django.core.management import call_command
from django.core.management.base import SystemCheckError

from sources.ops.site_url import site_url_names_this_service


def test_a_loopback_site_url_on_a_service_served_under_a_name_is_warned_about(settings):
    settings.SITE_URL = "http://127.0.0.1:8000"
    settings.ALLOWED_HOSTS = ["monitor.example.com", "127.0.0.1"]
    (warning,) = site_url_names_this_service()
    assert warning.id == "completeness.W001" and "monitor.example.com" in warning.msg
    assert "SITE_URL=https://monitor.example.com" in warning.hint


def test_the_embedded_default_and_a_named_site_url_are_not_warned_about(settings):
    settings.SITE_URL = "http://127.0.0.1:8000"
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
    assert site_url_names_this_service() == []
    settings.SITE_URL = "https://monitor.example.com"
    settings.ALLOWED_HOSTS = ["monitor.example.com", "127.0.0.1"]
    assert site_url_names_this_service() == []


def test_manage_py_check_shows_it(settings, capsys):
    settings.SITE_URL = "http://localhost:8000"
    settings.ALLOWED_HOSTS = [".example.com"]
    try:
        call_command("check", fail_level="WARNING")
    except SystemCheckError as exc:
        assert "completeness.W001" in str(exc)
    else:
        raise AssertionError("check passed with SITE_URL at localhost")

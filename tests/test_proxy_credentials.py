"""A proxy id that looks like it carries credentials (user:pass@) is refused with 422, however the
password is spelled; an opaque id is accepted."""

import pytest

from completeness.report import carries_credentials
from sources.models import ProxyTransition, Run
from tests.conftest import report


def with_proxy(proxy: str) -> dict:
    return report(
        proxy_transitions=[
            {
                "proxy": proxy,
                "at": "2026-09-15T03:11:02Z",
                "from": "eligible",
                "to": "cooling",
                "reason": "connect_refused",
                "stage": "connect",
            }
        ]
    )


CREDENTIALS = [
    "user:pass@host",
    "user:p/ss@host",
    "user:pa ss@host",
    "user%3Apass@host",
    "user%253Apass@host",
    "user:p@ss@host:8080",
    "user:pass%40host",
    "http://user:secret@10.0.0.1:8080",
    "socks5://token@proxy.example:1080",
    "pool/user:pass@exit-1",
    ":secret@host",
]
OPAQUE = ["pool-ae/exit-0193", "exit-1@pool-ae", "10.0.0.1:8080", "pool:ae/exit-7", "exit%2F12", "a" * 200]


@pytest.mark.parametrize("proxy", CREDENTIALS)
def test_a_proxy_id_with_credentials_is_422_naming_it(api, proxy):
    response = api.post_run(with_proxy(proxy))
    assert response.status_code == 422, response.content
    assert [e["path"] for e in response.json()["errors"]] == ["proxy_transitions[0].proxy"]
    assert not Run.objects.exists()


@pytest.mark.parametrize("proxy", OPAQUE)
def test_an_opaque_proxy_id_is_accepted(api, proxy):
    response = api.post_run(with_proxy(proxy))
    assert response.status_code == 201, response.content
    assert list(ProxyTransition.objects.values_list("proxy", flat=True)) == [proxy]


def test_the_check_is_a_pure_function():
    assert all(carries_credentials(p) for p in CREDENTIALS)
    assert not any(carries_credentials(p) for p in OPAQUE)

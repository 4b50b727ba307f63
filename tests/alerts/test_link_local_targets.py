"""No alert goes to a link-local address, where clouds answer instance metadata (169.254.169.254) with
the machine's credentials: not as a channel's target, not by a name that resolves there, and not by a
heartbeat receiver's redirect (docs/decisions.md, "Channel targets"). Loopback stays allowed: these
tests' own receivers are on 127.0.0.1."""

import socket

import pytest
from django.core.exceptions import ValidationError

from completeness.alerts.retry import OutcomeKind
from sources.alerts import channels, transports
from sources.models import Channel
from tests.alerts.sinks import Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def connections(monkeypatch):
    """Every address a connection was opened to; one off the loopback is never really opened."""
    import urllib3.util.connection

    opened = []
    real = urllib3.util.connection.create_connection

    def create_connection(address, *args, **kwargs):
        opened.append(address[0])
        if address[0] not in ("127.0.0.1", "localhost"):
            raise ConnectionRefusedError(f"test: no connection to {address[0]}")
        return real(address, *args, **kwargs)

    monkeypatch.setattr("urllib3.util.connection.create_connection", create_connection)
    return opened


@pytest.mark.parametrize(
    "kind, target",
    [
        ("webhook", "http://169.254.169.254/latest/meta-data/"),
        ("heartbeat", "http://[fe80::1]/ping"),
        ("slack", "http://[::ffff:169.254.169.254]/"),
        ("apprise", "json://169.254.169.254/x"),
        ("webhook", "http://2852039166/"),
        ("webhook", "http://0xa9.0xfe.0xa9.0xfe/"),
    ],
)
def test_a_link_local_target_is_refused(kind, target):
    with pytest.raises(ValidationError) as refused:
        channels.create_channel(kind=kind, target=target)
    assert "link-local" in str(refused.value.message_dict["target"])
    assert not Channel.objects.exists()


def test_loopback_and_private_targets_stay_allowed():
    for target in ("http://127.0.0.1:9000/hook", "http://10.0.0.5/hook", "http://relay:9000/"):
        channels.create_channel(kind="webhook", target=target)


def test_a_heartbeat_redirect_to_a_link_local_address_is_not_followed(http_sink, connections):
    http_sink.reply(Reply(status=302, headers={"Location": "http://169.254.169.254/latest/meta-data/"}))
    channel = channels.create_channel(kind="heartbeat", target=http_sink.url("/ping"))
    outcome = transports.send(channel, {"kind": "heartbeat"})
    assert outcome.kind is OutcomeKind.PERMANENT and "link-local" in outcome.error, outcome
    assert "169.254.169.254" not in connections


def test_a_heartbeat_redirect_elsewhere_is_still_followed(http_sink, connections):
    http_sink.reply(Reply(status=302, headers={"Location": http_sink.url("/moved")}))
    channel = channels.create_channel(kind="heartbeat", target=http_sink.url("/ping"))
    assert transports.send(channel, {"kind": "heartbeat"}).kind is OutcomeKind.SENT
    assert [r.path for r in http_sink.received()] == ["/ping", "/moved"]


def test_a_name_that_resolves_to_a_link_local_address_is_not_called(monkeypatch, connections):
    channel = channels.create_channel(kind="webhook", target="http://metadata.internal.test/hook")
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host == "metadata.internal.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", 80))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    outcome = transports.send(channel, {"kind": "test", "at": "2026-09-15T03:00:00+00:00"})
    assert outcome.kind is OutcomeKind.PERMANENT and "link-local" in outcome.error, outcome
    assert connections == []

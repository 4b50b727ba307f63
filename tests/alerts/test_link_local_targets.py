"""No alert goes to a link-local address, where clouds answer instance metadata (169.254.169.254) with
the machine's credentials: not as a channel's target, not by a name that resolves there, not by a
heartbeat receiver's redirect, and not by a name that resolves there only when the connection is made
(DNS rebinding) (docs/decisions.md, "Channel targets"). Loopback stays allowed: these tests' own
receivers are on 127.0.0.1."""

import ipaddress
import socket
import threading

import pytest
from django.core.exceptions import ValidationError

from completeness.alerts.retry import OutcomeKind
from sources.alerts import channels, delivery, transports
from sources.models import Channel
from tests.alerts.sinks import HttpSink, Reply

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


# DNS rebinding: a name that resolves to a harmless address when refusal() asks and to a forbidden
# one when the connection is made. Real DNS cannot be made to do that here, and no link-local address
# can be connected to in this sandbox, so the test's resolver answers the name (first a TEST-NET
# address, never connected to, then 127.0.0.2) and 127.0.0.2 joins the forbidden addresses: a real
# receiver listens there, and shows whether anything reached it. The same receiver, not forbidden,
# is the healthy twin: the connection really went there, and only the forbidden set stopped it.
REBOUND = "rebound.test"
METADATA_STAND_IN = "127.0.0.2"


@pytest.fixture
def rebinding(monkeypatch):
    """Answers REBOUND harmlessly once (the check), then with the stand-in (the connection); returns
    the answers given, in order."""
    real = socket.getaddrinfo
    answers = ["192.0.2.10"]
    given = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host != REBOUND:
            return real(host, port, *args, **kwargs)
        given.append(answers.pop(0) if answers else METADATA_STAND_IN)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (given[-1], port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return given


@pytest.fixture
def forbid_stand_in(monkeypatch):
    widened = transports.METADATA_ADDRESSES | {ipaddress.ip_address(METADATA_STAND_IN)}
    monkeypatch.setattr(transports, "METADATA_ADDRESSES", widened)


@pytest.fixture
def stand_in():
    """A real HTTP receiver where the instance metadata would be."""
    with HttpSink(host=METADATA_STAND_IN) as sink:
        yield sink


def rebound_channel(kind, stand_in, settings) -> Channel:
    url = f"http://{REBOUND}:{stand_in.port}"
    if kind == "pagerduty":
        settings.ALERTS_PAGERDUTY_EVENTS_URL = f"{url}/v2/enqueue"
        return channels.create_channel(kind="pagerduty", target="0123456789abcdef0123456789abcdef")
    if kind == "opsgenie":
        settings.ALERTS_OPSGENIE_API_URL = url
        return channels.create_channel(kind="opsgenie", target="e3c8b1a0-1111-4222-8333-944455556666")
    if kind == "heartbeat-post":
        return channels.create_channel(kind="heartbeat", target=f"{url}/ping", method=Channel.Method.POST)
    return channels.create_channel(kind=kind, target=f"{url}/hook")


KINDS = ["webhook", "slack", "heartbeat", "heartbeat-post", "pagerduty", "opsgenie"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_name_rebound_to_a_forbidden_address_after_the_check_is_refused_at_the_connection(
    kind, rebinding, forbid_stand_in, stand_in, settings
):
    channel = rebound_channel(kind, stand_in, settings)
    assert delivery.deliver(channels.send_test_message(channel).pk) == "failed"  # for good: no retry
    channel.refresh_from_db()
    assert rebinding == ["192.0.2.10", METADATA_STAND_IN]  # the check passed; the connection was rebound
    assert channel.broken
    assert channel.last_error == (
        f"{REBOUND} resolves to the link-local address {METADATA_STAND_IN} (cloud instance metadata): "
        "no alert is sent there"
    )
    assert stand_in.received() == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_rebound_name_not_forbidden_is_delivered_to(kind, rebinding, stand_in, settings):
    channel = rebound_channel(kind, stand_in, settings)
    assert delivery.deliver(channels.send_test_message(channel).pk) == "sent"
    assert rebinding[:2] == ["192.0.2.10", METADATA_STAND_IN]
    assert stand_in.received()


def test_a_heartbeat_redirect_to_a_rebound_name_is_refused_at_the_connection(
    http_sink, rebinding, forbid_stand_in, stand_in
):
    http_sink.reply(Reply(status=302, headers={"Location": f"http://{REBOUND}:{stand_in.port}/latest/meta-data/"}))
    channel = channels.create_channel(kind="heartbeat", target=http_sink.url("/ping"))
    outcome = transports.send(channel, {"kind": "heartbeat"})
    assert outcome.kind is OutcomeKind.PERMANENT and f"link-local address {METADATA_STAND_IN}" in outcome.error
    assert [r.path for r in http_sink.received()] == ["/ping"]  # the receiver itself stays allowed
    assert stand_in.received() == []


class Listener:
    """A bare TCP listener on the stand-in address: how many bytes each connection brought."""

    def __init__(self):
        self.server = socket.create_server((METADATA_STAND_IN, 0))
        self.port = self.server.getsockname()[1]
        self.connections: list[int] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.server.accept()
        with conn:
            conn.settimeout(5)
            received = b""
            try:
                while chunk := conn.recv(4096):
                    received += chunk
                    if len(received) > 5:  # a TLS record's header: the handshake began
                        break
            except OSError:
                pass
            self.connections.append(len(received))

    def close(self):
        self.thread.join(10)
        self.server.close()


@pytest.mark.parametrize("forbidden", [True, False])
def test_an_https_connection_is_refused_before_the_tls_handshake(rebinding, monkeypatch, forbidden):
    if forbidden:
        widened = transports.METADATA_ADDRESSES | {ipaddress.ip_address(METADATA_STAND_IN)}
        monkeypatch.setattr(transports, "METADATA_ADDRESSES", widened)
    listener = Listener()
    channel = channels.create_channel(kind="webhook", target=f"https://{REBOUND}:{listener.port}/hook")
    outcome = transports.send(channel, {"kind": "test", "at": "2026-09-15T03:00:00+00:00"})
    listener.close()
    assert len(listener.connections) == 1  # connected, to the stand-in, either way
    if forbidden:
        assert outcome.kind is OutcomeKind.PERMANENT and "link-local" in outcome.error, outcome
        assert listener.connections == [0]  # not even a TLS ClientHello
    else:
        # The handshake began (and failed: the listener speaks no TLS), naming the host to check.
        assert outcome.kind is OutcomeKind.TRANSIENT, outcome
        assert listener.connections[0] > 5

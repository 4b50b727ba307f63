"""Sending one event to one channel. Every failure becomes an Outcome: transient (retry) or permanent."""

from __future__ import annotations

import ipaddress
import json
import re
import smtplib
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import apprise
import requests
import requests.adapters
import urllib3.connection
import urllib3.connectionpool
from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection

from completeness.alerts import digest, groups, mail, messages, oncall, signing, slack
from completeness.alerts.policy import Alert
from completeness.alerts.redact import redact_error, secrets_of
from completeness.alerts.retry import Outcome, OutcomeKind, classify_http
from sources.models import Channel

USER_AGENT = "completeness-monitor/1 (alerts)"
# A heartbeat's GET follows this many redirects, each checked as its target is (refusal below).
MAX_REDIRECTS = 10
# Where no alert goes (docs/decisions.md, "Channel targets"): link-local addresses, where clouds answer
# instance metadata (169.254.169.254; AWS's IPv6 fd00:ec2::254) with the machine's credentials. No
# receiver lives there. Loopback and private addresses stay allowed: a relay in the compose network,
# an Uptime Kuma beside the service, the tests' receivers on 127.0.0.1.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("fd00:ec2::254")})
# The kinds whose target is a URL the monitor calls.
URL_KINDS = (Channel.Kind.SLACK, Channel.Kind.WEBHOOK, Channel.Kind.HEARTBEAT, Channel.Kind.APPRISE)


def _forbidden_address(text: str) -> bool:
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # fe80::1%eth0: the zone is no part of it
    except ValueError:
        try:
            # The forms the resolver reads as IPv4 too: 2852039166, 0xa9.0xfe.0xa9.0xfe, 169.254.43518.
            address = ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_link_local or address in METADATA_ADDRESSES


def refusal(url: str, *, resolve: bool = True) -> str | None:
    """Why nothing is sent to `url`: its host is a link-local address, or (resolve) a name for one.
    Checked when a channel is made (the address as written: a name may resolve elsewhere later) and
    before every request (a name, and each redirect, as resolved then). The address a request then
    really connects to is checked again (_checked_peer): the name may resolve elsewhere by then."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None  # requests says what is wrong with it
    if not host:
        return None
    if _forbidden_address(host):
        return f"{host} is a link-local address (cloud instance metadata): no alert is sent there"
    if not resolve:
        return None
    try:
        found = socket.getaddrinfo(host, port or 80, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None  # unresolvable: requests fails on it and says so
    for *_, address in found:
        if _forbidden_address(str(address[0])):
            return _resolves_to(host, str(address[0]))
    return None


def _resolves_to(host: str, address: str) -> str:
    return f"{host} resolves to the link-local address {address} (cloud instance metadata): no alert is sent there"


class RefusedAddress(Exception):
    """A connection reached a forbidden address: closed before a byte was sent. Not an OSError: urllib3
    and requests would wrap one in a ConnectionError, which reads as passing and is retried."""


def _checked_peer(sock: socket.socket, host: str) -> socket.socket:
    # The address the socket is connected to, not what the name resolved to when refusal() asked: a
    # hostile DNS server may answer a harmless address to the check and 169.254.169.254 to the
    # connection a moment later (DNS rebinding).
    peer = str(sock.getpeername()[0])
    if _forbidden_address(peer):
        sock.close()
        raise RefusedAddress(_resolves_to(host, peer))
    return sock


class _CheckedHTTPConnection(urllib3.connection.HTTPConnection):
    def _new_conn(self) -> socket.socket:
        return _checked_peer(super()._new_conn(), self.host)


class _CheckedHTTPSConnection(urllib3.connection.HTTPSConnection):
    # Checked before the TLS handshake begins; the handshake itself is untouched, so SNI and the
    # certificate are still checked against the name.
    def _new_conn(self) -> socket.socket:
        return _checked_peer(super()._new_conn(), self.host)


class _CheckedHTTPPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _CheckedHTTPConnection


class _CheckedHTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _CheckedHTTPSConnection


class _CheckedAdapter(requests.adapters.HTTPAdapter):
    """Every connection the monitor opens itself to a URL (a redirect's too) is checked where it
    landed. Not through a proxy (the proxy resolves and connects; refusal() beforehand is all there
    is), so proxy_manager_for is left as it is."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _CheckedHTTPPool, "https": _CheckedHTTPSPool}


def _session() -> requests.Session:
    session = requests.Session()
    adapter = _CheckedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def send(channel: Channel, event: dict) -> Outcome:
    return _outcome_of(SENDERS[channel.kind], channel, event)


def send_group(channel: Channel, events: list[dict]) -> Outcome:
    """Many events as one message: the human channels only, email, Slack and Apprise (storms.grouped)."""
    return _outcome_of(GROUP_SENDERS[channel.kind], channel, events)


def _outcome_of(sender, channel: Channel, what) -> Outcome:
    """The sender's outcome, its error cut free of the channel's secrets and of any URL's path, query
    or credentials (completeness.alerts.redact): errors are stored and shown to every logged-in user."""
    outcome = _attempt(sender, channel, what)
    if not outcome.error:
        return outcome
    return replace(outcome, error=redact_error(outcome.error, secrets_of(channel.target, channel.secret or "")))


def _attempt(sender, channel: Channel, what) -> Outcome:
    try:
        return sender(channel, what)
    except RefusedAddress as exc:
        # As refusal() beforehand: nothing was sent, and no retry will make the address another.
        return Outcome.permanent(str(exc))
    except (requests.Timeout, requests.ConnectionError) as exc:
        return Outcome.transient(f"{type(exc).__name__}: {exc}")
    except requests.RequestException as exc:
        # An unusable URL (no scheme, bad host): no retry will fix it.
        return Outcome.permanent(f"{type(exc).__name__}: {exc}")
    except smtplib.SMTPRecipientsRefused as exc:
        return Outcome.permanent(f"recipients refused: {exc.recipients}")
    except smtplib.SMTPResponseException as exc:
        error = f"SMTP {exc.smtp_code}: {exc.smtp_error!r}"
        return Outcome.permanent(error) if exc.smtp_code >= 500 else Outcome.transient(error)
    except (smtplib.SMTPException, OSError) as exc:
        return Outcome.transient(f"{type(exc).__name__}: {exc}")


def mail_domain() -> str:
    """The right-hand side of Message-IDs and thread roots: this monitor's host."""
    return urlsplit(settings.SITE_URL).hostname or "localhost"


def _send_email(channel: Channel, event: dict) -> Outcome:
    if event["kind"] == Alert.DIGEST:
        return _send_email_digest(channel, event)
    recipients = [a.strip() for a in channel.target.split(",") if a.strip()]
    connection = get_connection(fail_silently=False)
    message = EmailMultiAlternatives(
        messages.email_subject(event),
        messages.text_body(event),
        settings.DEFAULT_FROM_EMAIL,
        recipients,
        connection=connection,
        headers=mail.headers(event, mail_domain()),
    )
    message.attach_alternative(mail.html_body(event), "text/html")
    message.send()
    return Outcome.sent()


def _send_email_digest(channel: Channel, event: dict) -> Outcome:
    recipients = [a.strip() for a in channel.target.split(",") if a.strip()]
    facts = event.get("digest") or {}
    message = EmailMultiAlternatives(
        messages.one_line(f"[completeness] {digest.title(facts)}"),
        digest.text_body(facts),
        settings.DEFAULT_FROM_EMAIL,
        recipients,
        connection=get_connection(fail_silently=False),
        headers=mail.group_headers([event], mail_domain()),
    )
    message.attach_alternative(digest.html_body(facts), "text/html")
    message.send()
    return Outcome.sent()


def _send_email_group(channel: Channel, events: list[dict]) -> Outcome:
    recipients = [a.strip() for a in channel.target.split(",") if a.strip()]
    message = EmailMultiAlternatives(
        groups.email_subject(events),
        groups.text_body(events),
        settings.DEFAULT_FROM_EMAIL,
        recipients,
        connection=get_connection(fail_silently=False),
        headers=mail.group_headers(events, mail_domain()),
    )
    message.attach_alternative(mail.group_html_body(events), "text/html")
    message.send()
    return Outcome.sent()


def _post_json(url: str, body: bytes, headers: dict | None = None) -> Outcome:
    refused = refusal(url)
    if refused:
        return Outcome.permanent(refused)
    with _session() as session:
        response = session.post(
            url,
            data=body,
            timeout=settings.ALERTS_HTTP_TIMEOUT,
            allow_redirects=False,
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **(headers or {})},
        )
    return _outcome(response)


def _outcome(response: requests.Response) -> Outcome:
    return classify_http(response.status_code, response.text[:500], response.headers.get("Retry-After"))


def _send_slack(channel: Channel, event: dict) -> Outcome:
    if event["kind"] == Alert.DIGEST:
        return _post_json(channel.target, json.dumps(digest.slack_payload(event.get("digest") or {})).encode())
    return _post_json(channel.target, json.dumps(slack.payload(event)).encode())


def _send_slack_group(channel: Channel, events: list[dict]) -> Outcome:
    return _post_json(channel.target, json.dumps(slack.group_payload(events)).encode())


def _send_webhook(channel: Channel, event: dict) -> Outcome:
    """The one way to a webhook channel: it has no group sender and no digest (GROUP_SENDERS,
    digests.DIGEST_KINDS), so a storm reaches it as one signed event per request."""
    body = messages.webhook_body(event)
    return _post_json(channel.target, body, _webhook_headers(channel.secret, event, body))


def _webhook_headers(secret: str, event: dict, body: bytes) -> dict[str, str]:
    """Nothing without a secret; with one, the old header (its receivers keep working) and Standard
    Webhooks' three, dated now: a retry is a new attempt, with its own timestamp and signature."""
    if not secret:
        return {}
    return {
        messages.SIGNATURE_HEADER: messages.signature(secret, body),
        **signing.headers(secret, event, body, int(time.time())),
    }


def _send_heartbeat(channel: Channel, event: dict) -> Outcome:
    if channel.method == Channel.Method.GET:
        # A GET carries nothing to lose on a redirect, unlike a POST's body: followed, but one hop at a
        # time, so that a receiver cannot send the monitor on to an address no channel may name.
        url = channel.target
        with _session() as session:
            for _ in range(MAX_REDIRECTS + 1):
                refused = refusal(url)
                if refused:
                    return Outcome.permanent(refused)
                response = session.get(
                    url, timeout=settings.ALERTS_HTTP_TIMEOUT, headers={"User-Agent": USER_AGENT}, allow_redirects=False
                )
                if not response.is_redirect:
                    return _outcome(response)
                url = urljoin(url, response.headers["Location"])
        return Outcome.permanent(f"more than {MAX_REDIRECTS} redirects")
    return _post_json(channel.target, messages.webhook_body(event))


def _send_pagerduty(channel: Channel, event: dict) -> Outcome:
    body = oncall.pagerduty_body(event, channel.target)
    outcome = _post_json(settings.ALERTS_PAGERDUTY_EVENTS_URL, json.dumps(body).encode())
    if oncall.opens_and_closes(event) and outcome.kind is OutcomeKind.SENT:
        resolve = oncall.pagerduty_resolve(
            {**event, "incident": {"opened_at": event["at"], "duration_seconds": 0}}, channel.target
        )
        outcome = _post_json(settings.ALERTS_PAGERDUTY_EVENTS_URL, json.dumps(resolve).encode())
    return outcome


def _send_opsgenie(channel: Channel, event: dict) -> Outcome:
    api = f"{settings.ALERTS_OPSGENIE_API_URL}/v2/alerts"
    headers = {"Authorization": f"GenieKey {channel.target}"}
    if oncall.closes(event):
        alias = quote(oncall.dedup_key(event), safe="")
        url = f"{api}/{alias}/close?identifierType=alias"
        return _post_json(url, json.dumps(oncall.opsgenie_close(event)).encode(), headers)
    outcome = _post_json(api, json.dumps(oncall.opsgenie_create(event)).encode(), headers)
    if oncall.opens_and_closes(event) and outcome.kind is OutcomeKind.SENT:
        alias = quote(oncall.dedup_key(event), safe="")
        url = f"{api}/{alias}/close?identifierType=alias"
        outcome = _post_json(url, json.dumps(oncall.opsgenie_close(event)).encode(), headers)
    return outcome


# Apprise's services log their refusals as "..., error=404."; it reports no status code otherwise.
_APPRISE_STATUS = re.compile(r"error=(\d{3})\b")


def apprise_client(url: str) -> apprise.Apprise | None:
    """None when Apprise reads no service in the URL. Persistent storage in memory: a worker writes no
    cache files of Apprise's."""
    client = apprise.Apprise(asset=apprise.AppriseAsset(storage_mode="memory"))
    return client if client.add(url) else None


def _notify_apprise(channel: Channel, title: str, body: str, notify_type: str) -> Outcome:
    # The address as written only: another scheme's host is as often a token as a host (tgram://).
    refused = refusal(channel.target, resolve=False)
    if refused:
        return Outcome.permanent(refused)
    client = apprise_client(channel.target)
    if client is None:
        return Outcome.permanent("Apprise reads no service in this URL")
    result = client.notify(body=body, title=title, notify_type=notify_type, body_format="text")
    if result:
        return Outcome.sent()
    errors = [e.message for e in result.logs() if e.level in ("WARNING", "ERROR", "CRITICAL")]
    error = "; ".join(errors)[:500] or "Apprise could not send"
    status = _APPRISE_STATUS.search(error)
    # A service's own answer decides as for any HTTP receiver (404: broken; 500, 429: retried);
    # without one (no connection, a timeout) it may come back, so it is retried.
    return classify_http(int(status.group(1)), error) if status else Outcome.transient(error)


def _send_apprise(channel: Channel, event: dict) -> Outcome:
    return _notify_apprise(channel, *oncall.apprise_message(event))


def _send_apprise_group(channel: Channel, events: list[dict]) -> Outcome:
    return _notify_apprise(channel, *oncall.apprise_group_message(events))


SENDERS: dict[str, Callable[[Channel, dict[str, Any]], Outcome]] = {
    Channel.Kind.EMAIL: _send_email,
    Channel.Kind.SLACK: _send_slack,
    Channel.Kind.WEBHOOK: _send_webhook,
    Channel.Kind.HEARTBEAT: _send_heartbeat,
    Channel.Kind.PAGERDUTY: _send_pagerduty,
    Channel.Kind.OPSGENIE: _send_opsgenie,
    Channel.Kind.APPRISE: _send_apprise,
}
GROUP_SENDERS: dict[str, Callable[[Channel, list[dict[str, Any]]], Outcome]] = {
    Channel.Kind.EMAIL: _send_email_group,
    Channel.Kind.SLACK: _send_slack_group,
    Channel.Kind.APPRISE: _send_apprise_group,
}

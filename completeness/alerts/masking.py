"""Channel targets are secrets (a Slack webhook URL is a write credential): show enough to recognise one."""

from __future__ import annotations

from urllib.parse import urlsplit


def mask_target(target: str) -> str:
    target = target.strip()
    if "://" in target:
        return _mask_url(target)
    if "@" in target:
        return ", ".join(_mask_address(a.strip()) for a in target.split(",") if a.strip())
    return _tail(target)


def _tail(text: str) -> str:
    return f"…{text[-4:]}" if len(text) > 12 else "…"


def _mask_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        # Apprise URLs keep their tokens anywhere, the host included (tgram://BOT_TOKEN/CHAT_ID).
        return f"{parts.scheme}://{_tail(url.split('://', 1)[1])}"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    # Credentials in the authority are dropped; the path (where Slack keeps its secret) is cut to its tail.
    origin = f"{parts.scheme}://{parts.hostname or ''}{port}"
    after_host = url.split("://", 1)[1]
    after_host = after_host[after_host.find("/") :] if "/" in after_host else ""
    return f"{origin}/{_tail(after_host)}" if after_host.strip("/") else f"{origin}/"


def _mask_address(address: str) -> str:
    local, _, domain = address.rpartition("@")
    return f"{local[:1]}…@{domain}" if local else f"…@{domain}"

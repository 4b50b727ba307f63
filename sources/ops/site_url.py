"""A system check (manage.py check, migrate, and bin/process migrate run it): SITE_URL still at the
embedded default where the service is served under another name. Every alert's links and every email's
Message-ID name SITE_URL, so a production deployment that set ALLOWED_HOSTS and forgot SITE_URL sends
links to 127.0.0.1 that nobody can open."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Warning

LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def site_url_names_this_service(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    host = urlsplit(settings.SITE_URL).hostname or ""
    served_as = [name for name in settings.ALLOWED_HOSTS if name.lstrip(".") not in LOOPBACK and name != "*"]
    if host not in LOOPBACK or not served_as:
        return []
    return [
        Warning(
            f"SITE_URL is {settings.SITE_URL}, but the service is served as {', '.join(served_as)} "
            "(ALLOWED_HOSTS): alert links and email Message-IDs will name a loopback address nobody can open.",
            hint=f"Set SITE_URL to the address people open, e.g. SITE_URL=https://{served_as[0].lstrip('.')}",
            id="completeness.W001",
        )
    ]

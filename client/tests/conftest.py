from __future__ import annotations

from collections.abc import Iterator

import pytest
from service_stub import RecordingService


@pytest.fixture
def service() -> Iterator[RecordingService]:
    with RecordingService() as running:
        yield running


@pytest.fixture
def dead_url() -> str:
    """A 127.0.0.1 URL where nothing listens: connection refused."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from io import StringIO

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
EXAMPLES_DIR = SHARED / "examples"


def make_token(name: str = "test", sources: list[str] | None = None) -> str:
    out = StringIO()
    args = [name] + [f"--source={slug}" for slug in sources or []]
    call_command("create_token", *args, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


@pytest.fixture
def token(db) -> str:
    return make_token("all-sources")


@pytest.fixture
def api(client, token):
    return ApiClient(client, token)


class ApiClient:
    """Posts to the real API through Django's test client, with a bearer token."""

    def __init__(self, client, token: str):
        self.client = client
        self.token = token

    def headers(self, token: str | None = None) -> dict:
        token = self.token if token is None else token
        return {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}

    def post_run(self, report, token: str | None = None):
        body = report if isinstance(report, (bytes, str)) else json.dumps(report)
        return self.client.post("/api/v1/runs", data=body, content_type="application/json", **self.headers(token))

    def get(self, path: str, token: str | None = None, **params):
        return self.client.get(f"/api/v1{path}", params, **self.headers(token))

    def post(self, path: str, payload=None, token: str | None = None):
        return self.client.post(
            f"/api/v1{path}", data=json.dumps(payload or {}), content_type="application/json", **self.headers(token)
        )


def report(**overrides) -> dict:
    """A minimal valid report; tests say only what they are about."""
    body = {
        "source": "shop",
        "run_id": "run-1",
        "started_at": "2026-09-15T03:00:00Z",
        "finished_at": "2026-09-15T04:00:00Z",
        "exit_code": 0,
        "collected": 1000,
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}

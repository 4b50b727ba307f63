"""Every worked example of ../shared/examples, posted through the real HTTP API, read from there."""

import json
import uuid

import pytest

from tests.conftest import EXAMPLES_DIR

EXAMPLES = sorted(EXAMPLES_DIR.glob("*.json"))


def test_the_examples_are_there():
    # A missing shared/ would otherwise make this suite pass on nothing.
    assert len(EXAMPLES) >= 7


def _prefixed(report: dict, prefix: str) -> dict:
    return {**report, "source": f"{prefix}-{report['source']}", "run_id": f"{prefix}-{report['run_id']}"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example(path, api):
    scenario = json.loads(path.read_text())
    prefix = uuid.uuid4().hex[:8]
    for number, step in enumerate(scenario["steps"], start=1):
        response = api.post_run(_prefixed(step["report"], prefix))
        expect = step["expect"]
        where = f"{scenario['name']} step {number}"
        assert response.status_code == expect["status"], (where, response.content)
        body = response.json()
        assert body["verdict"] == expect["verdict"], (where, body)
        assert body["silent"] == expect["silent"], (where, body)
        assert body["exit_code"] == expect["exit_code"], (where, body)
        enforced = sorted(f["rule"] for f in body["findings"] if f["mode"] == "enforce")
        assert enforced == sorted(expect["rules"]), (where, body)
        if "observed" in expect:
            observed = sorted(f["rule"] for f in body["findings"] if f["mode"] == "observe")
            assert observed == sorted(expect["observed"]), (where, body)
        if "rates" in expect:
            assert body["outcome_rates"] == expect["rates"], (where, body)
        for finding in body["findings"]:
            assert finding["message"] and "expected" in finding and "actual" in finding, (where, finding)

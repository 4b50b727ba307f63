"""Every worked example of tests/examples, posted through the real HTTP API.

tests/examples is the repository's copy of the contract's examples and the source of truth here;
when the project's shared contract folder sits beside the checkout (../shared/examples), the copy
must match it file for file.
"""

import json
import uuid

import pytest

from tests.conftest import EXAMPLES_DIR, SHARED_EXAMPLES_DIR

EXAMPLES = sorted(EXAMPLES_DIR.glob("*.json"))


def test_the_examples_are_there():
    # A missing or emptied tests/examples would otherwise make this suite pass on nothing.
    assert len(EXAMPLES) >= 11, f"expected at least 11 worked examples in {EXAMPLES_DIR}, found {len(EXAMPLES)}"


def test_the_examples_match_the_shared_contract():
    if not SHARED_EXAMPLES_DIR.is_dir():
        pytest.skip(f"no shared contract beside this checkout ({SHARED_EXAMPLES_DIR}): nothing to compare with")
    ours = {path.name: path.read_bytes() for path in EXAMPLES}
    shared = {path.name: path.read_bytes() for path in SHARED_EXAMPLES_DIR.glob("*.json")}
    problems = []
    if only_shared := sorted(shared.keys() - ours.keys()):
        problems.append(f"only in {SHARED_EXAMPLES_DIR}: {', '.join(only_shared)}")
    if only_ours := sorted(ours.keys() - shared.keys()):
        problems.append(f"only in {EXAMPLES_DIR}: {', '.join(only_ours)}")
    if differ := sorted(name for name in ours.keys() & shared.keys() if ours[name] != shared[name]):
        problems.append(f"different content: {', '.join(differ)}")
    assert not problems, (
        "tests/examples no longer matches the shared contract's examples ("
        + "; ".join(problems)
        + f"). Copy the new contract in: cp {SHARED_EXAMPLES_DIR}/*.json {EXAMPLES_DIR}/ (and delete files the"
        " contract dropped), then update docs/api.md and docs/verdicts.md to match."
    )


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
        if "has_expectation" in expect:
            expectation = body["expectation"]
            if expect["has_expectation"]:
                assert isinstance(expectation, dict), (where, body)
                assert isinstance(expectation["expected"], int) and isinstance(expectation["low"], int), (where, body)
            else:
                assert expectation is None, (where, body)
        if "rates" in expect:
            assert body["outcome_rates"] == expect["rates"], (where, body)
        for finding in body["findings"]:
            assert finding["message"] and "expected" in finding and "actual" in finding, (where, finding)

"""The Docker image's own promises, read from the Dockerfile (this machine has no Docker daemon to build
it; docs/operations.md "Running as a user of its own")."""

import re
from pathlib import Path

DOCKERFILE = (Path(__file__).resolve().parent.parent / "Dockerfile").read_text()


def _instructions() -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    lines = [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_the_processes_run_as_a_user_of_their_own_not_root():
    users = [argument for instruction, argument in _instructions() if instruction == "USER"]
    assert users, "the image runs its processes as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    # A fixed numeric uid: an operator can give a mounted volume to it, and Kubernetes' runAsNonRoot
    # can check a number, not a name.
    assert user.isdigit()


def test_what_the_processes_write_is_theirs_and_nothing_else_is():
    instructions = _instructions()
    user = next(argument for instruction, argument in reversed(instructions) if instruction == "USER")
    runs = [argument for instruction, argument in instructions if instruction == "RUN"]
    chowns = [run for run in runs if "chown" in run]
    # VAR_DIR (beat's schedule, the file cache, collected static files) and only it: the code and the
    # packages stay root's, so the web process cannot rewrite them.
    assert len(chowns) == 1 and f'chown -R {user} "$VAR_DIR"' in chowns[0]
    # After collectstatic, which runs as root and fills VAR_DIR.
    assert runs.index(chowns[0]) > next(i for i, run in enumerate(runs) if "collectstatic" in run)
    assert "VAR_DIR=/var/lib/completeness" in DOCKERFILE

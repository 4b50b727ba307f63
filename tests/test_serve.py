"""bin/serve, the README's first command: it starts the service and stops all of it on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

from tests.alerts.sinks import answers, free_port

ROOT = Path(__file__).resolve().parent.parent


def process_group(pgid: int) -> list[int]:
    """Every live process of a process group, from /proc (zombies count as gone)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name in parentheses may hold spaces: split after its closing parenthesis.
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            members.append(int(entry.name))
    return members


def bin_manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`bin/manage *args` as an operator types it beside bin/serve (the wrapper, not manage.py)."""
    return subprocess.run(["bin/manage", *args], cwd=ROOT, env=env, capture_output=True, text=True)


def assert_static_files_are_hashed_compressed_and_cached_for_a_year(port: int, var: Path) -> None:
    """The first load of a chart page: plotly.js under a content-hashed name, as
    brotli or gzip, with a far-future immutable Cache-Control; the pages name the hashed files."""
    manifest = json.loads((var / "static" / "staticfiles.json").read_text())["paths"]
    hashed = manifest["vendor/plotly.min.js"]
    assert re.fullmatch(r"vendor/plotly\.min\.[0-9a-f]{12}\.js", hashed), hashed
    for encoding in ("br", "gzip"):
        response = requests.get(
            f"http://127.0.0.1:{port}/static/{hashed}", headers={"Accept-Encoding": encoding}, timeout=30, stream=True
        )
        assert response.status_code == 200
        assert response.headers["Content-Encoding"] == encoding
        assert int(response.headers["Content-Length"]) < 1_600_000  # 4.8 MB as sent uncompressed
        cache = response.headers["Cache-Control"]
        assert "immutable" in cache and int(re.search(r"max-age=(\d+)", cache).group(1)) >= 365 * 24 * 3600, cache
        response.close()
    login = requests.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=10).text
    assert f"/static/{manifest['completeness/site.css']}" in login


def assert_the_printed_first_report_is_accepted_as_a_recent_run(port: int, banner: str) -> None:
    """The banner's curl command, sent as printed: a new user's first report, dated minutes ago."""
    token = re.search(r"Bearer (\S+?)\"", banner).group(1)
    body = json.loads(re.search(r"-d '(.*?)'", banner, re.DOTALL).group(1))
    response = requests.post(
        f"http://127.0.0.1:{port}/api/v1/runs", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code == 201, response.text
    age = datetime.now(UTC) - datetime.fromisoformat(body["finished_at"])
    assert timedelta(0) < age < timedelta(hours=1), body


def test_sigterm_stops_every_process_bin_serve_started_within_ten_seconds(tmp_path):
    port = free_port()
    env = {**os.environ, "ADDR": f"127.0.0.1:{port}", "VAR_DIR": str(tmp_path), "SEED_DEMO": "0"}
    env.pop("DATABASE_URL", None)  # the embedded default, as the README runs it
    env.pop("SECRET_KEY", None)  # nor a key: bin/serve makes one and keeps it under VAR_DIR
    env.pop("SITE_URL", None)  # nor an address: bin/serve names its own, http://$ADDR
    # A database an older bin/serve left readable by every user (SQLite takes an empty file as one).
    (tmp_path / "completeness.sqlite3").touch(mode=0o644)
    log = open(tmp_path / "serve.log", "w")
    serve = subprocess.Popen(
        ["bin/serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        if not answers(f"http://127.0.0.1:{port}/accounts/login/", timeout=120):
            raise AssertionError((tmp_path / "serve.log").read_text())
        # The task cluster is up too: its log says so once its workers started.
        deadline = time.monotonic() + 60
        while "running" not in (tmp_path / "qcluster.log").read_text().lower() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert_static_files_are_hashed_compressed_and_cached_for_a_year(port, tmp_path)
        assert_the_printed_first_report_is_accepted_as_a_recent_run(port, (tmp_path / "serve.log").read_text())
        # bin/manage beside it (add_channel, whose new channel hears at once what is wrong) links its
        # alerts to where bin/serve serves, not to the default port.
        site = bin_manage(env, "shell", "-c", "from django.conf import settings; print(settings.SITE_URL)")
        assert site.stdout.split()[-1:] == [f"http://127.0.0.1:{port}"], site.stdout + site.stderr
        # The new channel is told of the demo's open problems, one queued job each: django-q2's
        # "Enqueued [completeness] 380" lines stood above the command's own answer.
        added = bin_manage(env, "add_channel", "webhook", "http://127.0.0.1:9/hook")
        said = added.stdout + added.stderr
        assert added.returncode == 0 and said.startswith("Created webhook channel"), said
        # Its answer is its own two lines: what it made, and which open problems it was told of at once.
        assert "Enqueued" not in said and len(said.splitlines()) == 2, said
        assert said.splitlines()[1].startswith("Told it at once of "), said
        key = (tmp_path / "secret-key").read_text()
        assert len(key) >= 50 and (tmp_path / "secret-key").stat().st_mode & 0o077 == 0
        # As private as the key: the database holds sessions and channel secrets, the token posts for any
        # source; a database made readable before is made private too.
        for private in ("completeness.sqlite3", "demo-token"):
            assert (tmp_path / private).stat().st_mode & 0o077 == 0, private
        started = process_group(serve.pid)
        assert len(started) >= 4, started  # this shell, gunicorn and its workers, the task cluster

        os.kill(serve.pid, signal.SIGTERM)  # to bin/serve alone, as a supervisor or `kill` sends it
        stopped_at = time.monotonic()
        while process_group(serve.pid) and time.monotonic() - stopped_at < 10:
            time.sleep(0.1)
        assert process_group(serve.pid) == [], (tmp_path / "serve.log").read_text()
        assert serve.wait(timeout=1) == 0
        # Without the demo data there is no demo login to offer.
        banner = (tmp_path / "serve.log").read_text()
        assert "demo / demo" not in banner and "no demo data here" in banner
    finally:
        if process_group(serve.pid):
            os.killpg(serve.pid, signal.SIGKILL)


def test_a_task_cluster_that_does_not_stop_is_killed_with_its_workers(tmp_path):
    # django-q2's workers are grandchildren of qcluster (under its sentinel): when qcluster did not stop
    # in time, killing it and its children left the workers running, still in bin/serve's group.
    port = free_port()
    env = {**os.environ, "ADDR": f"127.0.0.1:{port}", "VAR_DIR": str(tmp_path), "SEED_DEMO": "0"}
    env.pop("DATABASE_URL", None)
    log = open(tmp_path / "serve.log", "w")
    serve = subprocess.Popen(
        ["bin/serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        assert answers(f"http://127.0.0.1:{port}/accounts/login/", timeout=120), (tmp_path / "serve.log").read_text()
        deadline = time.monotonic() + 60
        while "running" not in (tmp_path / "qcluster.log").read_text().lower() and time.monotonic() < deadline:
            time.sleep(0.3)
        [qcluster] = [
            pid
            for pid in process_group(serve.pid)
            if b"qcluster" in Path(f"/proc/{pid}/cmdline").read_bytes()
            and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(serve.pid)
        ]
        os.kill(qcluster, signal.SIGSTOP)  # a cluster that does not get to stop: it hears no SIGTERM
        os.kill(serve.pid, signal.SIGTERM)
        stopped_at = time.monotonic()
        while process_group(serve.pid) and time.monotonic() - stopped_at < 12:
            time.sleep(0.1)
        assert process_group(serve.pid) == []
    finally:
        if process_group(serve.pid):
            os.killpg(serve.pid, signal.SIGKILL)


def test_a_relative_var_dir_passes_the_system_checks(tmp_path):
    # bin/serve exports VAR_DIR=var; the file cache under it warned at every start that its path was relative.
    env = {**os.environ, "VAR_DIR": "var"}
    env.pop("DATABASE_URL", None)
    env.pop("CACHE_URL", None)
    out = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "W003" not in out.stdout + out.stderr and "no issues" in out.stdout, out.stdout + out.stderr
    assert (tmp_path / "var" / "static").is_dir()


def test_bin_process_runs_the_procfile_lines_in_the_virtualenv_from_a_plain_shell(tmp_path):
    """README: the Procfile's processes are each started as `bin/process NAME`. In a checkout whose
    virtualenv is not activated, `bin/process migrate` (and `worker`, `beat`) failed with
    "exec: python: not found" or a Python without Django: the lines resolve on PATH, and nothing put the
    virtualenv there, as bin/manage and bin/serve do."""
    env = {
        "PATH": "/usr/bin:/bin",  # a login shell's: no virtualenv, no pyenv
        "HOME": str(tmp_path),
        "SECRET_KEY": os.environ["SECRET_KEY"],
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'process.sqlite3'}",
    }
    out = subprocess.run([str(ROOT / "bin" / "process"), "migrate"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "process.sqlite3").stat().st_size > 0


def fake_python3(directory: Path) -> Path:
    """A `python3` whose `-m venv DIR` makes a virtualenv of stand-ins in no time: its `python` is this
    test's (which has the packages), its `pip` writes its arguments to DIR/pip.log and exits with
    FAKE_PIP_EXIT. The shared virtualenv of the checkout is never touched."""
    script = directory / "python3"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1 $2" = "-m venv" ] || exit 3\n'
        'mkdir -p "$3/bin"\n'
        f'printf \'#!/bin/sh\\nexec {sys.executable} "$@"\\n\' > "$3/bin/python"\n'
        f'printf \'#!/bin/sh\\necho "$*" >> {directory}/pip.log\\nexit ${{FAKE_PIP_EXIT:-0}}\\n\' > "$3/bin/pip"\n'
        'chmod +x "$3/bin/python" "$3/bin/pip"\n'
    )
    script.chmod(0o755)
    return script


def test_bin_process_makes_the_virtualenv_a_fresh_checkout_lacks_installs_it_once_and_fails_with_the_install(
    tmp_path,
):
    """A fresh checkout has no .venv until bin/manage, bin/serve or bin/test ran: `bin/process migrate`
    said "No module named 'django'" and `bin/process worker` "exec: celery: not found". It makes the
    virtualenv as they do (bin/_venv.sh), here with stand-ins for `python3 -m venv` and pip."""
    fakes = tmp_path / "fakes"
    fakes.mkdir()
    fake_python3(fakes)
    venv = tmp_path / "venv"
    env = {
        "PATH": f"{fakes}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SECRET_KEY": os.environ["SECRET_KEY"],
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'process.sqlite3'}",
        "VENV": str(venv),
        "FAKE_PIP_EXIT": "1",
    }
    process = str(ROOT / "bin" / "process")
    pip_log = fakes / "pip.log"

    # An install that fails stops it: non-zero, the line not run, nothing marked installed.
    out = subprocess.run([process, "migrate"], env=env, capture_output=True, text=True)
    assert out.returncode != 0, out.stdout + out.stderr
    assert not (tmp_path / "process.sqlite3").exists() and not (venv / ".installed").exists()
    assert "-c constraints.txt -e .[dev]" in pip_log.read_text()

    env["FAKE_PIP_EXIT"] = "0"
    out = subprocess.run([process, "migrate"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "process.sqlite3").stat().st_size > 0 and (venv / ".installed").exists()
    assert len(pip_log.read_text().splitlines()) == 2

    # Installed: the next start installs nothing; a line that fails fails bin/process.
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'no-such-directory' / 'process.sqlite3'}"
    out = subprocess.run([process, "migrate"], env=env, capture_output=True, text=True)
    assert out.returncode != 0, out.stdout + out.stderr
    assert len(pip_log.read_text().splitlines()) == 2

    # The image (its Dockerfile sets USE_VENV=0) makes none: the line runs with the Python on PATH.
    image_bin = tmp_path / "image-bin"
    image_bin.mkdir()
    (image_bin / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (image_bin / "python").chmod(0o755)
    image = {**env, "USE_VENV": "0", "VENV": str(tmp_path / "image-venv"), "PATH": f"{image_bin}:/usr/bin:/bin"}
    image["DATABASE_URL"] = f"sqlite:///{tmp_path / 'image.sqlite3'}"
    out = subprocess.run([process, "migrate"], env=image, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "image.sqlite3").stat().st_size > 0 and not (tmp_path / "image-venv").exists()
    assert len(pip_log.read_text().splitlines()) == 2


def test_on_an_address_other_machines_reach_it_loads_no_demo_login_and_refuses_to_start_with_one(tmp_path):
    # demo / demo is a superuser whose password the README and the login page give away: bin/serve
    # on 0.0.0.0 (the README's way to be reached from other machines) handed the admin to anyone who
    # reached the port. 192.0.2.1 (TEST-NET) is on no interface here: gunicorn, if started, fails to bind.
    env = {**os.environ, "ADDR": f"192.0.2.1:{free_port()}", "VAR_DIR": str(tmp_path)}
    for name in ("DATABASE_URL", "SECRET_KEY", "SITE_URL", "SEED_DEMO"):
        env.pop(name, None)
    first = subprocess.run(["bin/serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert "Loading demo data" not in first.stdout and "no demo data here" in first.stdout, first.stdout
    assert not (tmp_path / "demo-seeded").exists()

    make_demo = (
        "from django.contrib.auth.models import User; User.objects.create_superuser('demo', 'demo@example.com', 'demo')"
    )
    subprocess.run(["bin/manage", "shell", "-c", make_demo], cwd=ROOT, env=env, check=True, capture_output=True)
    refused = subprocess.run(["bin/serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0
    assert "refusing to listen" in refused.stderr and "changepassword demo" in refused.stderr, refused.stderr
    assert "Completeness monitor:" not in refused.stdout, refused.stdout  # nothing was started


def test_with_another_task_engine_in_the_environment_it_starts_nothing_and_says_what_to_run(tmp_path):
    # It started qcluster beside a web server that queued every alert into Celery, which no worker read.
    env = {**os.environ, "ADDR": f"127.0.0.1:{free_port()}", "VAR_DIR": str(tmp_path), "TASK_ENGINE": "celery"}
    refused = subprocess.run(["bin/serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert "TASK_ENGINE is 'celery'" in refused.stderr and "bin/process" in refused.stderr, refused.stderr
    assert not (tmp_path / "completeness.sqlite3").exists() and "Completeness monitor:" not in refused.stdout

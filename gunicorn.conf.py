"""Read by gunicorn from the working directory (bin/serve, the Dockerfile and docker-compose.yml run it here).

Puts prometheus-client in multiprocess mode: each worker keeps its counters in a file under
PROMETHEUS_MULTIPROC_DIR and /metrics, whichever worker answers, adds them all up. Without it a scrape
would see only the one worker it reached. This file runs in the master before any worker starts and
before the application is imported, which is what the mode needs.
"""

import os
import shutil
import tempfile
from pathlib import Path

_ours = "PROMETHEUS_MULTIPROC_DIR" not in os.environ
if _ours:
    # One directory per server: two servers (or test runs) must not add up each other's counts.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="completeness-metrics-")
else:
    # An operator's directory: the counts of an earlier server would be added to this one's.
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)
    for stale in Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).glob("*.db"):
        stale.unlink()


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if _ours:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)

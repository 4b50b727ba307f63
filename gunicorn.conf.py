"""Read by gunicorn from the working directory (bin/serve, the Dockerfile and docker-compose.yml run it here).

Puts prometheus-client in multiprocess mode: each worker keeps its counters in a file under
PROMETHEUS_MULTIPROC_DIR and /metrics, whichever worker answers, adds them all up. Without it a scrape
would see only the one worker it reached. This file runs in the master before any worker starts and
before the application is imported, which is what the mode needs.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from gunicorn import util

# Threads, not sync workers: a sync worker reads a request in the process that answers it, so four
# clients sending a header byte every 2 s (or a body under a large Content-Length) held all four
# workers and /healthz went unanswered. A gthread worker's connections wait in its poller until their
# first bytes arrive; a thread is taken by a slow client only while it sends, so WEB_WORKERS x
# WEB_THREADS slow clients at once are needed to starve the server (64 by default; measured in
# docs/benchmarks.md, "Slow clients"; the choice in docs/decisions.md). The command line overrides both.
worker_class = "gthread"
_threads = os.environ.get("WEB_THREADS", "").strip() or "16"
if not _threads.isdigit() or int(_threads) < 1:
    # In place of int()'s traceback, which named the value only: the settings module does the same.
    raise SystemExit(f"WEB_THREADS is {_threads!r}: a whole number, at least 1")
threads = int(_threads)
# A worker takes no more connections than it has threads: one whose threads all wait on slow clients
# leaves the next connection to a worker with a thread free, instead of accepting it to answer never.
# Connections do not spread evenly by themselves: 60 slow clients filled one worker of four (16
# threads each) and left most /healthz probes unanswered; with this all of them were answered.
worker_connections = threads
# So no connection is kept alive after its response: an idle one would hold a thread's slot. gunicorn
# closes them anyway when worker_connections leaves no room; saying so also stops its warning at start.
keepalive = 0
# No control socket (gunicorn 27's `gunicornc` interface): its one path per user, $XDG_RUNTIME_DIR or
# $HOME/.gunicorn/gunicorn.ctl, was shared by every gunicorn of that user on the host (a second server
# took it over, the first to stop deleted it), and the image's user has no home, so each start logged
# "[ERROR] Control server error". Signals do what it offers (HUP reloads, TTIN/TTOU add and remove workers).
control_socket_disable = True

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


def _write_json_error(sock, status_int, reason, mesg):
    """gunicorn's own answer to a request it cannot read (a bad request line, Content-Length or
    chunk framing, headers too large) or to a crash outside the application, as the API's JSON error
    body instead of an HTML page: a crawler's client parses every error the same way. The message
    is gunicorn's (it may quote the request back); as JSON it cannot become markup."""
    body = json.dumps({"detail": f"{reason}: {mesg}"[:500], "errors": []}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("latin-1", "replace")
    util.write_nonblock(sock, head + body)


# The workers call util.write_error through the module, so replacing it here (in the master, before
# they fork) reaches every one of them.
util.write_error = _write_json_error

"""Who holds a claim on a notification, and whether that process still runs.

A worker killed in the middle of a send (SIGKILL, the OOM killer, a pulled container) leaves its claim
behind, and one claim in flight holds its channel's lane (lanes.py): a storm waited the whole
ALERTS_CLAIM_TIMEOUT_SECONDS (5 minutes) for a claim whose process was long gone. A claimer names its
host, PID namespace, process id with its start time, and thread; the sweep takes back at once a claim
whose process, by those, no longer runs. A claim from another host or PID namespace (another
container sharing the hostname), or without those parts, waits for the timeout as before: only a
process this one can see is known to be gone.
"""

from __future__ import annotations

import os
import socket
import threading
from functools import cache

PROC = "/proc"


def identity() -> str:
    """This thread as a claimer: host:namespace:pid@start:thread."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{_namespace()}:{pid}@{_started(pid) or ''}:{threading.get_ident()}"


def gone(claimed_by: str) -> bool:
    """Whether `claimed_by` names a process of this host and PID namespace that no longer runs: its
    process id is free, or taken by a process that started later (a reused id)."""
    parts = claimed_by.split(":")
    if len(parts) < 4 or parts[0] != socket.gethostname():
        return False
    namespace, process = parts[1], parts[2]
    if not namespace or namespace != _namespace():
        return False
    pid, _, started = process.partition("@")
    if not pid.isdigit() or not started:
        return False
    try:
        return _started(int(pid)) != started
    except OSError:  # unreadable rather than absent: not known to be gone
        return False


@cache
def _namespace() -> str:
    """The PID namespace's inode ("4026531836" of "pid:[4026531836]"); empty where /proc does not tell."""
    try:
        link = os.readlink(f"{PROC}/self/ns/pid")
    except OSError:
        return ""
    return link.partition("[")[2].rstrip("]")


def _started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat, field 22); None when no
    such process runs (a zombie, killed and not yet reaped by its parent, runs no more). Other errors
    are raised: unknown is not gone."""
    try:
        with open(f"{PROC}/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            text = stat.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses of its own.
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) <= 19 or fields[0] in ("Z", "X"):
        return None
    return fields[19]

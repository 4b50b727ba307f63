"""A system check (manage.py check, migrate, and bin/process migrate run it): static files collected by
an earlier version. Once collectstatic has written a manifest, every page names the hashed copies it
lists, and a file changed since keeps its old copy until collectstatic runs again. bin/serve collects
again when a file changed and the image collects at build, but a checkout upgraded and started from
the Procfile does neither: after the upgrade that loads plotly.js from charts.js, its source pages
loaded the old charts.js, which waits for a plotly.js no page loads any more, and drew no chart at all,
without an error anywhere."""

from __future__ import annotations

import filecmp
from fnmatch import fnmatch
from typing import Any

from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.checks import CheckMessage, Warning
from django.core.files.storage import Storage


def stale_collected_files(storage: Storage) -> list[str]:
    """The files of the storage's manifest whose hashed copy is not what the finders serve now. Without
    a manifest, none: the plain names are served from the finders, always current. The hashed copy is
    compared, not the one under the plain name: collectstatic skips copying a file its copy is newer
    than, and the hashed copies are written from the files found. A file whose references collectstatic
    rewrites (a stylesheet's url()) differs from its copy anyway and is left out."""
    stale = []
    for name, hashed in sorted(getattr(storage, "hashed_files", {}).items()):
        source = finders.find(name)
        if not source or not storage.exists(hashed):
            continue  # gone from the code, or the copy removed by hand: nothing to compare
        if filecmp.cmp(source, storage.path(hashed), shallow=False) or _rewritten(storage, name, source):
            continue
        stale.append(name)
    return stale


def _rewritten(storage: Storage, name: str, source: str) -> bool:
    patterns = [p for glob, ps in getattr(storage, "_patterns", {}).items() if fnmatch(name, glob) for p, _ in ps]
    if not patterns:
        return False
    with open(source, encoding="utf-8", errors="replace") as file:
        text = file.read()
    return any(pattern.search(text) for pattern in patterns)


def collected_static_files_are_current(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    stale = stale_collected_files(staticfiles_storage)
    if not stale:
        return []
    return [
        Warning(
            f"{len(stale)} static file(s) changed since collectstatic last ran ({', '.join(stale[:5])}"
            f"{', ...' if len(stale) > 5 else ''}): the pages name the copies collected before, and a "
            "changed charts.js draws no chart.",
            hint="Run collectstatic --no-input (bin/manage collectstatic --no-input), then restart the web processes.",
            id="completeness.W002",
        )
    ]

"""The feed-export step: publish a feed's file as the snapshot, guarded.

    FEEDS = {"staging/cars.jsonl": {"format": "jsonlines", "overwrite": True}}
    COMPLETENESS_SNAPSHOT_FILES = {"staging/cars.jsonl": "data/cars.jsonl"}

Once the feeds are stored and the run's numbers are final, a complete run
moves the staging file over the published one (an atomic rename on one file
system); any other run leaves the published file alone and moves the staging
file aside to `<staging>.incomplete`, so the next run cannot append to it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..report import RunReport
    from .storage import StorageOutcomes

logger = logging.getLogger(__name__)


def publish_snapshot_files(report: RunReport, storage: StorageOutcomes, files: dict[str, str]) -> None:
    for staging_name, published_name in files.items():
        staging, published = Path(staging_name).resolve(), Path(published_name).resolve()
        rows = storage.stored_at.get(staging, 0)

        def replace(staging: Path = staging, published: Path = published, rows: int = rows) -> int:
            published.parent.mkdir(parents=True, exist_ok=True)
            if staging.exists():
                os.replace(staging, published)
            else:  # nothing stored: a source that declared 0 records is empty now
                published.write_bytes(b"")
            return rows

        try:
            snapshot = report.guard_snapshot(replace, from_files=True)
        except OSError as exc:
            # The guard made it a failed batch. Raised on, it ended the kit's closing before the report
            # was written or posted: the service never heard of the run (os.replace across two mounts).
            logger.error("snapshot %s not published: %s", published, exc)
            continue
        if snapshot["action"] == "replaced":
            logger.info("snapshot %s replaced by this run's %d rows", published, rows)
            continue
        logger.warning(
            "snapshot %s kept (the previous rows stay published): %s",
            published,
            "; ".join(report.completeness(from_files=True).reasons),
        )
        if staging.exists():
            os.replace(staging, staging.with_name(staging.name + ".incomplete"))

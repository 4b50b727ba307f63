"""Static files with content-hashed names and gzip/brotli copies once `collectstatic` has run.

WhiteNoise serves a hashed name with a far-future `Cache-Control: immutable`, so a browser fetches
plotly.js (4.8 MB, 1.1 MB as brotli) once per plotly version instead of revalidating it every minute.
Before collectstatic (a fresh clone under `bin/manage runserver`, a process started straight from the
Procfile) there is no manifest: the plain names are used and WhiteNoise serves them from the finders,
where Django's manifest storage would answer every page with a 500 for a missing manifest entry.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    def stored_name(self, name: str) -> str:
        if self.hash_key(self.clean_name(name)) not in self.hashed_files:
            return name
        return super().stored_name(name)

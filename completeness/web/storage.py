"""Static files with content-hashed names and gzip/brotli copies once `collectstatic` has run.

WhiteNoise serves a hashed name with a far-future `Cache-Control: immutable`, so a browser fetches
plotly.js (4.8 MB, 1.2 MB as brotli) once per plotly version instead of revalidating it every minute.
Before collectstatic (a fresh clone under `bin/manage runserver`, a process started straight from the
Procfile) there is no manifest: the plain names are used and WhiteNoise serves them from the finders,
where Django's manifest storage would answer every page with a 500 for a missing manifest entry.
"""

from __future__ import annotations

from typing import Any

from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

# Brotli's default quality (11) took 14 s over plotly.js for 1.11 MB; 9 takes under 3 s for 1.23 MB.
# bin/serve collects at startup whenever a static file changed: the seconds matter more there.
BROTLI_QUALITY = 9


class _Compressor(Compressor):  # type: ignore[misc]  # whitenoise ships no type information
    @staticmethod
    def compress_brotli(data: bytes) -> bytes:
        import brotli

        compressed: bytes = brotli.compress(data, quality=BROTLI_QUALITY)
        return compressed


class StaticStorage(CompressedManifestStaticFilesStorage):  # type: ignore[misc]  # as above
    def create_compressor(self, **kwargs: Any) -> Compressor:
        return _Compressor(**kwargs)

    def stored_name(self, name: str) -> str:
        if self.hash_key(self.clean_name(name)) not in self.hashed_files:
            return name
        stored: str = super().stored_name(name)
        return stored

"""Serves plotly.js from the installed plotly package, so the pages need no CDN and the repository
carries no 4 MB copy: the file the Python figures were made for is the one the browser runs.

`collectstatic` copies it into STATIC_ROOT like any other static file; WhiteNoise (with
WHITENOISE_USE_FINDERS) serves it straight from the package before that.
"""

from __future__ import annotations

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "vendor/plotly.min.js"
_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(_PACKAGE_DATA), base_url=None)

    def check(self, **kwargs):
        from django.core.checks import Error

        if not (_PACKAGE_DATA / "plotly.min.js").is_file():
            return [Error(f"plotly.min.js not found in {_PACKAGE_DATA}", id="completeness.E001")]
        return []

    def find(self, path: str, find_all: bool = False, **kwargs):
        if path != PLOTLY_JS:
            return [] if find_all else None
        found = str(_PACKAGE_DATA / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns):
        # (path as served, storage holding it): collectstatic stores it under the served path.
        yield PLOTLY_JS, _PrefixedStorage(self.storage)


class _PrefixedStorage(FileSystemStorage):
    """Exposes package_data/plotly.min.js as vendor/plotly.min.js to collectstatic."""

    def __init__(self, inner: FileSystemStorage) -> None:
        super().__init__(location=inner.location)

    @staticmethod
    def _real(name: str) -> str:
        return "plotly.min.js" if name == PLOTLY_JS else name

    def path(self, name: str) -> str:
        return super().path(self._real(name))

    def open(self, name: str, mode: str = "rb"):
        return super().open(self._real(name), mode)

    def get_modified_time(self, name: str):
        return super().get_modified_time(self._real(name))

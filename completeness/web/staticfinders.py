"""Serves plotly.js from the installed plotly package, so the pages need no CDN and the repository
carries no 4 MB copy: the file the Python figures were made for is the one the browser runs.

`collectstatic` copies it into STATIC_ROOT like any other static file; WhiteNoise (with
WHITENOISE_USE_FINDERS) serves it straight from the package before that.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage, Storage

if TYPE_CHECKING:
    from django.core.checks import CheckMessage
    from django.core.files import File

PLOTLY_JS = "vendor/plotly.min.js"
_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(_PACKAGE_DATA), base_url=None)

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        from django.core.checks import Error

        if not (_PACKAGE_DATA / "plotly.min.js").is_file():
            return [Error(f"plotly.min.js not found in {_PACKAGE_DATA}", id="completeness.E001")]
        return []

    @overload
    def find(self, path: str, find_all: Literal[False] = False, **kwargs: Any) -> str | None: ...
    @overload
    def find(self, path: str, find_all: Literal[True], **kwargs: Any) -> list[str]: ...
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        if path != PLOTLY_JS:
            return [] if find_all else None
        found = str(_PACKAGE_DATA / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns: Iterable[str] | None) -> Iterator[tuple[str, Storage]]:
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

    def open(self, name: str, mode: str = "rb") -> File[Any]:
        return super().open(self._real(name), mode)

    def get_modified_time(self, name: str) -> datetime:
        return super().get_modified_time(self._real(name))

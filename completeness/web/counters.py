"""The default cache: files under $VAR_DIR/cache that every process of one machine shares, with `add`
and `incr` made atomic across processes, so that a rate limit counts all gunicorn workers together
without Redis.

Django's FileBasedCache alone is not enough for counting: its `add` is a look then a write, and `incr`
(BaseCache's) a read then a write that also resets the entry's expiry to the default timeout, so two
workers counting at once lose hits, and a counter of a 10-minute window expired after five. Here both
run under one exclusive lock (flock on a file in the cache folder), as does every other write, and
`incr` keeps the expiry. A hit costs about 0.2 ms (docs/benchmarks.md, "Shared rate counter").
Entries past MAX_ENTRIES are culled expired first, so a live counter is dropped only when the folder
is full of live ones.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache


class SharedFileCache(FileBasedCache):
    def __init__(self, dir: str, params: dict[str, Any]) -> None:
        super().__init__(dir, params)
        # The lock is taken once per thread: `add` writes through `set`, and a second flock on a new
        # open file would wait for the first forever.
        self._held = threading.local()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if getattr(self._held, "lock", False):
            yield
            return
        self._createdir()
        with open(os.path.join(self._dir, "counters.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._held.lock = True
            try:
                yield
            finally:
                self._held.lock = False
                fcntl.flock(lock, fcntl.LOCK_UN)

    def add(self, key: str, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        with self._locked():
            return super().add(key, value, timeout, version)

    def incr(self, key: str, delta: int = 1, version: int | None = None) -> Any:
        fname = self._key_to_file(key, version)
        with self._locked():
            try:
                with open(fname, "rb") as f:
                    expiry = pickle.load(f)
                    value = pickle.loads(zlib.decompress(f.read()))
            except (FileNotFoundError, EOFError):
                raise ValueError(f"Key '{key}' not found") from None
            if expiry is not None and expiry < time.time():
                self._delete(fname)
                raise ValueError(f"Key '{key}' not found")
            value += delta
            # In place, not through a renamed copy (several times slower): every reader takes the lock.
            try:
                with open(fname, "r+b") as f:
                    f.write(pickle.dumps(expiry, self.pickle_protocol))
                    f.write(zlib.compress(pickle.dumps(value, self.pickle_protocol)))
                    f.truncate()
            except FileNotFoundError:  # removed outside this cache (a person emptying the folder)
                raise ValueError(f"Key '{key}' not found") from None
            return value

    def get(self, key: str, default: Any = None, version: int | None = None) -> Any:
        with self._locked():
            return super().get(key, default, version)

    # A reader that finds its entry expired deletes it by name; unlocked, the name could by then be a
    # fresh window that a writer renamed into place after the read (`set` writes a copy and renames it).
    def has_key(self, key: str, version: int | None = None) -> bool:
        with self._locked():
            return super().has_key(key, version)

    # Every other write under the same lock: a counter removed between incr's read and its write (by
    # `clear`, or by `set`'s cull) was a FileNotFoundError, a 500 where a rate limit was counting.
    def set(self, key: str, value: Any, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        with self._locked():
            super().set(key, value, timeout, version)

    def touch(self, key: str, timeout: float | None = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        with self._locked():
            return super().touch(key, timeout, version)

    def delete(self, key: str, version: int | None = None) -> bool:
        with self._locked():
            return super().delete(key, version)

    def clear(self) -> None:
        with self._locked():
            super().clear()

    def _cull(self) -> None:
        files = self._list_cache_files()
        if len(files) < self._max_entries:
            return
        now = time.time()
        for fname in files:
            try:
                with open(fname, "rb") as f:
                    expiry = pickle.load(f)
            except (FileNotFoundError, EOFError):
                continue
            if expiry is not None and expiry < now:
                self._delete(fname)
        super()._cull()

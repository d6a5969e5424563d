"""What the console read or drew, kept while what it was read or drawn from stays as it was: a
finished run's charts are read and drawn once, a running run's again when its files change; a
sweep's listing line and history chart once per change of its optuna storage.

A key's stamp is the size, modification and change times and inode of each file (and of each
entry of each folder) it depends on, and for a SQLite file its header's change counter too (two
commits within one tick of the file system's clock may leave the same size and times); a stamp
that differs makes the value stale. Each cache holds a bounded number of values and, where they
are large (series, PNGs), a bounded number of bytes, least recently used dropped first."""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

from trainstack.regularfile import read_regular

_T = TypeVar("_T")

Stamp = tuple[object, ...]


def stamp(*paths: Path) -> Stamp:
    """Each path's (size, mtime, ctime, inode), a folder's with its entries'; None where nothing
    is. Only a cache key: the files themselves are read through trainstack.regularfile."""
    out: list[object] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
        if os.path.isdir(path):
            try:
                with os.scandir(path) as entries:
                    for e in sorted(entries, key=lambda e: e.name):
                        s = e.stat()
                        out.append((e.name, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino))
            except OSError:
                out.append("unreadable")
    return tuple(out)


def sqlite_stamp(path: Path) -> Stamp:
    """A SQLite database's stamp: its file's, its journal's and write-ahead log's, and the file
    change counter SQLite increments in the header on every commit (offset 24, 4 bytes)."""
    try:
        counter: object = read_regular(path, limit=28)[24:28]
    except OSError:
        counter = None
    journal = path.with_name(path.name + "-journal")
    wal = path.with_name(path.name + "-wal")
    return (*stamp(path, journal, wal), counter)


_ALL: weakref.WeakSet[StampCache[object]] = weakref.WeakSet()


def forget_all() -> None:
    """Drop everything every cache holds (a benchmark's cold start)."""
    for cache in list(_ALL):
        cache.clear()


class StampCache(Generic[_T]):
    """At most `size` values and, with `weigh`, at most `budget` bytes of them (a value heavier
    than the whole budget is returned, not kept); least recently used dropped first.
    Thread-safe (the server answers requests on several threads); two requests that miss at once
    both compute."""

    def __init__(
        self, size: int, budget: int | None = None, weigh: Callable[[_T], int] | None = None
    ) -> None:
        self.size = size
        self.budget = budget
        self._weigh = weigh
        self._items: OrderedDict[Hashable, tuple[Stamp, _T, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        _ALL.add(self)  # type: ignore[arg-type]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    @property
    def held(self) -> tuple[int, int]:
        """(values, bytes) held now."""
        with self._lock:
            return len(self._items), self._bytes

    def get(self, key: Hashable, current: Stamp, make: Callable[[], _T]) -> _T:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] == current:
                self._items.move_to_end(key)
                return hit[1]
        value = make()
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
            if self.budget is not None and weight > self.budget:
                return value
            self._items[key] = (current, value, weight)
            self._bytes += weight
            while len(self._items) > self.size or (
                self.budget is not None and self._bytes > self.budget
            ):
                _, (_, _, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
        return value

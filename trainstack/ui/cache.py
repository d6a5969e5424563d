"""What the console read or drew from a run's files, kept while those files stay as they were:
a finished run's charts are read and drawn once, a running run's again when its files change.
A key's stamp is the size, change time and inode of each file (and of each entry of each folder)
it depends on; a stamp that differs makes the value stale."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

_T = TypeVar("_T")

Stamp = tuple[object, ...]


def stamp(*paths: Path) -> Stamp:
    """Each path's (size, mtime, inode), a folder's with its entries'; None where nothing is.
    Only a cache key: the files themselves are read through trainstack.regularfile."""
    out: list[object] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        if os.path.isdir(path):
            try:
                with os.scandir(path) as entries:
                    for e in sorted(entries, key=lambda e: e.name):
                        s = e.stat()
                        out.append((e.name, s.st_size, s.st_mtime_ns, s.st_ino))
            except OSError:
                out.append("unreadable")
    return tuple(out)


class StampCache(Generic[_T]):
    """At most `size` values, least recently used dropped first; thread-safe (the server
    answers requests on several threads). Two requests that miss at once both compute."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, tuple[Stamp, _T]] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def get(self, key: Hashable, current: Stamp, make: Callable[[], _T]) -> _T:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0] == current:
                self._items.move_to_end(key)
                return hit[1]
        value = make()
        with self._lock:
            self._items[key] = (current, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

"""How long a path in a spec may be: what the kernel takes, said before anything uses it.

Linux's limits.h: a path is at most PATH_MAX (4096) bytes with its terminating NUL, each of its
names at most NAME_MAX (255) bytes; past either, every system call on it fails with ENAMETOOLONG,
which reached users as an OSError traceback from `validate`, `render` and `run`.
"""

from __future__ import annotations

from trainstack.excerpt import excerpt

PATH_MAX = 4095  # bytes, without the NUL
NAME_MAX = 255


def too_long(path: str) -> str | None:
    """Why `path` cannot be a path on this system, or None when it can be."""
    size = len(path.encode("utf-8", errors="surrogateescape"))
    if size > PATH_MAX:
        return f"a path of {size:,} bytes; paths are at most {PATH_MAX:,} (Linux PATH_MAX)"
    for part in path.split("/"):
        if len(part.encode("utf-8", errors="surrogateescape")) > NAME_MAX:
            return f"the name {excerpt(part)} in it is over {NAME_MAX} bytes (Linux NAME_MAX)"
    return None

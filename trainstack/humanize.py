"""Sizes and durations as people read them, in tables and summaries (the run summary, `runs
list`, the HTML report, the console), and a time as they write it (`--since 2h`)."""

from __future__ import annotations

import re
import time
from datetime import datetime

from trainstack.errors import UserError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


def human_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 60:
        return f"{s:.1f}s"
    minutes, sec = divmod(int(s), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{sec:02d}s" if hours else f"{minutes}m{sec:02d}s"


def parse_since(text: str, now: float | None = None) -> float:
    """'2h', '30m', '1.5d', '90s', '1w' ago; or an ISO date/time (local time)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if m:
        return (now if now is not None else time.time()) - float(m.group(1)) * _UNITS[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise UserError(
            f"--since {text!r}: expected a duration such as 30m, 2h or 7d, or a "
            "date such as 2026-11-29 or 2026-11-29T12:00"
        ) from None

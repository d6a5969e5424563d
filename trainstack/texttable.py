"""Plain-text tables for the terminal: left-aligned columns two spaces apart (numpy-free, so
`runs list` stays quick). Every cell is shown with its control characters escaped (`\\x1b`):
what a table shows comes from run records, metrics files and file names, which need not have
come through validation, and must not drive the terminal (issue 20 item 17)."""

from __future__ import annotations

from collections.abc import Sequence

from trainstack.excerpt import printable


def aligned(rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return ""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )

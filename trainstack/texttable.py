"""The one table renderer: every table a verb prints (`runs list`, `runs compare`, `metrics`,
`sweeps list/show`, `status`) and the two live ones (a local run's replicas, a sweep's trials)
are a `Table` built by their service module and laid out here, so no verb keeps a layout of its
own.

Plain text is the one form a verb prints: left-aligned columns two spaces apart, headings in
capitals, no escape codes (numpy- and rich-free, so `runs list` stays quick). Only a live view on
a terminal asks for `live` (a rich table with the same columns and cells, redrawn in place).
Every cell is shown with its control characters escaped (`\\x1b`), in both forms: what a table
shows comes from run records, metrics files and file names, which need not have come through
validation, and must not drive the terminal; a rich cell is never read as
markup either."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainstack.excerpt import printable

if TYPE_CHECKING:
    from rich.table import Table as RichTable


@dataclass(frozen=True)
class Styled:
    """A cell with a colour for the live view (a replica's own colour); plain text shows the
    text alone."""

    text: str
    style: str


Cell = str | Styled


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    title: str = ""

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row of {len(row)} cells in a table of {self.columns}")


def table(columns: Sequence[str], rows: Sequence[Sequence[Cell]], *, title: str = "") -> Table:
    return Table(tuple(columns), tuple(tuple(row) for row in rows), title)


def _text(cell: Cell) -> str:
    return cell.text if isinstance(cell, Styled) else cell


def plain(t: Table, *, indent: str = "") -> str:
    """The table as a verb prints it: its title, if any, on a line of its own, then the
    headings and rows aligned; `indent` before every line of the table (a block within a
    longer report)."""
    body = aligned([[c.upper() for c in t.columns], *([_text(c) for c in r] for r in t.rows)])
    lines = [indent + line if line else line for line in body.split("\n")]
    return "\n".join(([printable(t.title)] if t.title else []) + lines)


def aligned(rows: Sequence[Sequence[str]]) -> str:
    """Rows as given, the first a heading if the caller wants one (`runs compare` heads its
    columns with run ids, not names)."""
    if not rows:
        return ""
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def live(t: Table) -> RichTable:
    """The table for a live view on a terminal (rich.live redraws it in place): the same
    columns and cells, headings in bold instead of capitals, no box."""
    from rich.table import Table as RichTable
    from rich.text import Text

    out = RichTable(
        title=printable(t.title) or None,
        box=None,
        show_header=True,
        header_style="bold",
        pad_edge=False,
    )
    for column in t.columns:
        out.add_column(column)
    for row in t.rows:
        out.add_row(
            *(
                Text(printable(c.text), style=c.style)
                if isinstance(c, Styled)
                else Text(printable(c))
                for c in row
            )
        )
    return out

"""One table renderer: trainstack/texttable.py lays out every table, a verb's
and a live view's; no other module builds a rich table or pads columns by hand, and what a verb
prints off a terminal is plain text (no escape codes, no box drawing)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tests.clirunner import Cli
from trainstack import texttable
from trainstack.spec.loader import load_sweep

PACKAGE = Path(texttable.__file__).parent
EXAMPLE = PACKAGE.parent / "components" / "mnist-ddp" / "sweeps" / "lr-optimizer.yaml"
ESC = "\x1b"
BOX = re.compile("[\u2500-\u257f]")  # rich's box-drawing characters


def _sources() -> list[tuple[str, str]]:
    return [
        (str(p.relative_to(PACKAGE)), p.read_text())
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "texttable.py"
    ]


def test_no_module_but_texttable_builds_a_rich_table() -> None:
    found = [name for name, text in _sources() if "rich.table" in text or "RichTable(" in text]
    assert found == [], f"build a texttable.Table and render it with texttable.live: {found}"


# `{x:<9}`, `{x:>12}`, `.ljust(`, `.rjust(`: a column padded by hand
PADDING = re.compile(r"\{[^{}]*:[^{}]*[<>^]\d+\}|\.ljust\(|\.rjust\(")


def test_no_verb_pads_its_own_columns() -> None:
    verbs = [(n, t) for n, t in _sources() if n.startswith("cli/")]
    assert len(verbs) > 20
    found = [name for name, text in verbs if PADDING.search(text)]
    assert found == [], f"a verb lays out its own table: {found}"


def test_the_scans_see_what_they_look_for() -> None:
    assert PADDING.search('f"{r.phase:<9}"') and PADDING.search("key.ljust(width)")
    assert not PADDING.search('f"{cpu:.0f}"')


def test_plain_tables_have_capital_headings_aligned_columns_and_escaped_cells() -> None:
    t = texttable.table(
        ("replica", "state"),
        [(texttable.Styled("worker-0", "cyan"), "running"), (f"x{ESC}[2J", "ok")],
        title="a title",
    )
    text = texttable.plain(t, indent="  ")
    assert ESC not in text
    title, head, first, second = text.splitlines()
    assert title == "a title"
    assert head == "  REPLICA   STATE"  # x\x1b[2J, as shown, is as wide as worker-0
    assert first == "  worker-0  running"
    assert second.index("ok") == head.index("STATE") and "x\\x1b[2J" in second


def test_a_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match="a row of 1 cells"):
        texttable.table(("a", "b"), [("only one",)])


def test_the_live_table_shows_the_same_cells_never_as_markup() -> None:
    from rich.console import Console

    t = texttable.table(
        ("trial", "parameters"), [("0", "opt=[bold]adam[/bold]"), ("1", f"{ESC}]0")]
    )
    out = io.StringIO()
    Console(file=out, width=80, force_terminal=True).print(texttable.live(t))
    shown = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())  # rich's own styling
    assert "opt=[bold]adam[/bold]" in shown and "\\x1b]0" in shown
    assert "trial" in shown and "parameters" in shown


def test_sweeps_list_and_show_print_plain_tables(tmp_path: Path) -> None:
    from trainstack.sweep import study as studies

    home = tmp_path / "home"
    sweep = load_sweep(EXAMPLE)
    studies.sweep_dir(home, sweep.name).mkdir(parents=True)
    st = studies.open_study(sweep, studies.sweep_dir(home, sweep.name))
    dists = studies.distributions(sweep)
    st.tell(st.ask(dists), 0.5)
    cli = Cli(home)
    listed = cli.invoke("sweeps", "list")
    assert listed.code == 0, listed.output
    head, row = listed.out.splitlines()
    assert head.split() == ["SWEEP", "EXPERIMENT", "OBJECTIVE", "TRIALS", "BEST", "BEST", "TRIAL"]
    assert row.startswith(sweep.name) and row.index("1 complete") == head.index("TRIALS")
    shown = cli.invoke("sweeps", "show", sweep.name)
    assert shown.code == 0, shown.output
    assert "TRIAL  STATE     OBJECTIVE  PARAMETERS" in shown.out
    for done in (listed, shown):
        assert ESC not in done.out and not BOX.search(done.out), done.out

"""`trainstack(...)`: the CLI runner (tests/clirunner.py) for module-level helpers that need no
state home; it also asserts that no traceback was printed."""

from __future__ import annotations

from tests.clirunner import ROOT, Cli, Result

__all__ = ["ROOT", "Result", "trainstack"]

trainstack = Cli(forbid_traceback=True)

"""`trainstack ui`: a read-only local web console over the run registry, run directories, the
stack index and sweeps (docs/ui.md)."""

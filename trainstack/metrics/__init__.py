"""Training metrics and resource usage of a run (seed 003's metrics spec): check, read, draw,
export, compare, idle warnings and the one-file HTML report. See docs/metrics.md."""

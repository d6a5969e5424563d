"""Training metrics and resource usage of a run (the Octopus training-task service's training
metrics spec): check, read, draw, export, compare, idle warnings and the one-file HTML report. See
docs/metrics.md."""

"""Hyperparameter sweeps (docs/sweeps.md): a `kind: Sweep` spec, searched with optuna, each trial
an ordinary run, locally or as a run stack."""

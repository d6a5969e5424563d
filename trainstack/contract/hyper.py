"""Hyperparameters as the process sees them: `PAI_USER_ARGS`, `PAI_HPS`, `PAI_HPS_<NAME>`.

Values are data. `user_args` is the argv form (one element per flag and per value, never split);
`PAI_USER_ARGS` is that argv joined with POSIX quoting, which for simple values is exactly
PAI Designer's `--epochs 10 --batch-size 32` and for anything else still splits back (shlex) into
the same argv. See `shell.py` for how the command receives the argv itself.
"""

from __future__ import annotations

import json
import shlex

from trainstack.spec.model import ParamValue, Run


def value_text(value: ParamValue) -> str:
    """One parameter value as text: ints and floats as Python/JSON write them, bools as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def user_args(run: Run) -> tuple[str, ...]:
    """`--name value` per parameter, in the component's declaration order."""
    out: list[str] = []
    for name, value in run.parameters.items():
        out += [f"--{name}", value_text(value)]
    return tuple(out)


def user_args_text(run: Run) -> str:
    return " ".join(shlex.quote(a) for a in user_args(run))


def hps_json(run: Run) -> str:
    """`PAI_HPS`; json.dumps's default separators give PAI Designer's
    `{"epochs": 10, "batch-size": 32}`."""
    return json.dumps(dict(run.parameters), ensure_ascii=False)


def hyperparameters_file(run: Run) -> str:
    return json.dumps(dict(run.parameters), ensure_ascii=False, indent=2) + "\n"

"""Make a run's storage bindings runnable on this machine.

Locally only `file://` locations exist. `--input NAME=PATH` / `--output NAME=PATH` rebind a
channel, and `--model NAME=PATH` one of `spec.models`, to a local path; anything still bound to
another scheme is a user error that says how to run it locally. The result is the same frozen
`Run`, with local bindings, for the contract.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from trainstack.errors import UserError
from trainstack.spec import values
from trainstack.spec.model import Binding, FrozenMap, Run
from trainstack.spec.schemes import SCHEMES, storage_scheme
from trainstack.suggest import did_you_mean


class LocalBindingError(UserError):
    """A channel is bound to storage this machine cannot reach, or an override is malformed."""


def parse_overrides(items: Sequence[str], flag: str) -> dict[str, Path]:
    """`NAME=PATH` pairs from the command line; PATH may also be a file:// URI."""
    out: dict[str, Path] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise LocalBindingError(
                f"{flag} {item!r}: expected NAME=PATH",
                hint=f"for example {flag} train=./data/train",
            )
        if name in out:
            raise LocalBindingError(f"{flag} {name}=… given twice")
        scheme, colon_slashes, _ = path.partition("://")
        record = storage_scheme(path) if colon_slashes else None
        if colon_slashes and (record is None or not record.local):
            # `oss://bucket/x` was taken as the relative path ./oss:/bucket/x
            raise LocalBindingError(
                f"{flag} {name}={path}: a {scheme}:// URI; {flag} takes a local path "
                "(or file://PATH), as a local run reaches no other storage",
                hint=f"bind {scheme}:// in the run spec for a cluster run; locally, for example "
                f"{flag} {name}=./{name}",
            )
        path = path.removeprefix("file://")
        # Normalized as the system would walk it (`../x`, `a/../b` are ordinary paths to give;
        # bindings themselves never carry `..`).
        try:
            out[name] = Path(path).expanduser().resolve()
        except (OSError, RuntimeError) as err:  # RuntimeError: a symlink loop (Python 3.11)
            raise LocalBindingError(f"{flag} {item!r}: {err}") from None
    return out


def localize(
    run: Run,
    inputs: Mapping[str, Path],
    outputs: Mapping[str, Path],
    models: Mapping[str, Path] | None = None,
) -> Run:
    """`run` with overrides applied and every binding checked to be local."""
    comp = run.component
    models = models or {}
    _check_names("--input", inputs, [c.name for c in comp.inputs])
    _check_names("--output", outputs, [c.name for c in comp.outputs])
    _check_names("--model", models, [m.name for m in run.models], owner="run", noun="model")
    new_inputs = dict(run.inputs)
    for name, path in inputs.items():
        mode = run.inputs[name].mode if name in run.inputs else "mount"
        new_inputs[name] = _existing_binding("--input", name, path, mode=mode)
    new_outputs = dict(run.outputs)
    for name, path in outputs.items():
        # An output path may not exist yet: a trailing name with an extension means a file.
        is_file = path.is_file() or (not path.exists() and path.suffix != "")
        new_outputs[name] = _file_binding(path, is_file=is_file, mode="mount")
    # A model is an input the job always gets a copy of (the cluster downloads it before start).
    new_models = tuple(
        dataclasses.replace(
            m, binding=_existing_binding("--model", m.name, models[m.name], mode=m.binding.mode)
        )
        if m.name in models
        else m
        for m in run.models
    )
    for name, binding in new_inputs.items():
        _require_local(binding, f"input {name!r}", f"--input {name}=PATH")
    for name, binding in new_outputs.items():
        _require_local(binding, f"output {name!r}", f"--output {name}=PATH")
    for model in new_models:
        _require_local(model.binding, f"model {model.name!r}", f"--model {model.name}=PATH")
    missing = [c.name for c in comp.inputs if c.required and c.name not in new_inputs]
    if missing:
        raise LocalBindingError(
            f"required input {missing[0]!r} is not bound",
            hint=f"pass --input {missing[0]}=PATH",
        )
    return dataclasses.replace(
        run,
        inputs=FrozenMap(_in_order(new_inputs, [c.name for c in comp.inputs])),
        outputs=FrozenMap(_in_order(new_outputs, [c.name for c in comp.outputs])),
        models=new_models,
    )


def _existing_binding(flag: str, name: str, path: Path, *, mode: str) -> Binding:
    """An override naming something to read (an input or a model): it must exist."""
    if not path.exists():
        raise LocalBindingError(f"{flag} {name}={path}: no such file or directory")
    return _file_binding(path, is_file=path.is_file(), mode=mode)


def _file_binding(path: Path, *, is_file: bool, mode: str) -> Binding:
    text = str(path) if is_file else str(path).rstrip("/") + "/"
    return values.binding("file://" + text, kind="file" if is_file else "directory", mode=mode)


def _check_names(
    flag: str,
    given: Mapping[str, Path],
    known: list[str],
    *,
    owner: str = "component",
    noun: str = "channel",
) -> None:
    for name in given:
        if name not in known:
            choices = ", ".join(known) or "none"
            raise LocalBindingError(
                f"{flag} {name}=…: the {owner} has no such {noun} "
                f"(its {flag[2:]}s: {choices}).{did_you_mean(name, known)}"
            )


def _require_local(binding: Binding, what: str, how: str) -> None:
    if SCHEMES[binding.scheme].local:
        return
    raise LocalBindingError(
        f"{what} is bound to {binding.uri}, which a local run cannot reach",
        hint=f"copy the data to this machine and pass {how} (or bind it to a file:// URI)",
    )


def _in_order(bindings: dict[str, Binding], order: Sequence[str]) -> dict[str, Binding]:
    return {name: bindings[name] for name in order if name in bindings}


def bind_unbound_outputs(run: Run, output_dir: Callable[[str], Path]) -> Run:
    """Give every output channel without a binding its run-directory folder.

    On a cluster an unbound output has nowhere to go; locally it simply stays in the run
    directory, and the process still gets its `PAI_OUTPUT_<NAME>`.
    """
    outputs = dict(run.outputs)
    for channel in run.component.outputs:
        if channel.name not in outputs:
            outputs[channel.name] = _file_binding(
                output_dir(channel.name), is_file=False, mode="mount"
            )
    order = [c.name for c in run.component.outputs]
    return dataclasses.replace(run, outputs=FrozenMap(_in_order(outputs, order)))

"""The command rewrite leaves heredoc bodies as written, quotes
`${PAI_HPS_X:-d}`-style expansions and the inside of `$(case ...)`, and validate refuses the
forms it cannot make split-proof. Checked with the real `sh`."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainstack.contract import Topology, launch_command, replica_env
from trainstack.contract.shell import rewrite
from trainstack.errors import SpecError
from trainstack.spec import load_component
from trainstack.spec.model import FrozenMap, Run

ARGV = "python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))'"


def _argv(load, tmp: Path, command: str, **params: object) -> list[str]:
    base: Run = load("quoting/run.yaml")
    run = dataclasses.replace(
        base,
        component=dataclasses.replace(base.component, command=command),
        parameters=FrozenMap({"x": "a  b", "y": "*", "n": 3, **params}),
    )
    root = tmp / "ml"
    (root / "usercode").mkdir(parents=True, exist_ok=True)
    env = replica_env(run, "worker", 0, topology=Topology.local(run, {}), root=root)
    proc = subprocess.run(
        launch_command(run, "worker", install_requirements=False),
        # `python3` as the local runner finds it: the interpreter's own folder first (the
        # machine's PATH may lead to a version manager's shim, ~0.1 s a start)
        env={"PATH": os.pathsep.join((os.path.dirname(sys.executable), os.environ["PATH"])), **env},
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_a_quoted_heredoc_wrapper_keeps_pai_user_args(load, tmp_path: Path) -> None:
    # The inner sh reads $PAI_USER_ARGS from the environment, as PAI Designer does; the body is not
    # the outer script's to rewrite (it has no "$@").
    command = f"sh <<'EOF'\n{ARGV} $PAI_USER_ARGS\nEOF"
    assert rewrite(command) == command
    assert _argv(load, tmp_path, command, x="plain", y="z") == [
        "--x",
        "plain",
        "--y",
        "z",
        "--n",
        "3",
    ]


def test_an_unquoted_heredoc_body_is_left_as_written(load, tmp_path: Path) -> None:
    command = f'cat <<EOF > args.txt\n$PAI_HPS_X|$PAI_USER_ARGS\nEOF\n{ARGV} "$(cat args.txt)"'
    assert rewrite(command).startswith("cat <<EOF > args.txt\n$PAI_HPS_X|$PAI_USER_ARGS\nEOF\n")
    assert _argv(load, tmp_path, command) == ["a  b|--x 'a  b' --y '*' --n 3"]


def test_a_default_expansion_is_one_word(load, tmp_path: Path) -> None:
    command = f"{ARGV} ${{PAI_HPS_X:-d}} ${{PAI_HPS_X%b}} ${{#PAI_HPS_X}}"
    assert _argv(load, tmp_path, command) == ["a  b", "a  ", "4"]


def test_case_inside_command_substitution_quotes_its_branches(load, tmp_path: Path) -> None:
    command = (
        f'{ARGV} "$(case $PAI_HPS_N in 3) printf %s/%s $PAI_HPS_X $PAI_HPS_Y;; '
        '*) echo other;; esac)"'
    )
    assert _argv(load, tmp_path, command) == ["a  b/*"]


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("p ${PAI_HPS_X:-a b}", "${PAI_HPS_X:-a b} cannot be made split-proof"),
        ("p ${PAI_HPS_X:-$HOME}", "${PAI_HPS_X:-$HOME} cannot be made split-proof"),
        ("p ${HOME:-$PAI_HPS_X}", "expands a contract variable inside another expansion"),
        ("p ${PAI_USER_ARGS:-x}", "use $PAI_USER_ARGS as it is"),
        ("p `echo $PAI_HPS_X`", "inside backquotes"),
        ("cat <<EOF\nno end", "the here-document <<EOF is not ended by a line EOF"),
        ('p "$PAI_HPS_X', "a double quote is not closed"),
        # an unclosed single quote (or backquote) passed and launched
        ("python main.py --name 'abc $PAI_USER_ARGS", "a single quote is not closed"),
        ("python main.py `date", "a backquote is not closed"),
        # a contract variable re-evaluated as code by eval or sh -c
        ("eval python main.py $PAI_USER_ARGS", "eval parses its arguments again as shell code"),
        ('cd /x && eval "python m.py $PAI_HPS_X"', "eval parses its arguments again"),
        ('sh -c "python main.py $PAI_USER_ARGS"', "sh -c runs its script argument as code"),
        ('bash -ec "p $PAI_INPUT_X"', "bash -c runs its script argument as code"),
        ("exec /bin/sh -c p$PAI_HPS_X", "sh -c runs its script argument as code"),
    ],
)
def test_validate_refuses_what_cannot_be_rewritten(
    tmp_path: Path, command: str, problem: str
) -> None:
    comp = tmp_path / "component.yaml"
    comp.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Component\n"
        "metadata: {name: sh, version: 1.0.0}\nspec:\n  jobType: custom\n"
        "  image: registry.example.com/x:1\n  command: " + json.dumps(command) + "\n"
        "  parameters: [{name: x, type: String}]\n"
    )
    from trainstack.contract.shell import ShellRewriteError

    with pytest.raises(SpecError) as err:
        load_component(comp)
    [diag] = [d for d in err.value.diagnostics() if d.code == "command-shell"]
    assert diag.path == "spec.command" and diag.line == 7 and problem in diag.message
    assert diag.hint
    with pytest.raises(ShellRewriteError, match="cannot be run safely"):
        rewrite(command)  # a model built without validation is refused at launch too


@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'python main.py \"$@\"' sh $PAI_USER_ARGS",  # the safe form the hint gives
        "bash -c 'echo \"$PAI_HPS_X\"'",  # the inner shell expands it: data, not code
        "python main.py --evaluate $PAI_USER_ARGS",
        "echo eval $PAI_HPS_X",  # eval as an argument, not a command
        "eval 'set -e'; python main.py $PAI_USER_ARGS",  # eval without a contract variable
    ],
)
def test_safe_forms_around_eval_and_sh_c_pass(tmp_path: Path, command: str) -> None:
    from trainstack.contract.shell import problems

    assert problems(command) == []

"""Parameter values are data: run the real `sh` and check the program's argv."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainstack.contract import Topology, launch_command, replica_env, rewrite
from trainstack.spec.model import FrozenMap

NASTY = "a b; touch x $(id) `id` * \"q\" 'q'"


def _run(run, tmp: Path) -> list[str]:
    root = tmp / "ml"
    (root / "usercode").mkdir(parents=True, exist_ok=True)
    env = replica_env(run, "worker", 0, topology=Topology.local(run, {}), root=root)
    argv = launch_command(run, "worker", install_requirements=False)
    proc = subprocess.run(
        argv,
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
    return json.loads(proc.stdout)


def test_nasty_value_is_one_argument_everywhere(load, tmp_path):
    run = load("quoting/run.yaml")
    assert run.parameters["x"] == NASTY
    argv = _run(run, tmp_path)
    train = str(tmp_path / "ml/input/data/train") + "/"
    assert argv == [
        "--x",
        NASTY,
        "--y",
        "*",
        "--n",
        "3",  # $PAI_USER_ARGS
        "--x",
        NASTY,
        "--y",
        "*",
        "--train",
        train,
    ]
    assert not (tmp_path / "x").exists() and not (tmp_path / "ml/usercode/x").exists()


def test_pai_user_args_env_splits_back(load):
    run = load("quoting/run.yaml")
    env = replica_env(run, "worker", 0, topology=Topology.local(run, {}))
    assert shlex.split(env["PAI_USER_ARGS"]) == ["--x", NASTY, "--y", "*", "--n", "3"]


_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(x=_TEXT, y=_TEXT)
def test_any_value_round_trips(load, tmp_path, x, y):
    run = load("quoting/run.yaml")
    run = dataclasses.replace(run, parameters=FrozenMap({"x": x, "y": y, "n": 3}))
    argv = _run(run, tmp_path)
    assert argv[:6] == ["--x", x, "--y", y, "--n", "3"]
    assert argv[6:10] == ["--x", x, "--y", y]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("p $PAI_USER_ARGS", 'p "$@"'),
        ("p ${PAI_USER_ARGS}", 'p "$@"'),
        ('p "$PAI_USER_ARGS"', 'p "$PAI_USER_ARGS"'),  # quoted: the user wants one string
        ("p '$PAI_HPS_X'", "p '$PAI_HPS_X'"),
        ("p $PAI_HPS_X$HOME", 'p "${PAI_HPS_X}"$HOME'),
        ("p ${PAI_HPS_X:-d}", 'p "${PAI_HPS_X:-d}"'),  # a default: quoted too
        ("p $(echo $PAI_HPS_X)", 'p $(echo "${PAI_HPS_X}")'),
        ('p "$(echo $PAI_HPS_X)"', 'p "$(echo "${PAI_HPS_X}")"'),
        ("p $(( $PAI_HPS_N * 2 )) $PAI_HPS_N", 'p $(( $PAI_HPS_N * 2 )) "${PAI_HPS_N}"'),
        ("p \\$PAI_HPS_X # $PAI_HPS_X", "p \\$PAI_HPS_X # $PAI_HPS_X"),
        ("p $MODEL $MODEL_BASE $METRICS $HOME", 'p "${MODEL}" "${MODEL_BASE}" "${METRICS}" $HOME'),
    ],
)
def test_rewrite(command, expected):
    assert rewrite(command) == expected


def test_rewritten_commands_keep_working(load, tmp_path):
    # Arithmetic, subshells and quoting in the user's command still mean what they meant.
    comp = load("quoting/run.yaml").component
    cmd = (
        "python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "
        '$(( $PAI_HPS_N * 2 )) "$(echo $PAI_HPS_X)" "$PAI_USER_ARGS"'
    )
    run = dataclasses.replace(
        load("quoting/run.yaml"),
        component=dataclasses.replace(comp, command=cmd),
        parameters=FrozenMap({"x": "a  b", "y": "*", "n": 4}),
    )
    assert _run(run, tmp_path) == ["8", "a  b", "--x 'a  b' --y '*' --n 4"]

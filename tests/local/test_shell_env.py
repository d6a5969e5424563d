"""A local replica gets what a pod gets, plus only the shell variables the user names.

A pod's process never sees the environment of the shell that deployed it. Local replicas used to
inherit all of it: an exported `WORKER_ADDRS` let Kubeflow's lightgbm-dist example run locally
where the cluster fails it with a `KeyError`. Now only the variables that say where this
machine's programs, libraries and locales are (trainstack.local.hostenv: this machine stands in
for the image) reach a replica, and whatever `--pass-env NAME` names; `trainstack env` shows both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.errors import UserError
from trainstack.local.hostenv import machine_env, passed_env


def _environ(tmp_path: Path, cli: Cli, name: str, *options: str) -> dict[str, str]:
    out = tmp_path / name
    spec = write_run(
        tmp_path,
        "probe",
        name,
        parameters={"mode": "environ"},
        outputs={"result": f"file://{out}/", "state": f"file://{tmp_path / 'state'}/"},
    )
    done = cli("run", spec, "--local", *options)
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads((out / "environ-0.json").read_text()))


@pytest.mark.slow
def test_the_shells_variables_stay_in_the_shell(tmp_path: Path, cli: Cli) -> None:
    cli.env["WORKER_ADDRS"] = "10.0.0.1:12400,10.0.0.2:12400"
    cli.env["OMP_NUM_THREADS"] = "3"
    cli.env["LC_ALL"] = "C.UTF-8"
    seen = _environ(tmp_path, cli, "leak")
    assert "WORKER_ADDRS" not in seen
    assert "OMP_NUM_THREADS" not in seen  # set it in spec.env: that is what the pod gets
    # this machine's locale and paths stand in for the image's
    assert seen["LC_ALL"] == "C.UTF-8"
    assert seen["PATH"] and seen["HOME"] == cli.env["HOME"]
    # what the runtime sets: the pod's hostname (a custom run's Indexed Job pod)
    assert seen["HOSTNAME"] == "leak-0"


@pytest.mark.slow
def test_pass_env_names_what_a_replica_also_gets(tmp_path: Path, cli: Cli) -> None:
    cli.env["WORKER_ADDRS"] = "10.0.0.1:12400"
    seen = _environ(tmp_path, cli, "passed", "--pass-env", "WORKER_ADDRS")
    assert seen["WORKER_ADDRS"] == "10.0.0.1:12400"


def test_pass_env_of_an_unset_or_contract_variable_is_one_clear_error(
    tmp_path: Path, cli: Cli
) -> None:
    spec = write_run(tmp_path, "probe", "bad-pass", parameters={"mode": "quick"})
    cli.env.pop("NOT_SET_ANYWHERE", None)
    done = cli("run", spec, "--local", "--pass-env", "NOT_SET_ANYWHERE")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--pass-env NOT_SET_ANYWHERE: not set in this shell" in done.stderr
    cli.env["MASTER_PORT"] = "1234"
    done = cli("run", spec, "--local", "--pass-env", "MASTER_PORT")
    assert done.returncode == 2
    assert "--pass-env MASTER_PORT: set by the contract, the operator" in done.stderr
    assert "Traceback" not in done.stderr


def test_env_shows_the_hostname_and_what_pass_env_would_add(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(tmp_path, "probe", "shown", parameters={"mode": "quick"})
    cli.env["WORKER_ADDRS"] = "10.0.0.9:1"
    done = cli("env", spec, "--role", "worker", "--pass-env", "WORKER_ADDRS")
    assert done.returncode == 0, done.stderr
    assert "HOSTNAME=shown-0  # set by the container runtime" in done.stdout
    assert "WORKER_ADDRS=10.0.0.9:1  # from your shell: local runs with --pass-env" in done.stdout
    plain = cli("env", spec, "--role", "worker", "--format", "json")
    doc = json.loads(plain.stdout)
    assert doc["runtime"] == {"HOSTNAME": "shown-0"} and doc["passedLocally"] == {}


def test_machine_env_keeps_paths_and_locales_only() -> None:
    got = machine_env(
        {"PATH": "/bin", "LC_CTYPE": "C", "PAI_USER_ARGS": "x", "RANK": "3", "FOO": "1"}
    )
    assert got == {"PATH": "/bin", "LC_CTYPE": "C"}
    with pytest.raises(UserError):
        passed_env(["HOSTNAME"], {"HOSTNAME": "mine"})

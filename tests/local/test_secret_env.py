"""spec.secretEnv in local runs: each NAME's value comes from the runner's own environment,
reaches every replica, and is written nowhere by trainstack (registry, run directory, output)."""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.errors import UserError
from trainstack.local.jobplan import plan_job, secret_env_values
from trainstack.local.sandbox import Layout
from trainstack.registry import Registry, RunStatus
from trainstack.spec import load_run


def _spec(tmp_path: Path, value_sha: str, out: Path) -> Path:
    return write_run(
        tmp_path,
        "secretcheck",
        "secret-env",
        parameters={"sha256": value_sha},
        outputs={"result": f"file://{out}/"},
        resources={"worker": {"replicas": 2}},
        secretEnv={"HF_TOKEN": "hf-token/token"},
    )


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.slow
def test_every_replica_gets_the_value_and_trainstack_writes_it_nowhere(
    tmp_path: Path, cli: Cli
) -> None:
    value = "hf_" + secrets.token_hex(16)
    out = tmp_path / "result"
    spec = _spec(tmp_path, hashlib.sha256(value.encode()).hexdigest(), out)
    cli.env["HF_TOKEN"] = value
    done = cli("run", spec, "--local")
    assert done.returncode == 0, done.stdout + done.stderr
    assert {p.name: p.read_text() for p in out.iterdir()} == {"0.txt": "match", "1.txt": "match"}
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
    assert record.status is RunStatus.SUCCEEDED
    assert record.run_dir is not None and record.run_dir.is_relative_to(cli.home)
    # The registry (db, WAL), the run directory (config files, logs, usage) and what the runner
    # printed: the value is in none of them. training_job.json names the Secret instead.
    needle = value.encode()
    assert _files_containing(cli.home, needle) == []
    assert _files_containing(out, needle) == []
    assert value not in done.stdout + done.stderr
    job = (record.run_dir / "input" / "config" / "training_job.json").read_text()
    assert '"HF_TOKEN": {\n      "secret": "hf-token",\n      "key": "token"\n    }' in job


@pytest.mark.slow
def test_the_check_notices_a_wrong_value(tmp_path: Path, cli: Cli) -> None:
    # The probe really compares: the same run with another value fails.
    out = tmp_path / "result"
    spec = _spec(tmp_path, hashlib.sha256(b"the expected value").hexdigest(), out)
    cli.env["HF_TOKEN"] = "another value"
    done = cli("run", spec, "--local")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (out / "0.txt").read_text() == "differs"


def test_a_missing_variable_is_one_clear_error_before_anything_starts(
    tmp_path: Path, cli: Cli
) -> None:
    spec = _spec(tmp_path, "0" * 64, tmp_path / "result")
    cli.env.pop("HF_TOKEN", None)
    done = cli("run", spec, "--local")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "secretEnv HF_TOKEN: set HF_TOKEN in your environment for local runs" in done.stderr
    assert "Traceback" not in done.stderr
    # Nothing recorded, no run directory.
    assert not (cli.home / "runs").exists() or not any((cli.home / "runs").iterdir())
    if (cli.home / "registry.db").exists():
        with Registry.open(cli.home) as reg:
            assert reg.list() == []


def test_secret_env_values_names_every_missing_variable(tmp_path: Path) -> None:
    spec = write_run(
        tmp_path,
        "secretcheck",
        "two",
        parameters={"sha256": "0" * 64},
        secretEnv={"WANDB_API_KEY": "wandb/api-key", "HF_TOKEN": "hf/token"},
    )
    run = load_run(spec)
    with pytest.raises(UserError) as err:
        secret_env_values(run, {"PATH": "/bin"})
    assert err.value.message == (
        "secretEnv HF_TOKEN, WANDB_API_KEY: set HF_TOKEN, WANDB_API_KEY "
        "in your environment for local runs"
    )
    assert err.value.hint is not None and "hf/token" in err.value.hint
    # An empty value is a value (a Secret's key may be empty too).
    assert secret_env_values(run, {"HF_TOKEN": "", "WANDB_API_KEY": "k"}) == {
        "HF_TOKEN": "",
        "WANDB_API_KEY": "k",
    }


def test_plan_sets_the_values_in_every_launch_and_in_no_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_run(
        tmp_path,
        "secretcheck",
        "plan",
        parameters={"sha256": "0" * 64},
        resources={"worker": {"replicas": 2}},
        secretEnv={"HF_TOKEN": "hf/token"},
    )
    run = load_run(spec)
    monkeypatch.delenv("HF_TOKEN", raising=False)  # the checked values are what counts
    value = secrets.token_hex(16)
    plan = plan_job(
        run,
        Layout(tmp_path / "run"),
        run_id="r1",
        venv=None,
        grace_seconds=1,
        available_gpus=(),
        secret_env={"HF_TOKEN": value},
    )
    assert [launch.env["HF_TOKEN"] for launch in plan.launches] == [value, value]
    assert all(value not in content for content in plan.config.values())
    with pytest.raises(UserError, match="set HF_TOKEN in your environment"):
        plan_job(
            run,
            Layout(tmp_path / "run"),
            run_id="r1",
            venv=None,
            grace_seconds=1,
            available_gpus=(),
        )

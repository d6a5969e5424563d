"""One secret-name policy: validation, diagnostics and training_job.json
agree on which env-var names hold a secret; a YAML error hint quotes a line only from a spec."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.spec.clirun import trainstack
from trainstack.contract import Topology, config_files
from trainstack.secretnames import looks_secret
from trainstack.spec import load_run
from trainstack.spec.model import FrozenMap

RUN = Path(__file__).resolve().parents[1] / "contract" / "specs" / "kinds" / "pytorch.run.yaml"

SECRET = [
    "MYSQL_PWD",
    "DB_PASS",
    "PULUMI_CONFIG_PASSPHRASE",
    "OPENAI_APIKEY",
    "SSH_PRIVATEKEY",
    "HF_TOKEN",
    "GITHUB_TOKEN",
    "token",
    "HF_TOKEN_2",
    "WANDB_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "db_password",
    "MYSQL_PASSWD",
    "SSH_PRIVATE_KEY",
    "client_secret",
    "dbPassword",
    "authToken",
    "BASIC_AUTH",
    "registry_auth",
    "AWS_CREDENTIALS",
    "DBPASSWORD",
    "OPENAI_API_KEY",
    "PGPASSWORD",
    "API_KEY",
    "JWT_SIGNING_KEY",
]
NOT_SECRET = [
    "TOKENIZERS_PARALLELISM",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "MAX_TOKENS",
    "NCCL_DEBUG",
    "WANDB_PROJECT",
    "KEY",
    "DB_PASSWORD_FILE",
    "TOKEN_PATH",
    "SSL_CERT_DIR",
    "PWD",
    "OLDPWD",
    "BYPASS_PROXY",
    "AUTH_MODE",
    "COMPASS_URL",
    "PASSES",
    "HOSTNAME",
    "PATH",
    "KEYBOARD_LAYOUT",
]


@pytest.mark.parametrize(
    ("name", "secret"), [(n, True) for n in SECRET] + [(n, False) for n in NOT_SECRET]
)
def test_the_policy(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


@pytest.mark.parametrize(
    ("name", "secret"), [(n, True) for n in SECRET] + [(n, False) for n in NOT_SECRET]
)
def test_training_job_json_follows_the_same_policy(name: str, secret: bool) -> None:
    # A model built without the loader's rules: training_job.json withholds by the same names.
    run = dataclasses.replace(load_run(RUN), env=FrozenMap({name: "value-1234"}))
    text = config_files(run, Topology.cluster(run, "ns"))["training_job.json"]
    assert json.loads(text)["env"][name] == ("<withheld>" if secret else "value-1234")


@pytest.mark.parametrize(
    "name", ["MYSQL_PWD", "DB_PASS", "PULUMI_CONFIG_PASSPHRASE", "OPENAI_APIKEY", "SSH_PRIVATEKEY"]
)
def test_validate_refuses_them_as_plain_env(tmp_path: Path, name: str) -> None:
    text = RUN.read_text().replace("env: {NCCL_DEBUG: INFO}", f"env: {{{name}: plainValue9876}}")
    run = tmp_path / "kinds" / "r.run.yaml"
    run.parent.mkdir()
    run.write_text(text)
    for f in RUN.parent.glob("*.component.yaml"):
        (run.parent / f.name).write_text(f.read_text())
    result = trainstack("validate", run)
    assert result.code == 2
    assert f"env {name} looks like a secret" in result.out + result.err
    assert "plainValue9876" not in result.out + result.err


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "GOOGLE_APPLICATION_CREDENTIALS"])
def test_validate_accepts_names_that_are_not_secrets(tmp_path: Path, name: str) -> None:
    text = RUN.read_text().replace("env: {NCCL_DEBUG: INFO}", f"env: {{{name}: /x/y}}")
    run = tmp_path / "kinds" / "r.run.yaml"
    run.parent.mkdir()
    run.write_text(text)
    for f in RUN.parent.glob("*.component.yaml"):
        (run.parent / f.name).write_text(f.read_text())
    assert trainstack("validate", run).code == 0


def test_a_yaml_error_in_a_non_spec_file_is_not_quoted(tmp_path: Path) -> None:
    creds = tmp_path / "credentials"
    creds.write_text(
        "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = wJalrXUtnFEMIK7MDENG\n"
    )
    run = tmp_path / "r.yaml"
    run.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: r}\n"
        "spec:\n  component: ./credentials\n"
    )
    result = trainstack("validate", run)
    both = result.out + result.err
    assert result.code == 2 and "credentials:2:1: YAML syntax error" in both
    assert "AKIAEXAMPLE" not in both and "wJalr" not in both


def test_a_yaml_error_in_a_spec_still_quotes_its_line(tmp_path: Path) -> None:
    run = tmp_path / "r.yaml"
    run.write_text("apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: r\nspec: [oops\n")
    result = trainstack("validate", run)
    assert result.code == 2 and "hint: line " in result.out + result.err

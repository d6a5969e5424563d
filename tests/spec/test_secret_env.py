"""spec.secretEnv: Secret references in the schema, model and rules; a plain env entry that
looks secret is refused; no diagnostic ever shows a value that may be a credential."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.spec.clirun import trainstack
from tests.spec.specfiles import INVALID, VALID, load
from trainstack.spec import fastcheck
from trainstack.spec.json_schema import json_schema
from trainstack.spec.model import Run, SecretRef
from trainstack.spec.structure import build_validator
from trainstack.spec.values import looks_secret


def test_the_valid_fixture_loads_to_secret_refs_sorted_by_name() -> None:
    run = load(VALID / "runs" / "torch-secrets.yaml")
    assert isinstance(run, Run)
    assert list(run.secret_env.items()) == [
        ("HF_TOKEN", SecretRef("hf-token.team-vision", "token")),
        ("WANDB_API_KEY", SecretRef("wandb", "api-key")),
        ("registry_auth", SecretRef("pull-creds", ".dockerconfigjson")),
    ]
    assert str(run.secret_env["HF_TOKEN"]) == "hf-token.team-vision/token"
    assert run.env == {"TOKENIZERS_PARALLELISM": "false", "WANDB_PROJECT": "resnet"}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("GITHUB_TOKEN", True),
        ("token", True),
        ("HF_TOKEN_2", True),
        ("WANDB_API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("AWS_ACCESS_KEY_ID", True),
        ("db_password", True),
        ("MYSQL_PASSWD", True),
        ("SSH_PRIVATE_KEY", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", False),
        ("DB_PASSWORD_FILE", False),
        ("TOKEN_PATH", False),
        ("client_secret", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("MAX_TOKENS", False),
        ("NCCL_DEBUG", False),
        ("WANDB_PROJECT", False),
        ("KEY", False),
    ],
)
def test_looks_secret(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_diagnostic_shows_a_value(fmt: str) -> None:
    path = INVALID / "run-secret-env.yaml"
    result = trainstack("validate", path, "--format", fmt)
    assert result.code == 2
    both = result.out + result.err
    assert (
        "env HF_TOKEN looks like a secret; reference a Kubernetes Secret with "
        "spec.secretEnv: {HF_TOKEN: secret-name/key}" in both
    )
    assert "spec.secretEnv.OPENAI_KEY" in both
    for n in range(1, 6):
        assert f"plainTextValue000{n}" not in both
    assert "plainTextValue" in path.read_text()  # the fixture does hold them


def _run_doc(ref: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Run",
        "metadata": {"name": "r"},
        "spec": {"component": "c", "secretEnv": {"X": ref}},
    }


CERBERUS = build_validator("Run", trusted=False)
JSON_SCHEMA = jsonschema.Draft202012Validator(json_schema("Run"))


@pytest.mark.parametrize(
    ("ref", "ok"),
    [
        ("a/b", True),
        ("hf-token.team/api_key-2", True),
        ("a/.key", True),
        ("a/a..b", True),
        ("a" * 253 + "/k", True),
        ("a" * 254 + "/k", False),
        ("a/" + "k" * 253, True),
        ("a/" + "k" * 254, False),
        ("a/.", False),
        ("a/..", False),
        ("a/..x", False),
        ("a/", False),
        ("/k", False),
        ("A/k", False),
        ("-a/k", False),
        ("a-/k", False),
        ("a..b/k", False),
        ("a./k", False),
        ("a/k/x", False),
        ("a/k y", False),
        ("hf_abcdef123", False),
        ("", False),
        (["a/b"], False),
        (1, False),
    ],
)
def test_secret_refs_agree_in_fastcheck_cerberus_and_json_schema(ref: Any, ok: bool) -> None:
    doc = _run_doc(ref)
    assert fastcheck.valid(doc, "Run") is ok
    assert CERBERUS.validate(doc, normalize=False) is ok, CERBERUS.errors
    assert JSON_SCHEMA.is_valid(doc) is ok


# names that don't look secret, values that are credentials.
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
RSA = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"
CREDENTIAL_VALUES = [
    ("X_DATABASE_URL", "postgres://u:Hunter2pw@db.example.com:5432/app", "a password in a URL"),
    ("BROKER", "amqp://guest:s3cr3t@mq:5672/", "a password in a URL"),
    ("DEPLOY_ID", PEM, "a PEM private key"),
    (
        "CERT",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
        "a PEM private key",
    ),
    ("CERT2", "-----BEGIN PRIVATE KEY-----\nMIIE", "a PEM private key"),
]
NOT_CREDENTIALS = [
    ("X_DATABASE_URL", "postgres://u@db.example.com/app"),  # no password
    ("X_DATABASE_URL", "postgres://db.example.com:5432/app"),  # a port, not userinfo
    ("X_DATABASE_URL", "postgres://u:$(DB_PASSWORD)@db/app"),  # the kubelet fills it in
    ("CA", "-----BEGIN CERTIFICATE-----\nMIIE\n-----END CERTIFICATE-----"),  # public
    ("NOTE", "mail me: a:b@c"),  # no URL
]


def _run_with_env(tmp_path: Any, name: str, value: str) -> Any:
    import yaml

    probe = VALID.parents[1] / "local/fixtures/components/probe/component.yaml"
    doc = {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Run",
        "metadata": {"name": "r"},
        "spec": {"component": str(probe), "parameters": {"mode": "quick"}, "env": {name: value}},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(("name", "value", "what"), CREDENTIAL_VALUES)
def test_a_credential_shaped_env_value_is_refused_unshown(
    tmp_path: Any, name: str, value: str, what: str
) -> None:
    from trainstack.spec.check import validate

    diags = [d for d in validate([_run_with_env(tmp_path, name, value)]).diagnostics]
    assert [(d.path, d.code) for d in diags] == [(f"spec.env.{name}", "secret-env")], diags
    assert what in diags[0].message and "secretEnv" in diags[0].message
    shown = diags[0].message + (diags[0].hint or "")
    assert "Hunter2pw" not in shown and "s3cr3t" not in shown and "MIIE" not in shown
    assert "b3BlbnNzaC1r" not in shown


@pytest.mark.parametrize(("name", "value"), NOT_CREDENTIALS)
def test_values_that_only_resemble_credentials_pass(tmp_path: Any, name: str, value: str) -> None:
    from trainstack.spec.check import validate

    assert validate([_run_with_env(tmp_path, name, value)]).diagnostics == []

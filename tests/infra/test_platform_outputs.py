"""The platform's outputs are read once, into a typed frozen PlatformOutputs:
mode and ossAuth as enums, nothing past `PlatformOutputs.read` looks a key up in the raw mapping."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from trainstack.errors import ConfigError
from trainstack.infra.run import options
from trainstack.infra.run.options import OssAuthType, PlatformMode, PlatformOutputs

PACKAGE = Path(options.__file__).resolve().parents[2]
RAW_LOOKUP = re.compile(
    r"\.get\((names\.OUT_(OSS_AUTH|OSS_ENDPOINT|NAMESPACES|TEAM_MAX_PRIORITY|PULL_SECRET|"
    r"ARTIFACT_STORE|JOBS_ROLE)\b|[\"'](mode|region)[\"']\))"
)


def test_outputs_are_read_into_types() -> None:
    read = PlatformOutputs.read(
        {
            "mode": "ack",
            "region": "cn-beijing",
            "ossEndpoint": "",
            "ossAuth": {"type": "rrsa", "roleName": "jobs"},
            "namespaces": {"vision": "team-vision"},
            "teamMaxPriority": {"vision": "4"},
            "pullSecretName": "pull",
            "artifactStore": "oss://art/",
        },
        "ack-dev",
    )
    assert read.mode is PlatformMode.ACK and read.cloud
    assert read.oss_auth.type is OssAuthType.RRSA and read.oss_auth.role_name == "jobs"
    assert read.oss_endpoint is None  # empty is absent
    assert dict(read.team_max_priority) == {"vision": 4}
    assert dict(read.namespaces) == {"vision": "team-vision"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.region = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        read.namespaces["nlp"] = "nlp"  # type: ignore[index]
    assert PlatformOutputs.read(read, "ack-dev") is read  # read once, passed on as is


def test_older_platforms_and_unreadable_auth() -> None:
    old = PlatformOutputs.read({"mode": "ack", "jobsRole": "jobs"}, "ack-dev")
    assert (old.oss_auth.type, old.oss_auth.role_name) == (OssAuthType.RRSA, "jobs")
    local = PlatformOutputs.read({}, "local")
    assert local.mode is PlatformMode.KUBECONFIG and local.oss_auth.type is OssAuthType.NONE
    with pytest.raises(ConfigError, match="ossAuth output is"):
        PlatformOutputs.read({"ossAuth": {"type": "secret"}}, "local")  # no secretName


def test_no_module_reads_these_outputs_from_the_raw_mapping() -> None:
    found = [
        f"{p.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.resolve() != Path(options.__file__).resolve()
        and "infra/platform" not in p.as_posix()  # the program that exports them
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        # (a resource's own `region` property is not the platform's output)
        if RAW_LOOKUP.search(line) and "props.get(" not in line
    ]
    assert not found, "read them through PlatformOutputs:\n" + "\n".join(found)

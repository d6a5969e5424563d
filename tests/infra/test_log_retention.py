"""Retention of shipped logs: on ACK the platform puts a lifecycle rule on each
team's expiring-logs prefix of the artifacts bucket (`trainstack:logRetentionDays`, default 30,
as ModelArts keeps history logs), a prefix the renderer ships non-kept logs under
(trainstack.infra.logplace). Before this nothing ever removed a log, and the place logs were
shipped to (`<team>/<run>/logs/`) could not be selected by a rule at all: OSS lifecycle rules
match a literal key prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.infra.test_platform_findings import named, plan, ready_project
from trainstack.infra.logplace import expiring_prefix, log_place

# The actions OSS refuses to see twice under overlapping prefixes (error 0014-00000084).
_ACTIONS = ("expirations", "noncurrentVersionExpirations", "abortMultipartUploads")


def _artifacts_rules(tmp_path: Path, request: pytest.FixtureRequest, **changes: Any) -> Any:
    root = ready_project(
        tmp_path / "p",
        request.getfixturevalue("kubedl_root"),
        request.getfixturevalue("ready"),
        "ack-dev",
        **changes,
    )
    request.getfixturevalue("monkeypatch").chdir(root)
    return named(plan("--env", "ack-dev"), "bucket-artifacts")["inputs"]["lifecycleRules"]


def test_each_teams_expiring_logs_go_after_the_retention_days(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    rules = {r["id"]: r for r in _artifacts_rules(tmp_path, request)}
    assert rules["trainstack-logs-vision"] == {
        "id": "trainstack-logs-vision",
        "enabled": True,
        "prefix": "vision/_logs/",
        "expirations": [{"days": 30}],
    }
    assert rules["trainstack-logs-nlp"]["prefix"] == "nlp/_logs/"
    # the rule's prefix is where a run of that team ships logs it does not keep
    shipped = log_place("oss://acme-trainstack-dev-artifacts/", "vision", "r1", keep=False)
    assert shipped.uri == "oss://acme-trainstack-dev-artifacts/vision/_logs/r1/"
    assert shipped.uri.removeprefix("oss://acme-trainstack-dev-artifacts/").startswith(
        expiring_prefix("vision")
    )
    kept = log_place("oss://acme-trainstack-dev-artifacts/", "vision", "r1", keep=True)
    assert not any(
        kept.uri.removeprefix("oss://acme-trainstack-dev-artifacts/").startswith(r["prefix"])
        for r in rules.values()
        if "expirations" in r
    )


def test_no_two_rules_overlap_in_an_action_oss_refuses_to_see_twice(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    rules = _artifacts_rules(tmp_path, request)
    prefixes = [r["prefix"] for r in rules]
    assert len(set(prefixes)) == len(prefixes)  # OSS error 0014-00000085: one prefix, one rule
    for i, a in enumerate(rules):
        for b in rules[i + 1 :]:
            overlap = a["prefix"].startswith(b["prefix"]) or b["prefix"].startswith(a["prefix"])
            shared = [k for k in _ACTIONS if a.get(k) and b.get(k)]
            assert not (overlap and shared), (a["id"], b["id"], shared)


def test_log_retention_days_is_configurable_and_checked(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    rules = _artifacts_rules(tmp_path, request, **{"trainstack:logRetentionDays": 7})
    assert {r["expirations"][0]["days"] for r in rules if "expirations" in r} == {7}
    ready_project(
        tmp_path / "bad",
        request.getfixturevalue("kubedl_root"),
        request.getfixturevalue("ready"),
        "ack-dev",
        **{"trainstack:logRetentionDays": 0},
    )
    request.getfixturevalue("monkeypatch").chdir(tmp_path / "bad")
    result = Cli().invoke("plan", "--env", "ack-dev")
    assert result.code != 0
    assert "trainstack:logRetentionDays" in result.err and "≥ 1" in result.err
    assert "Traceback" not in result.err

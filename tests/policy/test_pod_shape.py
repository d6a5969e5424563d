"""pod-shape: `policy check` evaluates the platform's pod admission policy on what a run renders,
so a platform project's template override that adds what the API server would refuse (a sidecar
with a hostPath, a toleration of the system pool) is refused before `pulumi up`, with the
policy's own message. Without it the plan passed and the job's pods were refused one by one.
"""

from __future__ import annotations

from pathlib import Path

from tests.clirunner import Cli
from tests.render.test_template_overrides import _packaged, _replace, full_project, team_run


def test_an_override_adding_the_system_pools_toleration_is_refused(
    tmp_path: Path, cli: Cli
) -> None:
    pod = _replace(
        _packaged("_pod.yaml.j2"),
        "  tolerations: {{ pod.tolerations | tojson }}",
        '  tolerations: [{"key": "CriticalAddonsOnly", "operator": "Exists"}]',
    )
    where = full_project(tmp_path / "p", **{"_pod.yaml.j2": pod})
    done = cli(
        "policy", "check", str(team_run(tmp_path)), "--env", "local", "--project", str(where)
    )
    assert done.code == 1, (done.out, done.err)
    text = done.out + done.err
    assert "pod-shape" in text
    assert "team namespace vision: spec.tolerations may hold only what trainstack renders" in text


def test_an_override_adding_a_host_path_sidecar_volume_is_refused_on_a_shared_cluster(
    tmp_path: Path, cli: Cli
) -> None:
    pod = _replace(
        _packaged("_pod.yaml.j2"),
        "  volumes: {{ pod.volumes | tojson }}",
        '  volumes: {{ (pod.volumes + [{"name": "nas", "nfs": {"server": "nas", "path": "/"}}])'
        " | tojson }}",
    )
    where = full_project(tmp_path / "p", **{"_pod.yaml.j2": pod})
    done = cli(
        "policy", "check", str(team_run(tmp_path)), "--env", "local", "--project", str(where)
    )
    assert done.code == 1, (done.out, done.err)
    assert "spec.volumes may use only" in done.out + done.err


def test_the_packaged_templates_pass(tmp_path: Path, cli: Cli) -> None:
    where = full_project(tmp_path / "p")
    done = cli(
        "policy", "check", str(team_run(tmp_path)), "--env", "local", "--project", str(where)
    )
    assert done.code == 0, (done.out, done.err)

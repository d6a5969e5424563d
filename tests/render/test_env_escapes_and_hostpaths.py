"""git-sync's env values are escaped for the kubelet's `$(NAME)` expansion
(ours for custom jobs, and the annotation KubeDL copies into env values), and `--local-cluster`
refuses a file:// binding that would mount the node's root or a system folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainstack.render import RenderError, RenderOptions, render_run
from trainstack.spec import load_run

URL = "https://example.com/$(HOME)/r$x.git"
BRANCH = "feat/$(PATH)"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _run(tmp: Path, job_type: str, code: str, **run_spec: str) -> object:
    (tmp / "component.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Component\nmetadata: {name: gs, version: 1.0.0}\n"
        f"spec:\n  jobType: {job_type}\n  image: registry.example.com/x:1\n"
        + (f"  code: {code}\n" if code else "")
        + "  command: python main.py\n  inputs: [{name: data}]\n  outputs: [{name: out}]\n"
    )
    lines = "".join(f"  {k}: {v}\n" for k, v in run_spec.items())
    (tmp / "run.yaml").write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\n"
        "metadata: {name: gs}\nspec:\n  component: ./component.yaml\n" + lines
    )
    return load_run(tmp / "run.yaml")


def _unescape(value: str) -> str:
    """What the kubelet makes of an env value: `$$` → `$`, `$(NAME)` → NAME's value."""
    out, i = [], 0
    while i < len(value):
        if value.startswith("$$", i):
            out.append("$")
            i += 2
        elif value.startswith("$(", i) and ")" in value[i:]:
            out.append("<expanded>")
            i = value.index(")", i) + 1
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def test_custom_git_sync_env_reaches_git_sync_verbatim(tmp_path: Path) -> None:
    run = _run(tmp_path, "custom", json.dumps({"git": URL, "branch": BRANCH}))
    job = render_run(run, options=RenderOptions())[-1]  # type: ignore[arg-type]
    [init] = [
        c for c in job["spec"]["template"]["spec"]["initContainers"] if c["name"] == "git-sync-code"
    ]
    env = {e["name"]: _unescape(e["value"]) for e in init["env"]}
    assert env["GIT_SYNC_REPO"] == URL and env["GIT_SYNC_BRANCH"] == BRANCH


@pytest.mark.parametrize("job_type", ["pytorch", "tensorflow", "mpi"])
def test_kubedl_annotation_values_are_escaped_too(tmp_path: Path, job_type: str) -> None:
    run = _run(tmp_path, job_type, json.dumps({"git": URL, "branch": BRANCH}))
    job = render_run(run, options=RenderOptions())[-1]  # type: ignore[arg-type]
    config = json.loads(job["metadata"]["annotations"]["kubedl.io/git-sync-config"])
    # KubeDL puts these into the git-sync container's env values unchanged.
    assert _unescape(config["source"]) == URL and _unescape(config["branch"]) == BRANCH


def test_a_plain_commit_is_unchanged(tmp_path: Path) -> None:
    run = _run(
        tmp_path, "custom", json.dumps({"git": "https://example.com/r.git", "commit": COMMIT})
    )
    job = render_run(run, options=RenderOptions())[-1]  # type: ignore[arg-type]
    env = {
        e["name"]: e["value"]
        for c in job["spec"]["template"]["spec"]["initContainers"]
        for e in c.get("env", [])
    }
    assert env["GIT_SYNC_REV"] == COMMIT and env["GIT_SYNC_REPO"] == "https://example.com/r.git"


@pytest.mark.parametrize(
    ("field", "binding"),
    [
        ("outputs", "{out: 'file:///'}"),
        ("outputs", "{out: 'file:///etc/'}"),
        ("outputs", "{out: 'file:///var/lib/kubelet/pods/'}"),
        ("outputs", "{out: 'file:///root/'}"),
        ("outputs", "{out: 'file://///'}"),
        ("outputs", "{out: 'file:////etc/'}"),
        ("outputs", "{out: 'file:///./etc/cron.d/'}"),
        ("inputs", "{data: 'file:///'}"),
        ("inputs", "{data: 'file:///proc/1/'}"),
        ("inputs", "{data: 'file:///etc/shadow.txt'}"),  # a file: its folder /etc is mounted
        ("inputs", "{data: 'file:///train.csv'}"),  # a file at the root: / is mounted
        ("inputs", "{data: 'file:///run/containerd/'}"),
    ],
)
def test_local_cluster_refuses_dangerous_host_paths(
    tmp_path: Path, field: str, binding: str
) -> None:
    run = _run(tmp_path, "custom", "", **{field: binding})
    with pytest.raises(RenderError, match="would mount the node's"):
        render_run(run, options=RenderOptions(local_cluster=True))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "path",
    [
        "/data/ckpt",
        "/home/me/data",
        "/mnt/datasets/x",
        "/tmp/run",
        "/srv/nfs/a",
        "/var/tmp/x",
        "/etc-data",
        "/usrdata",
    ],
)
def test_ordinary_host_paths_are_fine(path: str) -> None:
    from trainstack.render.storage import dangerous_host_path

    assert dangerous_host_path(path) is None


def test_an_ordinary_output_binding_renders(tmp_path: Path) -> None:
    run = _run(tmp_path, "custom", "", outputs="{out: 'file:///data/out/'}")
    job = render_run(run, options=RenderOptions(local_cluster=True))[-1]  # type: ignore[arg-type]
    paths = [
        v["hostPath"]["path"] for v in job["spec"]["template"]["spec"]["volumes"] if "hostPath" in v
    ]
    assert paths == ["/data/out"]

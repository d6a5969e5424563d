from __future__ import annotations

import yaml

from tests.clirunner import Cli
from tests.render.conftest import SPECS


def test_render_stdout_is_a_multi_document_stream(capsys) -> None:
    done = Cli().invoke("render", str(SPECS / "mpi.run.yaml"), "--namespace", "team-a")
    assert done.code == 0, done.err
    docs = list(yaml.safe_load_all(done.out))
    assert [d["kind"] for d in docs] == [
        "ConfigMap",
        "ConfigMap",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "MPIJob",
    ]
    assert docs[-1]["metadata"]["namespace"] == "team-a"


def test_render_user_error_is_one_message(capsys) -> None:
    done = Cli().invoke("render", str(SPECS / "bindings-file.run.yaml"))
    assert done.code == 2
    err = done.err
    assert err.startswith("error: run 'bindings-file': file:///data/ds/train/ is a file://")
    assert "Traceback" not in err


def test_render_local_cluster_flag(capsys) -> None:
    done = Cli().invoke("render", str(SPECS / "bindings-file.run.yaml"), "--local-cluster")
    assert done.code == 0, done.err
    assert "hostPath" in done.out

from __future__ import annotations

import pytest
import yaml

from tests.render.conftest import SPECS
from trainstack.cli.main import main


def test_render_stdout_is_a_multi_document_stream(capsys) -> None:
    main(["render", str(SPECS / "mpi.run.yaml"), "--namespace", "team-a"])
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["ConfigMap", "ServiceAccount", "Role", "RoleBinding",
                                        "MPIJob"]
    assert docs[-1]["metadata"]["namespace"] == "team-a"


def test_render_user_error_is_one_message(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["render", str(SPECS / "bindings-file.run.yaml")])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: run 'bindings-file': file:///data/ds/train/ is a file://")
    assert "Traceback" not in err


def test_render_local_cluster_flag(capsys) -> None:
    main(["render", str(SPECS / "bindings-file.run.yaml"), "--local-cluster"])
    assert "hostPath" in capsys.readouterr().out

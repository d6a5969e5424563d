"""An install without the `cluster` extra (README's first command, `pip install -e .`) runs the
local verbs, and a verb that needs the extra says so in one error, without a traceback. Before,
every install carried Pulumi, its providers and the Kubernetes client (~0.5 GB of the 1.6 GB)."""

from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from trainstack.extras import CLUSTER_EXTRA, CLUSTER_MODULES

ROOT = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_module_list_is_the_extras_distributions() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = {
        _norm(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0])
        for d in extras["optional-dependencies"][CLUSTER_EXTRA]
    }
    providers = md.packages_distributions()
    # every distribution of the extra provides a module the list names, and every module the
    # list names is provided by one of them (or, grpc, comes with pulumi)
    by_module = {m: {_norm(d) for d in providers.get(m, [])} for m in CLUSTER_MODULES}
    for dist in listed:
        assert any(dist in dists for dists in by_module.values()), dist
    for module, dists in by_module.items():
        assert dists & (listed | {"grpcio"}), (module, dists)
    # and none of them is a plain dependency any more
    plain = {_norm(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in extras["dependencies"]}
    assert not plain & listed


# Imports of the cluster extra's modules fail in the child, as in an install without it.
BLOCK = f"""
import sys
BLOCK = {sorted(CLUSTER_MODULES)!r}
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Blocker())
from trainstack.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _without_extra(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "TRAINSTACK_HOME": str(home), "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


def test_without_the_extra_local_verbs_work_and_cluster_verbs_name_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok = _without_extra(home, "validate", "components/")
    assert ok.returncode == 0, ok.stderr
    assert _without_extra(home, "runs", "list").returncode == 0
    assert _without_extra(home, "render", "components/mnist-ddp/runs/local.yaml").returncode == 0
    for verb in (("plan", "--env", "local"), ("policy", "check", "--env", "local")):
        done = _without_extra(home, *verb)
        assert done.returncode == 3, (verb, done.stderr)
        assert done.stderr.startswith("error: this needs trainstack's cluster extra"), done.stderr
        assert "pip install 'trainstack[cluster]'" in done.stderr
        assert "Traceback" not in done.stderr

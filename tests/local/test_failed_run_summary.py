"""What a failed local run's summary says: the missing module once,
with the component's own install hint, instead of one traceback per replica; and outputs that
were never written as not committed, not as committed with 0 files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli

# the replicas print their own tracebacks: that is what the summary condenses
trainstack = Cli()

COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {name: needs-module, version: 0.1.0, description: imports what is not installed}
spec:
  jobType: pytorch
  image: registry.example.com/trainstack/python:3.11-slim
  code: ./src
  command: python main.py --model $PAI_OUTPUT_MODEL
  outputs:
    - {name: model}
"""
RUN = """\
apiVersion: trainstack.dev/v1
kind: Run
metadata: {name: needs-module-run}
spec:
  component: ../component.yaml
  outputs: {model: file://./out/model/}
  resources:
    master: {replicas: 1, cpu: 1, memory: 1Gi}
    worker: {replicas: 2, cpu: 1, memory: 1Gi}
"""
README = """\
# needs-module

Before a local run:

    pip install 'trainstack-test-no-such-module==1.*'   # the image has it already
"""


def component(tmp_path: Path) -> Path:
    root = tmp_path / "needs-module"
    (root / "src").mkdir(parents=True)
    (root / "runs").mkdir()
    (root / "component.yaml").write_text(COMPONENT)
    (root / "README.md").write_text(README)
    (root / "src" / "main.py").write_text("import trainstack_test_no_such_module.sub\n")
    (root / "runs" / "run.yaml").write_text(RUN)
    return root / "runs" / "run.yaml"


@pytest.mark.slow
def test_a_missing_module_is_named_once_with_the_components_install_hint(tmp_path: Path) -> None:
    done = trainstack("run", "--local", "--home", tmp_path / "home", component(tmp_path))
    assert done.code == 1, done.out + done.err
    missing = [line for line in done.out.splitlines() if line.startswith("  missing:")]
    assert missing == [
        "  missing:  Python module 'trainstack_test_no_such_module' (master-0, worker-0, "
        "worker-1): pip install 'trainstack-test-no-such-module==1.*'  "
        f"({tmp_path / 'needs-module' / 'README.md'}, line 5)"
    ]


@pytest.mark.slow
def test_a_failed_runs_unwritten_output_is_not_shown_as_committed(tmp_path: Path) -> None:
    done = trainstack("run", "--local", "--home", tmp_path / "home", component(tmp_path))
    assert done.code == 1
    assert "  output:   model: not committed (the run failed, nothing written)" in done.out
    assert "0 file(s)" not in done.out
    assert not (tmp_path / "needs-module" / "runs" / "out" / "model").exists()

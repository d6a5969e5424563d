"""One fit check: the policy rules ``pod-fits-node-pool``, ``job-fits-pools`` and ``team-quota``
are the only code that compares requests to node pools. A second check, with its own headroom,
instance table and checks, would disagree with them, and only the rules run where users are
(plan, policy check, deploy, the CrossGuard pack); these tests fail when a second one, or a
second table of instance shapes, reappears."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import trainstack

ROOT = Path(trainstack.__file__).parent
# An instance type as a mapping's key ("ecs.g7.2xlarge": ...): a table of shapes.
SHAPE_KEY = re.compile(r"""["']ecs\.[a-z0-9.-]+["']\s*:""")


def _sources() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted(ROOT.rglob("*.py"))}


def _imports(text: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_infra_fit_is_gone() -> None:
    assert not (ROOT / "infra" / "fit.py").exists()


def test_one_table_of_instance_shapes() -> None:
    """instancetypes.py maps instance types to vCPUs, memory and GPUs; the platform exports those
    shapes (nodePools) and nothing else reads the table."""
    tables = [name for name, text in _sources().items() if SHAPE_KEY.search(text)]
    assert tables == ["infra/platform/instancetypes.py"]
    readers = [
        name
        for name, text in _sources().items()
        if "trainstack.infra.platform.instancetypes" in _imports(text)
    ]
    assert readers == ["infra/platform/nodepools.py"]


def test_only_the_fit_rules_compare_requests_to_nodes() -> None:
    """The headroom (the share of a node a pod may not ask for) is read only by the fit rules
    (through the policy model), and only they count a pod's requests."""
    fit_rules = {"policy/rules/placement.py", "policy/rules/poolsize.py"}
    headroom = {
        name
        for name, text in _sources().items()
        if "NODE_HEADROOM" in text or "trainstack.infra.headroom" in _imports(text)
    }
    assert headroom == {"infra/headroom.py", "policy/model.py"} | fit_rules
    requests = {
        name
        for name, text in _sources().items()
        if "trainstack.policy.pods.pod_requests" in _imports(text)
    }
    assert requests == fit_rules | {"policy/rules/quota.py"}

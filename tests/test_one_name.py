"""Every name has one home: a string constant is defined in one module, and the names other
programs share with trainstack (label and annotation keys, KubeDL's keys, the GPU resource,
trainstack's environment variables) are spelled only where they are defined.

Read from the source (ast), so a copy is found whether or not anything imports it. A copy that
drifts from its home is a label the renderer writes and the platform never matches, or a
variable one side sets and the other never reads; no behavioural test sees either until a
cluster does.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

import trainstack
from trainstack.launcher import FILES as LAUNCHER_FILES

PACKAGE = Path(trainstack.__file__).parent
REPO = PACKAGE.parent

# Programs that run as files of their own, standard library only (`python3 -S`), so they cannot
# import a home and keep copies; test_standalone_copies_equal_their_homes holds them to it.
STANDALONE = frozenset(
    {*(f"trainstack/launcher/{name}" for name in LAUNCHER_FILES), "trainstack/local/podholder.py"}
)

# Values that two modules may each define, each with why they are not one name.
SHARED_WORDS = {
    # The tool's own name, which the Pulumi platform project, the CrossGuard pack and the
    # scaffold's mirror folder each take: renaming one of them must not rename the others.
    "trainstack": "three names that happen to be the tool's",
    # The KubeDL install's Pulumi config namespace and the ServiceAccount its operator runs as.
    "kubedl": "KubeDL's own name, for two unrelated things",
    # A run stack's output that says where its logs are, and the run tree's folder of them.
    "logs": "an output key and a folder",
    # The volume guard's parameter and the platform's output carry the same endpoint, but one is
    # a ConfigMap key the guard's CEL reads, the other a stack output the run program reads.
    "ossEndpoint": "a ConfigMap key and a stack output",
    # The OSS CSI driver's authType value, and the platform's own word for the same scheme.
    "rrsa": "the CSI driver's value and trainstack's",
}

# Prefix of a name -> the modules that may spell it. Anywhere else it is imported.
HOMES = {
    "trainstack.dev/": {
        "trainstack/platformnames.py",
        # the spec's own apiVersion, `trainstack.dev/v1`, which no label shares
        "trainstack/__init__.py",
    },
    "tag.trainstack.dev/": {"trainstack/platformnames.py"},
    "kubedl.io/": {"trainstack/kubedl/pods.py"},
    "nvidia.com/gpu": {"trainstack/platformnames.py"},
    "batch.kubernetes.io/": {"trainstack/kubedl/pods.py"},
    "TRAINSTACK_": {"trainstack/envnames.py", "trainstack/contractnames.py"},
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        yield rel, ast.parse(path.read_text(encoding="utf-8"), rel)


def _is_constant_name(name: str) -> bool:
    return name.lstrip("_").isupper()


def _is_enum(node: ast.ClassDef) -> bool:
    """An enum is a vocabulary of its own type: RunStatus.FAILED and TrialState.FAILED share a
    word, not a name."""
    bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
    return bool(bases & {"Enum", "StrEnum", "IntEnum", "Flag", "IntFlag"})


def _value(node: ast.expr, known: dict[str, str]) -> str | None:
    """A string constant's value: a literal, or literals and this module's constants joined by
    `+` (`PREFIX + "run"`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, known), _value(node.right, known)
        return None if left is None or right is None else left + right
    return None


def _constants(body: list[ast.stmt], known: dict[str, str]) -> Iterator[tuple[str, str, int]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            if not _is_enum(node):
                yield from (
                    (f"{node.name}.{n}", v, line) for n, v, line in _constants(node.body, {})
                )
            continue
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        text = _value(value, known)
        for target in targets:
            if isinstance(target, ast.Name) and _is_constant_name(target.id) and text is not None:
                known[target.id] = text
                yield target.id, text, node.lineno


@pytest.mark.slow  # a static check over the whole source tree
def test_no_string_constant_is_defined_in_two_modules() -> None:
    places: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for rel, tree in _modules():
        if rel in STANDALONE:
            continue
        for name, value, line in _constants(tree.body, {}):
            places[value][rel].append(f"{rel}:{line} {name}")
    twice = {
        value: [p for found in by_module.values() for p in found]
        for value, by_module in places.items()
        if len(by_module) > 1 and value not in SHARED_WORDS
    }
    assert not twice, f"{len(twice)} values defined in more than one module:\n" + "\n".join(
        f"  {value!r}: " + ", ".join(found) for value, found in sorted(twice.items())
    )


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _guarded(tree: ast.Module) -> Iterator[tuple[str, str, int]]:
    """Each string literal that spells a name of HOMES (docstrings aside): prefix, text, line."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for prefix in HOMES:
                if node.value.startswith(prefix):
                    yield prefix, node.value, node.lineno


@pytest.mark.slow  # a static check over the whole source tree
def test_shared_names_are_spelled_only_in_their_home() -> None:
    strays = [
        f"{rel}:{line} {text!r} (its home: {', '.join(sorted(HOMES[prefix]))})"
        for rel, tree in _modules()
        if rel not in STANDALONE
        for prefix, text, line in _guarded(tree)
        if rel not in HOMES[prefix]
    ]
    assert not strays, f"{len(strays)} names spelled outside their home:\n" + "\n".join(strays)


@pytest.mark.slow  # a static check over the whole source tree
def test_standalone_copies_equal_their_homes() -> None:
    """What a standalone program spells must be a name its home defines, letter for letter."""
    defined: set[str] = set()
    for rel, tree in _modules():
        if rel in set().union(*HOMES.values()):
            defined.update(value for _, value, _ in _constants(tree.body, {}))
    copies = [
        (rel, line, text)
        for rel, tree in _modules()
        if rel in STANDALONE
        for _, text, line in _guarded(tree)
    ]
    assert copies, "the standalone programs spell no shared name: is STANDALONE still right?"
    unknown = [f"{rel}:{line} {text!r}" for rel, line, text in copies if text not in defined]
    assert not unknown, "copies no home defines:\n" + "\n".join(unknown)

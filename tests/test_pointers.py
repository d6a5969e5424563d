"""Every pointer a reader can follow leads somewhere. A comment, docstring or doc that cites an
issue of a tracker outside the repository ("issue 20 item 17", "finding 3") gives a reader
nothing to open, so it says the reason instead; GitHub references (``owner/repo#123``, a
``github.com/.../issues/123`` address) are public and stay. A repository path or a dotted
``trainstack.`` name that a comment, docstring or doc cites exists, so a move or a rename that
leaves one behind fails here rather than misleading the next reader."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "trainstack"

# --- citations of the tracker -------------------------------------------------------------

# "issue 20", "Issue 19's", "issues 14 and 18", "finding 3", "wave 2". A GitHub reference is
# written `owner/repo#123` or as an address, never "issue 123", so it is not caught.
ISSUE = re.compile(r"\b(?:issues?|findings?|waves?) #?\d+\b", re.IGNORECASE)
# "item 9", "items 1 and 3", "row 2": an item of an issue, which may sit on the line after it.
ITEM = re.compile(r"\b(?:items?|rows?) \d+\b", re.IGNORECASE)


@cache
def _tracked() -> tuple[Path, ...]:
    done = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
    )
    return tuple(ROOT / name for name in done.stdout.split("\0") if name)


@cache
def _tracked_text_files() -> tuple[Path, ...]:
    files = []
    for path in _tracked():
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary (an image)
        files.append(path)
    return tuple(files)


def _citations(text: str) -> list[str]:
    hits = [m.group() for m in ISSUE.finditer(text)]
    # An item or a row counts only beside an issue's number: "item 3" of a list is fine.
    lines = text.splitlines()
    for n, line in enumerate(lines):
        near = " ".join(lines[max(0, n - 1) : n + 2])
        if ITEM.search(line) and ISSUE.search(near):
            hits += [m.group() for m in ITEM.finditer(line)]
    # The test name "test_item9_..." cites an item too.
    hits += re.findall(r"\b(?:test_)?(?:issue|item)\d+\w*", text)
    return hits


def test_the_citation_pattern_catches_what_it_must() -> None:
    assert _citations("refused (issue 20 item 17).") == ["issue 20", "item 17"]
    assert _citations("Issue 19, item 11: ``status``") == ["Issue 19", "item 11"]
    assert _citations("(issue 24\n    item 10: it was max)") == ["issue 24", "item 10"]
    assert _citations("issue 19's rows; finding 3; wave 2") == ["issue 19", "finding 3", "wave 2"]
    assert _citations("tests/render/test_item9_escapes.py") == ["test_item9_escapes"]
    assert _citations("(issue 8, rows 2, 5)") == ["issue 8", "rows 2"]


def test_the_citation_pattern_lets_public_references_through() -> None:
    assert _citations("kubernetes/kubernetes#28272 and containerd/containerd#3654") == []
    assert _citations("https://github.com/kubedl-io/kubedl/issues/123") == []
    assert _citations("the list's item 3; 2 rows; issued 5 tokens; the issue it raises") == []


@pytest.mark.slow  # a static check over the whole source tree
def test_no_tracked_file_cites_the_tracker() -> None:
    # A file's name is read as well as its text: `test_item9_escapes.py` says nothing either.
    found = [f"{p.relative_to(ROOT)}: its name" for p in _tracked() if _citations(p.name)]
    for path in _tracked_text_files():
        if path.resolve() == Path(__file__).resolve():
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for n, line in enumerate(lines, 1):
            around = "\n".join(lines[max(0, n - 2) : n + 1])
            if _citations(line) or (ITEM.search(line) and _citations(around)):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, (
        "the tracker is not in the repository: say the reason, not its number:\n" + "\n".join(found)
    )


# --- paths and dotted names ---------------------------------------------------------------

# Paths are checked under this repository's own top-level folders only: `pkg/job_controller/
# pod.go` is KubeDL's, cited as an upstream source, and is not looked for here.
TOP = ("trainstack", "tests", "docs", "benchmarks", "tools", "templates", "components",
       "infra", "platform", "policies", ".github", ".ci")  # fmt: skip
PATH = re.compile(r"(?<![\w./~$-])(?:" + "|".join(map(re.escape, TOP)) + r")/[\w.*/-]*[\w*/]")
# Inside the package a path may be written from trainstack/ (`spec/model.py`, `infra/run/`,
# `metrics/draw`): module-like segments only, so an image (`kubedl/git-sync`) is not one.
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
MODULE_PATH = re.compile(
    r"(?<![\w./~$-])(?:"
    + "|".join(map(re.escape, SUBPACKAGES))
    + r")(?:/[A-Za-z_]\w*)+(?:\.[A-Za-z_]\w*)*/?(?![\w-])"
)
DOTTED = re.compile(r"(?<![\w./-])(?:trainstack|tests)(?:\.[A-Za-z_]\w*)+(?![\w/-])")
# `trainstack.yaml` and the like are file names; `trainstack.dev/run` is a label's domain.
FILE_SUFFIXES = {"yaml", "yml", "json", "toml", "md", "txt", "py", "lock", "db", "dev", "io"}


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of what a reader reads as prose: all of a Markdown file, a Python file's
    comments and docstrings, another file's comments (`#`, `//`, `{#`). Code and data are
    left to the tests that run them: a test's spec may name a missing component on purpose."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".md":
        yield from enumerate(text.splitlines(), 1)
        return
    if path.suffix != ".py":
        for n, line in enumerate(text.splitlines(), 1):
            start = COMMENT.search(line)
            if start:
                yield n, line[start.end() :]
        return
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            for n, line in enumerate(node.value.value.splitlines(), node.lineno):
                yield n, line


# A comment's start: `# ` or `#` at the line's start, `// `, `{# `.
COMMENT = re.compile(r"(?:^\s*#|\s#|^\s*//|\s//|\{#)\s")


def _path_exists(token: str) -> bool:
    """A file or folder, a glob with a match, or a module written as a path (`spec/model`,
    `infra/run/options.render_options`: a module and one of its names)."""
    token = token.rstrip(".")
    for base in (ROOT, PACKAGE):
        if any(base.glob(token)) if "*" in token else (base / token).exists():
            return True
        if (base / f"{token}.py").is_file():
            return True
        module, _, name = token.rpartition(".")
        if module and (base / f"{module}.py").is_file():
            return name in _names_in(base / f"{module}.py")
    return False


@cache
def _names_in(module: Path) -> frozenset[str]:
    """Names bound at a module's top level (or in a class, for `Class.attr`)."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return frozenset(_bound(tree.body))


def _bound(body: list[ast.stmt]) -> Iterator[str]:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
            if isinstance(node, ast.ClassDef):
                yield from (f"{node.name}.{name}" for name in _bound(node.body))
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from ((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            yield from _bound(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                yield from _bound(handler.body)


@cache
def _package_dirs() -> dict[str, Path]:
    """Packages pyproject.toml maps outside trainstack/ (the job templates' folder)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapped = config["tool"]["setuptools"].get("package-dir", {})
    return {name: ROOT / folder for name, folder in mapped.items() if name}


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for name, folder in _package_dirs().items():
        prefix = name.split(".")
        if parts[: len(prefix)] == prefix:
            base = folder.joinpath(*parts[len(prefix) :])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _dotted_resolves(token: str) -> bool:
    """Without importing anything: the longest prefix that is a module, then the rest an
    attribute the module's source binds (import side effects stay out of this test)."""
    parts = token.split(".")
    if len(parts) == 2 and parts[1] in FILE_SUFFIXES:
        return True
    for split in range(len(parts), 0, -1):
        module = _module_file(parts[:split])
        if module is None:
            continue
        rest = parts[split:]
        if not rest or rest[0].startswith("__"):
            return True
        names = _names_in(module)
        if rest[0] not in names:
            return False
        # A class's attribute is checked one level deep; deeper is taken on trust.
        if len(rest) > 1 and any(name.startswith(rest[0] + ".") for name in names):
            return ".".join(rest[:2]) in names
        return True
    return False


def _dangling() -> list[str]:
    found = []
    for path in _tracked_text_files():
        for n, line in _prose(path):
            where = f"{path.relative_to(ROOT)}:{n}"
            paths = {m.group() for m in PATH.finditer(line)}
            paths |= {m.group() for m in MODULE_PATH.finditer(line)}
            found += [f"{where}: {p}" for p in sorted(paths) if not _path_exists(p)]
            for m in DOTTED.finditer(line):
                if not _dotted_resolves(m.group()):
                    found.append(f"{where}: {m.group()}")
    return found


def test_the_pointer_check_tells_real_from_gone() -> None:
    assert _path_exists("trainstack/spec/model.py")
    assert _path_exists("tests/render/golden/*.yaml")
    assert _path_exists("platform/kubedl/")
    assert not _path_exists("trainstack/local/logview.py")
    assert _dotted_resolves("trainstack.spec.model.Run")
    assert _dotted_resolves("trainstack.spec.loader")
    assert _dotted_resolves("trainstack.yaml")
    assert _dotted_resolves("trainstack.templates")  # pyproject.toml maps it to templates/
    assert _path_exists("infra/run/identity.py")  # written from trainstack/
    assert not _dotted_resolves("trainstack.local.logview")
    assert not _dotted_resolves("trainstack.spec.model.NoSuchThing")
    assert _dotted_resolves("tests.kubedl.expand.expand")
    assert [m.group() for m in PATH.finditer("KubeDL's pkg/job_controller/pod.go")] == []
    assert [m.group() for m in MODULE_PATH.finditer("the image kubedl/git-sync")] == []
    assert [m.group() for m in MODULE_PATH.finditer("a log place (infra/logplace)")] == [
        "infra/logplace"
    ]
    assert [m.group() for m in DOTTED.finditer("label trainstack.dev/run")] == []


@pytest.mark.slow  # a static check over the whole source tree
def test_every_cited_path_and_name_exists() -> None:
    found = _dangling()
    assert not found, "these pointers lead nowhere:\n" + "\n".join(found)

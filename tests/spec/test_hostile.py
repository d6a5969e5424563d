"""Hostile input: each is rejected with one clear error, with bounded memory, and never by
expanding or reading what it asks for. (No timing assertions; the bounds are on memory.)"""

from __future__ import annotations

import os
import random
import subprocess
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.spec.clirun import ROOT, trainstack
from trainstack.errors import Diagnostic, SpecError
from trainstack.spec.loader import Loader

HEAD = "apiVersion: trainstack.dev/v1\nkind: Component\nmetadata: {name: evil, version: 1.0.0}\n"
MB = 1024 * 1024
# The rest of a valid component: a case adds the one hostile field.
BODY = "spec:\n  jobType: custom\n  image: acme/x:1\n  command: python main.py\n"


def _alias_bomb() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return HEAD + "spec:\n" + "".join(f"  {line}\n" for line in lines)


def _flow_deep(levels: int) -> str:
    return HEAD + "spec: {jobType: " + "[" * levels + "x" + "]" * levels + "}\n"


def _block_deep(levels: int) -> str:
    # `- - - x` is a block sequence nested in a block sequence … (compact block notation).
    return HEAD + "spec:\n  jobType:\n    " + "- " * levels + "x\n"


def _block_map_deep(levels: int) -> str:
    # Indented block mappings: the file grows quadratically, so fewer levels still nest deep.
    return (
        HEAD
        + "spec:\n"
        + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(levels))
        + "  " * (levels + 1)
        + "x\n"
    )


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _sparse(tmp_path: Path, size: int) -> Path:
    """A file of `size` bytes that starts like a spec (sparse: costs no disk)."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as fh:
        fh.write(HEAD.encode() + b"spec:\n  command: ")
        fh.truncate(size)
    return path


def _garbage(tmp_path: Path) -> Path:
    rng = random.Random(1234)
    return _write(tmp_path, "garbage.yaml", bytes(rng.randrange(256) for _ in range(64 * 1024)))


def _high_bytes(tmp_path: Path) -> Path:
    rng = random.Random(99)
    return _write(
        tmp_path, "high.yaml", b"kind: " + bytes(rng.randrange(128, 256) for _ in range(4096))
    )


def _wide(tmp_path: Path) -> Path:
    return _write(tmp_path, "wide.yaml", HEAD + "spec: {x: [" + "1," * 150_000 + "1]}\n")


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "alias-bomb": (
        lambda t: _write(t, "bomb.yaml", _alias_bomb()),
        "YAML aliases (*name) are not allowed in specs",
    ),
    "50MB": (
        lambda t: _sparse(t, 50 * MB),
        "file is 52,428,800 bytes; specs are limited to 1,048,576",
    ),
    "binary-garbage": (_garbage, "binary file (contains NUL bytes), not YAML"),
    "not-utf8": (_high_bytes, "not valid UTF-8 (byte 6)"),
    "flow-10000-deep": (
        lambda t: _write(t, "flow.yaml", _flow_deep(10_000)),
        "nested deeper than 64 levels",
    ),
    "block-10000-deep": (
        lambda t: _write(t, "block.yaml", _block_deep(10_000)),
        "nested deeper than 64 levels",
    ),
    "block-map-500-deep": (
        lambda t: _write(t, "blockmap.yaml", _block_map_deep(500)),
        "nested deeper than 64 levels",
    ),
    "150k-nodes": (_wide, "more than 100,000 YAML nodes"),
    # a NUL written as YAML's escape reached open() as "embedded null byte"
    "nul-escape-in-code": (
        lambda t: _write(t, "nul.yaml", HEAD + BODY + '  code: "./s\\0rc"\n'),
        "control character '\\x00' in a value: not allowed",
    ),
    "5000-byte-code-path": (
        lambda t: _write(t, "long.yaml", HEAD + BODY + "  code: ./" + "a" * 5000 + "\n"),
        "not a usable code directory: a path of 5,002 bytes; "
        "paths are at most 4,095 (Linux PATH_MAX)",
    ),
    # an unknown tag was read as plain text; ESC reached terminals
    "custom-tag": (
        lambda t: _write(t, "tag.yaml", HEAD + BODY.replace("custom", "!custom custom")),
        "YAML tag '!custom' is not allowed in specs",
    ),
    "esc-in-description": (
        lambda t: _write(
            t,
            "esc.yaml",
            HEAD.replace("version: 1.0.0}", 'version: 1.0.0, description: "\\e[2Jgone"}') + BODY,
        ),
        "control character '\\x1b' in a value: not allowed",
    ),
    # an unclosed quote launched; eval ran a value as code; a
    # 64-character name became a label value over Kubernetes' 63
    "unclosed-single-quote": (
        lambda t: _write(t, "quote.yaml", HEAD + BODY.replace("main.py", "main.py 'abc")),
        "a single quote is not closed",
    ),
    "eval-user-args": (
        lambda t: _write(
            t,
            "eval.yaml",
            HEAD
            + BODY.replace("main.py", "main.py $PAI_USER_ARGS").replace("python", "eval python"),
        ),
        "eval parses its arguments again as shell code: a value of $PAI_USER_ARGS would run "
        "as a command",
    ),
    "64-character-name": (
        lambda t: _write(t, "name.yaml", HEAD.replace("evil", "a" * 64) + BODY),
        "'" + "a" * 56 + "... is not valid: expected 1-63 lowercase letters, digits and '-', "
        "starting and ending with a letter or digit (it is a Kubernetes label value)",
    ),
}


def _only_error(path: Path) -> Diagnostic:
    with pytest.raises(SpecError) as caught:
        Loader().load(path)
    diags = caught.value.diagnostics()
    assert len(diags) == 1, diags
    return diags[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected_with_one_clear_error_and_bounded_python_memory(tmp_path: Path, case: str) -> None:
    make, message = CASES[case]
    path = make(tmp_path)
    tracemalloc.start()
    try:
        diag = _only_error(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert diag.message == message
    assert diag.file == str(path)
    # Python-heap peak while loading: far below what the input asks for (a 50 MB file, a
    # billion-element expansion, 10,000 frames of recursion). The node-count case builds data
    # up to the limit (MAX_NODES values with their positions, ~250 bytes each) before stopping.
    bound = 32 * MB if case == "150k-nodes" else 4 * MB
    assert peak < bound, f"{case}: peak {peak / MB:.1f} MiB"


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_rejects_hostile_file_with_exit_2_and_no_traceback(tmp_path: Path, case: str) -> None:
    make, message = CASES[case]
    path = make(tmp_path)
    proc = trainstack("validate", path, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("    hint:")]
    assert lines == [line for line in lines if message in line] and len(lines) == 1


def _child_peak_rss(path: Path) -> int:
    """Peak resident memory (KiB) of one `trainstack validate PATH` process."""
    proc = trainstack.start(
        "validate", path, cwd=path.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss


def test_hostile_files_cost_about_as_much_memory_as_a_valid_one(tmp_path: Path) -> None:
    baseline = _child_peak_rss(ROOT / "tests" / "specs" / "valid" / "runs" / "tf-full.yaml")
    for case in ("alias-bomb", "50MB", "flow-10000-deep", "block-10000-deep"):
        case_dir = tmp_path / case
        case_dir.mkdir()
        peak = _child_peak_rss(CASES[case][0](case_dir))
        assert peak < baseline + 24 * 1024, f"{case}: {peak} KiB vs baseline {baseline} KiB"


def test_python_tags_are_never_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = _write(
        tmp_path,
        "tags.yaml",
        HEAD + "spec:\n  command: !!python/object/apply:os.system"
        f' ["touch {marker}"]\n  jobType: pytorch\n  image: acme/x:1\n',
    )
    diag = _only_error(path)
    assert diag.path == "spec.command"
    assert not marker.exists()


def test_a_run_with_a_nul_in_env_or_a_too_long_component_path_is_refused(tmp_path: Path) -> None:
    """`ValueError: embedded null byte` and an OSError traceback before."""
    from tests.clirunner import Cli

    comp = ROOT / "components" / "mnist-ddp" / "component.yaml"
    nul = _write(
        tmp_path,
        "nul.yaml",
        f"apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {{name: r}}\n"
        f'spec: {{component: {comp}, env: {{A: "x\\0y"}}}}\n',
    )
    long = _write(
        tmp_path,
        "long.yaml",
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: r}\n"
        "spec: {component: ./" + "b" * 300 + "/component.yaml}\n",
    )
    for path, said in (
        (nul, "spec.env.A: control character '\\x00' in a value: not allowed"),
        (long, "spec.component: not a usable path: the name 'bbbb"),
    ):
        for verb in (["validate"], ["render"]):
            done = Cli().invoke(*verb, path)
            assert done.code == 2, done.output
            assert said in done.output and "Traceback" not in done.output

"""Hostile paths and values on the command line: each is one clear error (or, where the input
is an ordinary thing to give, it works), never a traceback, never a hang."""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import COMPONENTS, REPO, write_run

MNIST_RUN = REPO / "components" / "mnist-ddp" / "runs" / "local.yaml"
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _without_root_file_access() -> None:
    """Root reads any file whatever its mode; without these two capabilities it cannot, so a
    mode-000 file is unreadable to the command as it would be to a user."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@dataclass(frozen=True)
class Case:
    argv: list[str | Path]
    expect: str  # "ok", or text the one error message must contain
    cwd: Path | None = None
    preexec: Callable[[], None] | None = None
    check: Callable[[], None] | None = None
    cleanup: Callable[[], None] | None = None


def _quick(tmp: Path, name: str = "quick", component: Path | None = None) -> Path:
    return write_run(
        tmp,
        component or COMPONENTS / "probe" / "component.yaml",
        name,
        parameters={"mode": "quick", "seconds": 0},
    )


def output_dotdot(tmp: Path) -> Case:
    (tmp / "work").mkdir()
    spec = _quick(tmp)

    def landed() -> None:
        assert [p.name for p in (tmp / "x").iterdir()] == ["worker-0.txt"]

    return Case(
        ["run", spec, "--local", "--no-install", "--output", "result=../x"],
        "ok",
        cwd=tmp / "work",
        check=landed,
    )


def input_dotdot(tmp: Path) -> Case:
    (tmp / "a").mkdir()
    (tmp / "b").mkdir()
    return Case(
        ["run", _quick(tmp), "--local", "--no-install", "--input", "data=a/../b"], "ok", cwd=tmp
    )


def input_dotdot_missing(tmp: Path) -> Case:
    (tmp / "a").mkdir()
    return Case(
        ["run", _quick(tmp), "--local", "--no-install", "--input", "data=a/../nope"],
        "no such file or directory",
        cwd=tmp,
    )


def requirements_not_utf8(tmp: Path) -> Case:
    comp = tmp / "probe"
    shutil.copytree(COMPONENTS / "probe", comp)
    (comp / "src" / "requirements.txt").write_bytes(b"# deps\nnump\xff\xfey==1.0\n")
    return Case(
        ["run", _quick(tmp, component=comp / "component.yaml"), "--local"],
        "requirements.txt:2: not UTF-8 text (byte 0xff)",
    )


def spec_path_not_utf8(tmp: Path) -> Case:
    spec = _quick(tmp)
    odd = Path(os.fsdecode(bytes(tmp) + b"/caf\xe9.yaml"))
    spec.rename(odd)
    return Case(["run", odd, "--local", "--no-install"], "is not valid UTF-8")


def spec_not_readable(tmp: Path) -> Case:
    (tmp / "specs").mkdir()
    spec = _quick(tmp / "specs")
    spec.chmod(0)
    return Case(
        ["validate", tmp / "specs"],
        "cannot read: Permission denied",
        preexec=_without_root_file_access,
    )


def symlink_loop_under_validate(tmp: Path) -> Case:
    (tmp / "specs").mkdir()
    (tmp / "specs" / "a.yaml").symlink_to("b.yaml")
    (tmp / "specs" / "b.yaml").symlink_to("a.yaml")
    (tmp / "specs" / "here").symlink_to(".")
    return Case(["validate", tmp / "specs"], "Too many levels of symbolic links")


def fifo_under_validate(tmp: Path) -> Case:
    (tmp / "specs").mkdir()
    os.mkfifo(tmp / "specs" / "pipe.yaml")
    _quick(tmp / "specs")  # the one spec there is: validate checks it and ignores the FIFO
    return Case(["validate", tmp / "specs"], "ok")


def fifo_named_explicitly(tmp: Path) -> Case:
    os.mkfifo(tmp / "pipe.yaml")
    return Case(["validate", tmp / "pipe.yaml"], "not a regular file")


def deep_tree(tmp: Path) -> Case:
    # 1,100 levels: built with relative steps (an absolute path that long is past PATH_MAX)
    fd = os.open(tmp, os.O_RDONLY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    spec = os.open("bad.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(spec, b"apiVersion: trainstack.dev/v1\nkind: Run\n")
    os.close(spec)
    os.close(fd)
    return Case(["validate", "d"], "bad.yaml", cwd=tmp, cleanup=lambda: remove_deep(tmp))


def remove_deep(root: Path) -> None:
    """Remove a tree of nested `d` folders level by level (shutil.rmtree, and pytest's own
    clean-up of old temporary folders, recurse once per level and give up past ~1,000)."""
    while (root / "d").is_dir():
        if (root / "d" / "d").is_dir():
            os.rename(root / "d" / "d", root / "d-next")
            shutil.rmtree(root / "d")
            os.rename(root / "d-next", root / "d")
        else:
            shutil.rmtree(root / "d")


def code_bucket_not_a_uri(tmp: Path) -> Case:
    return Case(
        ["render", MNIST_RUN, "--code-bucket", "not a uri", "-o", tmp / "out"],
        "Invalid value for '--code-bucket': 'not a uri/' is not a URI",
    )


def render_into_proc(tmp: Path) -> Case:
    return Case(
        ["render", MNIST_RUN, "-o", "/proc/nope"], "cannot write the manifests to /proc/nope"
    )


def init_into_proc(tmp: Path) -> Case:
    return Case(["init", "newcomp", "--dir", "/proc/nope"], "cannot write /proc/nope/newcomp/")


def output_unwritable(tmp: Path) -> Case:
    # The job ran; the commit of its output failed (was a traceback after the run)
    def kept() -> None:
        [run_dir] = (tmp / "home" / "runs").iterdir()
        assert (run_dir / "output" / "result" / "worker-0.txt").is_file()

    return Case(
        ["run", _quick(tmp), "--local", "--no-install", "--output", "result=/proc/nope"],
        "outputs not committed: /proc/nope: No such file or directory; they are in",
        check=kept,
    )


def output_under_a_file(tmp: Path) -> Case:
    (tmp / "afile").write_text("mine")

    def untouched() -> None:
        assert (tmp / "afile").read_text() == "mine"

    return Case(
        ["run", _quick(tmp), "--local", "--no-install", "--output", "result=afile/sub"],
        "outputs not committed: ",
        cwd=tmp,
        check=untouched,
    )


def kubedl_mirror_to_a_file(tmp: Path) -> Case:
    (tmp / "afile").write_text("mine")
    return Case(
        ["kubedl", "mirror", "--from", tmp, "--to", tmp / "afile", "--write-lock", "v0.5.0"],
        "Invalid value for '--to'",
    )


def kubedl_mirror_under_a_file(tmp: Path) -> Case:
    (tmp / "afile").write_text("mine")
    return Case(
        [
            "kubedl",
            "mirror",
            "--from",
            tmp,
            "--to",
            tmp / "afile" / "crds",
            "--write-lock",
            "v0.5.0",
        ],
        f"kubedl mirror: {tmp / 'afile' / 'crds'}: Not a directory",
    )


def render_namespace_not_a_name(tmp: Path) -> Case:
    # rendered as it was into manifests the API server refuses
    return Case(
        ["render", MNIST_RUN, "--namespace", "Team A", "-o", tmp / "out"],
        "'Team A' is not a namespace name: expected lowercase letters, digits and '-', "
        "starting and ending with a letter or digit, at most 63 characters. "
        "Did you mean 'team-a'?",
    )


def render_pull_secret_not_a_name(tmp: Path) -> Case:
    return Case(
        ["render", MNIST_RUN, "--pull-secret", "registry_creds", "-o", tmp / "out"],
        "'registry_creds' is not a Secret name",
    )


def env_namespace_not_a_name(tmp: Path) -> Case:
    return Case(["env", MNIST_RUN, "--namespace", "x" * 64], "is not a namespace name")


def _run_naming(tmp: Path, component: str) -> Path:
    spec = tmp / "run.yaml"
    spec.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: r}\n"
        f"spec:\n  component: {component}\n"
    )
    return spec


def component_ref_symlink_loop(tmp: Path) -> Case:
    # Path.resolve raised RuntimeError on the loop
    (tmp / "a.yaml").symlink_to("b.yaml")
    (tmp / "b.yaml").symlink_to("a.yaml")
    return Case(
        ["render", _run_naming(tmp, "a.yaml")],
        f"{tmp / 'a.yaml'}: cannot read: Too many levels of symbolic links",
    )


def component_ref_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "comp.yaml")  # was "not found", though it is there
    return Case(
        ["render", _run_naming(tmp, "comp.yaml")], f"{tmp / 'comp.yaml'}: not a regular file"
    )


def sweep_run_ref_symlink_loop(tmp: Path) -> Case:
    (tmp / "a.yaml").symlink_to("b.yaml")
    (tmp / "b.yaml").symlink_to("a.yaml")
    sweep = tmp / "sweep.yaml"
    sweep.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Sweep\nmetadata: {name: s}\nspec:\n"
        "  run: a.yaml\n  parameters: {lr: [0.1]}\n"
        "  objective: {metric: a/b, goal: minimize}\n"
    )
    return Case(
        ["sweep", sweep, "--local"],
        f"{tmp / 'a.yaml'}: cannot read: Too many levels of symbolic links",
    )


def runs_folder_is_a_file(tmp: Path) -> Case:
    (tmp / "home").mkdir()
    (tmp / "home" / "runs").write_text("mine")  # a file where the run directories go

    def untouched() -> None:
        assert (tmp / "home" / "runs").read_text() == "mine"

    return Case(
        ["run", _quick(tmp), "--local", "--no-install"],
        f"failed before it started: {tmp / 'home' / 'runs'}",
        check=untouched,
    )


def resume_without_its_run_directory(tmp: Path) -> Case:
    # a resume that silently started from nothing
    spec = _quick(tmp)
    done = Cli(tmp / "home")("run", spec, "--local", "--no-install")
    assert done.code == 0, done.err
    [run_dir] = (tmp / "home" / "runs").iterdir()
    shutil.rmtree(run_dir)
    return Case(
        ["run", spec, "--local", "--no-install", "--resume", run_dir.name],
        f"--resume {run_dir.name}: the run directory of run {run_dir.name} ({run_dir}) no "
        "longer exists",
    )


def report_over_a_device(tmp: Path) -> Case:
    # as root, the report's rename replaced the device node with a regular file.
    # As root the device is one of the test's own (the full device's numbers), never /dev/full.
    device = Path("/dev/full")
    if os.geteuid() == 0:
        device = tmp / "full"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    spec = _quick(tmp)
    done = Cli(tmp / "home")("run", spec, "--local", "--no-install")
    assert done.code == 0, done.err

    def still_a_device() -> None:
        assert stat.S_ISCHR(os.lstat(device).st_mode)

    return Case(
        ["report", "quick", "-o", device],
        f"cannot write {device}: it is a device, not a regular file; refusing to replace it",
        check=still_a_device,
    )


def grace_nan(tmp: Path) -> Case:
    # 'nan' passed click's FloatRange and made the grace period zero: SIGKILL at once
    return Case(
        ["run", _quick(tmp), "--local", "--no-install", "--grace", "nan"],
        "Invalid value for '--grace': 'nan' is not a number of seconds",
    )


def sweep_grace_nan(tmp: Path) -> Case:
    return Case(
        [
            "sweep",
            REPO / "components/mnist-ddp/sweeps/lr-optimizer.yaml",
            "--local",
            "--grace",
            "NaN",
        ],
        "Invalid value for '--grace': 'NaN' is not a number of seconds",
    )


def output_an_oss_uri(tmp: Path) -> Case:
    # taken as the local path ./oss:/bucket/x
    return Case(
        ["run", _quick(tmp), "--local", "--no-install", "--output", "result=oss://bucket/x"],
        "--output result=oss://bucket/x: a oss:// URI; --output takes a local path",
        cwd=tmp,
        check=lambda: None if not (tmp / "oss:").exists() else pytest.fail("./oss: created"),
    )


def grace_inf(tmp: Path) -> Case:
    # accepted by run while wait refused it
    return Case(
        ["run", _quick(tmp), "--local", "--no-install", "--grace", "inf"],
        "Invalid value for '--grace': 'inf' is not a number of seconds",
    )


def home_empty(tmp: Path) -> Case:
    # '' became the current directory as the state home
    return Case(["runs", "list", "--home", ""], "Invalid value for '--home': an empty path")


def runs_show_empty(tmp: Path) -> Case:
    # an empty prefix matched the only run there was
    spec = _quick(tmp)
    done = Cli(tmp / "home")("run", spec, "--local", "--no-install")
    assert done.code == 0, done.err
    return Case(["runs", "show", ""], "an empty run name names no run")


def wait_interval_inf(tmp: Path) -> Case:
    return Case(
        ["wait", "some-run", "--interval", "inf"],
        "Invalid value for '--interval': 'inf' is not a number of seconds",
    )


def wait_timeout_nan(tmp: Path) -> Case:
    return Case(
        ["wait", "some-run", "--timeout", "nan"],
        "Invalid value for '--timeout': 'nan' is not a number of seconds",
    )


CASES = [
    output_dotdot,
    input_dotdot,
    input_dotdot_missing,
    requirements_not_utf8,
    spec_path_not_utf8,
    spec_not_readable,
    symlink_loop_under_validate,
    fifo_under_validate,
    fifo_named_explicitly,
    deep_tree,
    code_bucket_not_a_uri,
    render_into_proc,
    init_into_proc,
    output_unwritable,
    output_under_a_file,
    kubedl_mirror_to_a_file,
    kubedl_mirror_under_a_file,
    render_namespace_not_a_name,
    render_pull_secret_not_a_name,
    env_namespace_not_a_name,
    component_ref_symlink_loop,
    component_ref_fifo,
    sweep_run_ref_symlink_loop,
    runs_folder_is_a_file,
    resume_without_its_run_directory,
    report_over_a_device,
    grace_nan,
    sweep_grace_nan,
    output_an_oss_uri,
    grace_inf,
    home_empty,
    runs_show_empty,
    wait_interval_inf,
    wait_timeout_nan,
]


@pytest.mark.slow
@pytest.mark.parametrize("make", CASES, ids=[c.__name__ for c in CASES])
def test_hostile_input_is_one_clear_error_or_works(
    make: Callable[[Path], Case], tmp_path: Path
) -> None:
    case = make(tmp_path)
    # In this process, but a case that changes the process (its capabilities) gets one.
    popen = {"preexec_fn": case.preexec} if case.preexec is not None else {}
    try:
        result = Cli(tmp_path / "home")(*case.argv, cwd=case.cwd or REPO, timeout=90, **popen)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{make.__name__}: hung")
    finally:
        if case.cleanup is not None:
            case.cleanup()
    out = result.out + result.err
    assert "Traceback" not in out, out
    if case.expect == "ok":
        assert result.returncode == 0, out
    else:
        assert result.returncode != 0, out
        assert case.expect in out, out
        errors = out.count("error:") + out.count("Error:")
        problems = out.count("problem(s)")
        assert errors == 1 or problems == 1, out
    if case.check is not None:
        case.check()


@pytest.mark.slow
def test_a_run_whose_directory_is_gone_says_so(tmp_path: Path) -> None:
    """Not 'no log for this run (replicas: none yet)' for a run that finished long ago."""
    cli = Cli(tmp_path / "home")
    assert cli("run", _quick(tmp_path), "--local", "--no-install").returncode == 0
    [run_dir] = (tmp_path / "home" / "runs").iterdir()
    shutil.rmtree(run_dir)
    logs = cli("logs", run_dir.name)
    assert logs.returncode == 2 and "Traceback" not in logs.err, logs.err
    assert f"no logs: the run directory {run_dir} no longer exists" in logs.err
    shown = cli("runs", "show", run_dir.name)
    assert shown.returncode == 0, shown.err
    assert f"{run_dir}  (no longer exists: deleted or moved)" in shown.out

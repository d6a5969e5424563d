"""How the component's command runs: `sh -c`, with parameter values as data, never code (the
command's rewrite, and what it refuses, is trainstack.shellform).

Alibaba PAI Designer custom components run the command with `sh -c` and let `$PAI_USER_ARGS`
word-split. That cannot carry a value such as `a b; touch x $(id)`: split, it becomes five
arguments. The mechanism here:

1. The values travel as argv, not as text. `launch_command` returns
   `["sh", "-c", SCRIPT, "sh", "--epochs", "10", "--name", "a b; touch x $(id)", ...]`: after
   `sh -c SCRIPT` the next word is `$0` and the rest are the positional parameters `$1...`.
   No shell ever parses them.
2. SCRIPT is the user's command with two rewrites, applied only where the shell would
   word-split (outside any quotes, outside `$((...))`):
   - `$PAI_USER_ARGS` / `${PAI_USER_ARGS}` becomes `"$@"`: every argument, each one word, intact;
   - `$PAI_HPS_X`, `$PAI_INPUT_X`, `$MODEL`, ... (every contract variable whose value may hold
     user data) becomes `"${NAME}"`, so a value with spaces or `*` stays one word.
   A variable's value is never re-parsed as code by `sh` (expansion does not run `$(...)`), so
   after these rewrites nothing in a value is split, globbed or evaluated.
3. The env var `PAI_USER_ARGS` holds PAI Designer's plain text for programs that read it: each
   argument POSIX-quoted, which leaves `--epochs 10` unchanged and lets `shlex.split` recover
   the exact argv for any value.

Inside double quotes the command keeps its meaning: `"$PAI_USER_ARGS"` is one string. Heredoc
bodies are copied as written; `${NAME<op>word}` of a contract variable is quoted whole when the
word means the same quoted; `case ... esac` branches are rewritten (their `)` ends a pattern).
What cannot be made split-proof — contract variables in backquotes or nested in another
expansion, an unsafe operator word, an unterminated heredoc or quote — is listed by `problems`
(validate refuses it) and `rewrite` raises.

Before the command, the script changes to `$PAI_WORKING_DIR` and installs `requirements.txt`
when the code has one (Alibaba PAI Designer custom components: code directory and
`requirements.txt`); a failed install exits 1, which is not a retryable code.
"""

from __future__ import annotations

import shlex

from trainstack import launcher
from trainstack.contract.hyper import user_args
from trainstack.contract.layout import DEFAULT_ROOT, Layout
from trainstack.contractnames import POD_IP_ENV
from trainstack.kubedl import job_kind
from trainstack.shellform.rewrite import DOCS_HINT as DOCS_HINT
from trainstack.shellform.rewrite import ShellRewriteError as ShellRewriteError
from trainstack.shellform.rewrite import problems as problems
from trainstack.shellform.rewrite import problems_with_hints as problems_with_hints
from trainstack.shellform.rewrite import rewrite as rewrite
from trainstack.spec.model import Run

SHELL = "sh"
INSTALL_REQUIREMENTS = (
    "if [ -f requirements.txt ]; then pip install -r requirements.txt || exit 1; fi\n"
)


def prelude(root: str, *, install_requirements: bool) -> str:
    """What every command-running script does first: go to the code, make sure HOME can be
    written, install the code's requirements (in a pod; a local run installs them once, into a
    cached environment).

    Pods run as `runAsUser` (1000 by default), a user the image usually does not know, for whom
    the container runtime sets HOME=/, which that user cannot write: pip, finding site-packages
    not writable either, falls back to a user install under $HOME/.local and fails, and so does
    every library that caches under ~ (torch hub, Hugging Face). Such a HOME is replaced by the
    pod's own writable folder; an image user with a home of its own keeps it."""
    home = Layout.at(root).home
    text = 'cd "$PAI_WORKING_DIR" || exit 1\n'
    text += f'[ -w "${{HOME:-/}}" ] || export HOME={shlex.quote(home)}\n'
    return text + (INSTALL_REQUIREMENTS if install_requirements else "")


# Where a replica finds its own IP address (spec.torchElastic), POD_IP_ENV: the pod's
# status.podIP on a cluster, 127.0.0.1 locally.
# An MPI worker only hosts the ranks the launcher starts through kubexec; it waits.
MPI_WORKER_WAIT = "exec sleep 2147483647"
# The image's Python runs the launcher (training images have one; locally the interpreter that is
# first on PATH, trainstack's or the requirements' environment). `-S`: the launcher needs only
# the standard library, and an image's site-packages .pth files can cost tens of milliseconds
# at every start (benchmarks/bench_launcher.py).
LAUNCHER_PYTHON = ("python3", "-S")
# The launcher's option for the hang timeout; a deployed run's ledger reads it off its pods.
HANG_TIMEOUT_OPTION = "--hang-timeout"
# How long a hung command gets between SIGTERM and SIGKILL in a pod; a local run uses --grace.
DEFAULT_LAUNCHER_GRACE_SECONDS = 10.0
# What coreutils' `timeout` exits with when the deadline passed (deadline_launch); not one of
# KubeDL's retryable codes.
DEADLINE_EXIT_CODE = 124


def script(
    run: Run,
    role: str | None = None,
    *,
    install_requirements: bool = True,
    root: str = str(DEFAULT_ROOT),
) -> str:
    first = prelude(root, install_requirements=install_requirements)
    kind = job_kind(run.job_type)
    if role is not None and kind.has_role(role) and not kind.role(role).runs_command:
        return first + MPI_WORKER_WAIT
    if run.torch_elastic is not None:
        return first + torch_elastic_launch(run, role, rewrite(run.component.command))
    body = first + rewrite(run.component.command)
    if run.timeout_seconds and role is not None and role == kind.deadline_role:
        return deadline_launch(kind.kind, run.timeout_seconds, body)
    return body


def deadline_launch(kind: str, seconds: int, body: str) -> str:
    """The script `body` under the run's timeout, for the role of a kind whose operator never
    enforces `activeDeadlineSeconds` (trainstack.kubedl.DeadlineClock.NEVER: the MPI launcher).

    coreutils' `timeout`, exec'd so it is the container's first process: it forwards the
    kubelet's SIGTERM to the command's process group and, when the deadline passes, sends it
    SIGTERM and exits 124 (DEADLINE_EXIT_CODE), which KubeDL's ExitCode policy never retries
    (KubeDL v0.5.0 pkg/util/train/train_util.go): the launcher fails, so the job does. The
    clock starts with the launcher's container (after scheduling and image pulls) and a
    recreated launcher starts its own. An image without `timeout` fails at once, saying so,
    rather than running without a deadline."""
    missing = (
        f"trainstack: a {kind} with spec.timeout needs coreutils' timeout in its image "
        f"(KubeDL v0.5.0 never enforces an {kind}'s activeDeadlineSeconds, so its "
        "launcher enforces the timeout itself)"
    )
    return (
        f"command -v timeout >/dev/null 2>&1 || {{ echo {shlex.quote(missing)} >&2; exit 127; }}\n"
        f'exec timeout {max(int(seconds), 1)} {SHELL} -c {shlex.quote(body)} {SHELL} "$@"'
    )


def torch_elastic_launch(run: Run, role: str | None, command: str) -> str:
    """`spec.torchElastic`: the command as the one worker of torchrun's elastic agent in every
    replica. The agents rendezvous (c10d) at the master's MASTER_ADDR:MASTER_PORT, the master
    hosting the store; when a worker dies, or a replica is recreated and its agent rejoins,
    every agent restarts its worker (up to maxRestarts times) and all resume together. torchrun
    sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for the worker (one process per replica,
    so WORLD_SIZE is still the number of replicas; which replica gets rank 0 is the
    rendezvous' choice). The command runs through `sh -c` as always, its parameters still argv.
    """
    assert run.torch_elastic is not None
    is_host = 1 if role == "master" else 0
    argv = [
        "python",
        "-m",
        "torch.distributed.run",
        f"--nnodes={run.total_replicas}",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        '--rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT"',
        '--rdzv-id="$JOB_NAME"',
        # Every replica of a local run has this machine's address: without it each agent would
        # try to host the store. On a cluster it is what the pod is anyway.
        f"--rdzv-conf=is_host={is_host}",
        # The address the agent gives its worker's peers (the pod's IP: a PyTorch worker has
        # no Service, so its hostname cannot be resolved by the others).
        f'--local-addr="${POD_IP_ENV}"',
        f"--max-restarts={run.torch_elastic.max_restarts}",
        "--no-python",
        SHELL,
        "-c",
        shlex.quote(command),
        SHELL,
        '"$@"',
    ]
    # A fresh store for every restart of the workers: with the agent's shared store (the
    # default), workers restarted in place meet the previous attempt's keys and hang (torch
    # 2.13, seen in tests/local/test_torch_elastic.py's scenario).
    return "export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1\nexec " + " ".join(argv)


def launch_command(
    run: Run,
    role: str | None = None,
    *,
    install_requirements: bool = True,
    root: str = str(DEFAULT_ROOT),
    events_dir: str | None = None,
    termination_log: str | None = launcher.TERMINATION_LOG,
    grace_seconds: float = DEFAULT_LAUNCHER_GRACE_SECONDS,
    log_dir: str | None = None,
    in_pod: bool = False,
) -> list[str]:
    """The argv a replica runs: `sh -c SCRIPT sh ARGS...` (ARGS = the hyperparameters as argv),
    behind trainstack's in-container launcher when the run needs it (`uses_launcher`; `in_pod`:
    the argv is a container's first process).

    `role` matters only for MPI, whose workers wait for the launcher instead of running the
    command. The renderer escapes `$` for Kubernetes; this argv is the one the process gets.
    `root` is where the /ml tree is (a local run's directory), `events_dir` where the launcher
    records restarts, `termination_log` where it leaves its final reason (a pod's
    terminationMessagePath), `grace_seconds` how long a hung command gets after SIGTERM,
    `log_dir` where the launcher ships the replica's log (a pod's view of the artifact store's
    `<team>/<run>/logs/`; docs/deploy.md), which puts every command-running replica behind it."""
    argv = [
        SHELL,
        "-c",
        script(run, role, install_requirements=install_requirements, root=root),
        SHELL,
        *user_args(run),
    ]
    if not uses_launcher(run, role, ships_logs=log_dir is not None, in_pod=in_pod):
        return argv
    ft = run.fault_tolerance
    options = []
    if ft is not None and ft.hang_timeout_seconds is not None:
        options.append(f"{HANG_TIMEOUT_OPTION}={ft.hang_timeout_seconds}")
    options.append(f"--grace={grace_seconds:g}")
    if events_dir is not None:
        options.append(f"--events-dir={events_dir}")
    if termination_log is not None:
        options.append(f"--termination-log={termination_log}")
    if log_dir is not None:
        options.append(f"--log-dir={log_dir}")
    program = Layout.at(root).launcher + launcher.FILE
    return [*LAUNCHER_PYTHON, program, *options, "--", *argv]


def uses_launcher(
    run: Run, role: str | None = None, *, ships_logs: bool = False, in_pod: bool = False
) -> bool:
    """Whether a replica runs behind the in-container launcher: in every pod (`in_pod`), where
    the run asks for hang detection (`faultTolerance.hangTimeout`) or its logs are shipped to an
    artifact store (`ships_logs`), except in a role that never runs the command (an MPI worker
    waits, silent by design, for the launcher's ranks).

    In a pod the launcher is the container's PID 1 because `sh -c` is not fit for it: the runtime
    sends SIGTERM to PID 1 from outside its PID namespace, which the kernel delivers to a
    namespace's init only when the init handles it (pid_namespaces(7)); `sh` installs no handler
    and does not exec the script's last command, so the command would never hear of a deletion
    and be SIGKILLed after the grace period. The launcher handles it and forwards it to the
    command's process group, as a local run's supervisor signals the command directly."""
    ft = run.fault_tolerance
    if not (in_pod or ships_logs or (ft is not None and ft.hang_timeout_seconds is not None)):
        return False
    kind = job_kind(run.job_type)
    return not (role is not None and kind.has_role(role) and not kind.role(role).runs_command)

"""How the component's command runs: `sh -c`, with parameter values as data, never code.

The seeds run the command with `sh -c` and let `$PAI_USER_ARGS` word-split. That cannot carry a
value such as `a b; touch x $(id)`: split, it becomes five arguments. The mechanism here:

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
3. The env var `PAI_USER_ARGS` still holds the seed's plain text for programs that read it: each
   argument POSIX-quoted, which leaves `--epochs 10` unchanged and lets `shlex.split` recover
   the exact argv for any value.

Inside double quotes the command keeps its meaning: `"$PAI_USER_ARGS"` is one string. Heredoc
bodies and backquotes are not rewritten (use `$(...)` and quotes there).

Before the command, the script changes to `$PAI_WORKING_DIR` and installs `requirements.txt`
when the code has one (seed 000); a failed install exits 1, which is not a retryable code.
"""

from __future__ import annotations

import re
import shlex

from trainstack.contract.hyper import user_args
from trainstack.kubedl import job_kind
from trainstack.spec.model import Run

SHELL = "sh"
PRELUDE = (
    'cd "$PAI_WORKING_DIR" || exit 1\n'
    "if [ -f requirements.txt ]; then pip install -r requirements.txt || exit 1; fi\n"
)
# Where a replica finds its own IP address (spec.torchElastic): the pod's status.podIP on a
# cluster, 127.0.0.1 locally.
POD_IP_ENV = "TRAINSTACK_POD_IP"
# An MPI worker only hosts the ranks the launcher starts through kubexec; it waits.
MPI_WORKER_WAIT = "exec sleep 2147483647"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_BREAK = " \t\n;&|()<>"


def _quoted_var(name: str) -> bool:
    return name.startswith("PAI_") or name in ("MODEL", "METRICS") or name.startswith("MODEL_")


def _var_ref(cmd: str, i: int) -> tuple[str, int] | None:
    """A plain `$NAME` or `${NAME}` at i: (name, end). `${NAME:-x}` and friends are left alone."""
    if cmd.startswith("${", i):
        m = _NAME.match(cmd, i + 2)
        if m and cmd.startswith("}", m.end()):
            return m.group(), m.end() + 1
        return None
    m = _NAME.match(cmd, i + 1)
    return (m.group(), m.end()) if m else None


def _skip_backquote(cmd: str, i: int) -> int:
    j = i + 1
    while j < len(cmd) and cmd[j] != "`":
        j += 2 if cmd[j] == "\\" else 1
    return min(j + 1, len(cmd))


def rewrite(cmd: str) -> str:
    """The command with contract variables made split-proof (see the module docstring)."""
    out: list[str] = []
    # Contexts: "U" unquoted, "D" in double quotes, "P" in $(...) or (...), "A" in $((...)).
    stack = ["U"]
    i, n = 0, len(cmd)
    while i < n:
        c, ctx = cmd[i], stack[-1]
        if c == "\\":
            out.append(cmd[i:i + 2])
            i += 2
            continue
        if c == "`":
            j = _skip_backquote(cmd, i)
            out.append(cmd[i:j])
            i = j
            continue
        if ctx == "D":
            if c == '"':
                stack.pop()
            elif cmd.startswith("$((", i):
                stack.append("A")
                out.append("$((")
                i += 3
                continue
            elif cmd.startswith("$(", i):
                stack.append("P")
                out.append("$(")
                i += 2
                continue
            out.append(c)
            i += 1
            continue
        if ctx == "A":
            if c == "(":
                stack.append("P")
            elif c == ")" and cmd.startswith("))", i):
                stack.pop()
                out.append("))")
                i += 2
                continue
            out.append(c)
            i += 1
            continue
        # Unquoted: the top level, or inside $(...) / (...).
        if c == "'":
            j = cmd.find("'", i + 1)
            j = n if j < 0 else j + 1
            out.append(cmd[i:j])
            i = j
            continue
        if c == '"':
            stack.append("D")
        elif c == "#" and (i == 0 or cmd[i - 1] in _WORD_BREAK):
            j = cmd.find("\n", i)
            j = n if j < 0 else j
            out.append(cmd[i:j])
            i = j
            continue
        elif c == "$":
            if cmd.startswith("$((", i):
                stack.append("A")
                out.append("$((")
                i += 3
                continue
            if cmd.startswith("$(", i):
                stack.append("P")
                out.append("$(")
                i += 2
                continue
            ref = _var_ref(cmd, i)
            if ref is not None:
                name, end = ref
                if name == "PAI_USER_ARGS":
                    out.append('"$@"')
                elif _quoted_var(name):
                    out.append('"${' + name + '}"')
                else:
                    out.append(cmd[i:end])
                i = end
                continue
        elif c == "(":
            stack.append("P")
        elif c == ")" and ctx == "P":
            stack.pop()
        out.append(c)
        i += 1
    return "".join(out)


def script(run: Run, role: str | None = None, *, install_requirements: bool = True) -> str:
    prelude = PRELUDE if install_requirements else PRELUDE.splitlines(keepends=True)[0]
    kind = job_kind(run.job_type)
    if role is not None and kind.has_role(role) and not kind.role(role).runs_command:
        return prelude + MPI_WORKER_WAIT
    if run.torch_elastic is not None:
        return prelude + torch_elastic_launch(run, role, rewrite(run.component.command))
    return prelude + rewrite(run.component.command)


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
        "python", "-m", "torch.distributed.run",
        f"--nnodes={run.total_replicas}", "--nproc-per-node=1",
        "--rdzv-backend=c10d", '--rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT"',
        '--rdzv-id="$JOB_NAME"',
        # Every replica of a local run has this machine's address: without it each agent would
        # try to host the store. On a cluster it is what the pod is anyway.
        f"--rdzv-conf=is_host={is_host}",
        # The address the agent gives its worker's peers (the pod's IP: a PyTorch worker has
        # no Service, so its hostname cannot be resolved by the others).
        f'--local-addr="${POD_IP_ENV}"',
        f"--max-restarts={run.torch_elastic.max_restarts}",
        "--no-python", SHELL, "-c", shlex.quote(command), SHELL, '"$@"',
    ]
    # A fresh store for every restart of the workers: with the agent's shared store (the
    # default), workers restarted in place meet the previous attempt's keys and hang (torch
    # 2.13, seen in tests/local/test_torch_elastic.py's scenario).
    return "export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1\nexec " + " ".join(argv)


def launch_command(run: Run, role: str | None = None, *,
                   install_requirements: bool = True) -> list[str]:
    """The argv a replica runs: `sh -c SCRIPT sh ARGS...` (ARGS = the hyperparameters as argv).

    `role` matters only for MPI, whose workers wait for the launcher instead of running the
    command. The renderer escapes `$` for Kubernetes; this argv is the one the process gets."""
    return [SHELL, "-c", script(run, role, install_requirements=install_requirements), SHELL,
            *user_args(run)]

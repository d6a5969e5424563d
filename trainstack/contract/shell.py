"""How the component's command runs: `sh -c`, with parameter values as data, never code.

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

import re
import shlex

from trainstack import launcher
from trainstack.contract.errors import ContractError
from trainstack.contract.hyper import user_args
from trainstack.contract.layout import DEFAULT_ROOT, Layout
from trainstack.contract.reeval import reevaluations
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
# The image's Python runs the launcher (training images have one; locally the interpreter that is
# first on PATH, trainstack's or the requirements' environment). `-S`: the launcher needs only
# the standard library, and an image's site-packages .pth files can cost tens of milliseconds
# at every start (benchmarks/bench_launcher.py).
LAUNCHER_PYTHON = ("python3", "-S")
# How long a hung command gets between SIGTERM and SIGKILL in a pod; a local run uses --grace.
DEFAULT_LAUNCHER_GRACE_SECONDS = 10.0
# What coreutils' `timeout` exits with when the deadline passed (deadline_launch); not one of
# KubeDL's retryable codes.
DEADLINE_EXIT_CODE = 124

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_BREAK = " \t\n;&|()<>"
_BLANKS = " \t"
# `${NAME<op>word}`: the operators POSIX defines, longest first.
_PARAM_OPS = (":-", ":=", ":?", ":+", "%%", "##", "-", "=", "?", "+", "%", "#")
# A word after the operator that means the same quoted or not: no blanks, quotes, `$`, `\\`
# or backquotes; glob characters only after the pattern operators, where they stay patterns.
_SAFE_WORD = re.compile(r"[A-Za-z0-9_./:,+=@%^-]*")
_SAFE_PATTERN = re.compile(r"[A-Za-z0-9_./:,+=@%^*?\[\]!-]*")
_CONTRACT_REF = re.compile(r"\$\{?(PAI_[A-Za-z0-9_]*|MODEL[A-Za-z0-9_]*|METRICS)\b")
# Words after which a command (and so the `case` keyword) may start.
_COMMAND_WORDS = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "{"})


class ShellRewriteError(ContractError):
    """The command uses a shell form the rewrite cannot make split-proof."""


def _quoted_var(name: str) -> bool:
    return name.startswith("PAI_") or name in ("MODEL", "METRICS") or name.startswith("MODEL_")


def _skip_backquote(cmd: str, i: int) -> int:
    j = i + 1
    while j < len(cmd) and cmd[j] != "`":
        j += 2 if cmd[j] == "\\" else 1
    return min(j + 1, len(cmd))


def _brace_end(cmd: str, i: int) -> int | None:
    """The index after the `}` closing the `${` at i (nested `${`, quotes skipped), or None."""
    depth, j, n = 0, i, len(cmd)
    while j < n:
        c = cmd[j]
        if c == "\\":
            j += 2
            continue
        if cmd.startswith("${", j):
            depth += 1
            j += 2
            continue
        if c == "'":
            k = cmd.find("'", j + 1)
            if k < 0:
                return None
            j = k + 1
            continue
        if c == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None


def _at_command_start(cmd: str, i: int) -> bool:
    j = i - 1
    while j >= 0 and cmd[j] in _BLANKS:
        j -= 1
    if j < 0 or cmd[j] in ";&|(\n":
        return True
    k = j
    while k >= 0 and cmd[k] not in _WORD_BREAK:
        k -= 1
    return cmd[k + 1 : j + 1] in _COMMAND_WORDS and _at_command_start(cmd, k + 1)


def _keyword(cmd: str, i: int, word: str) -> bool:
    end = i + len(word)
    return (
        cmd.startswith(word, i)
        and (i == 0 or cmd[i - 1] in _WORD_BREAK)
        and (end == len(cmd) or cmd[end] in _WORD_BREAK)
    )


class _Rewriter:
    """One pass over the command. Contexts on the stack: "U" unquoted (top level), "D" in double
    quotes, "P" in $(...) or (...), "C" in a `case ... esac` (its `)` ends a pattern, not a
    subshell), "A" in $((...)). Heredoc bodies are copied as written."""

    def __init__(self, cmd: str) -> None:
        self.cmd, self.n = cmd, len(cmd)
        self.out: list[str] = []
        self.stack = ["U"]
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, <<- strips leading tabs)
        self.problems: list[str] = []

    def run(self) -> str:
        i = 0
        while i < self.n:
            i = self._step(i)
        if self.heredocs:
            self.problems.append(f"the here-document <<{self.heredocs[0][0]} has no body")
        if self.stack != ["U"]:
            what = {
                "D": "a double quote",
                "P": "a parenthesis",
                "C": "a case without esac",
                "A": "an arithmetic $(( ))",
            }[self.stack[-1]]
            self.problems.append(f"{what} is not closed")
        return "".join(self.out)

    def _emit(self, text: str, i: int) -> int:
        self.out.append(text)
        return i + len(text)

    def _step(self, i: int) -> int:
        cmd, c, ctx = self.cmd, self.cmd[i], self.stack[-1]
        if c == "\\":
            return self._emit(cmd[i : i + 2], i)
        if c == "`":
            j = _skip_backquote(cmd, i)
            if not cmd.endswith("`", i + 1, j) or j == i + 1:
                self.problems.append("a backquote is not closed")
            if _CONTRACT_REF.search(cmd, i, j):
                self.problems.append(
                    "a contract variable inside backquotes (`...`) cannot be "
                    "quoted; use $(...) instead"
                )
            self.out.append(cmd[i:j])
            return j
        if ctx == "D":
            if c == '"':
                self.stack.pop()
            elif cmd.startswith("$((", i):
                self.stack.append("A")
                return self._emit("$((", i)
            elif cmd.startswith("$(", i):
                self.stack.append("P")
                return self._emit("$(", i)
            return self._emit(c, i)
        if ctx == "A":
            if c == "(":
                self.stack.append("P")
            elif c == ")" and cmd.startswith("))", i):
                self.stack.pop()
                return self._emit("))", i)
            return self._emit(c, i)
        # Unquoted: the top level, inside $(...) / (...), or inside case ... esac.
        if c == "'":
            j = cmd.find("'", i + 1)
            if j < 0:
                # sh would fail with "Unterminated quoted string" at launch (issue 20 item 13).
                self.problems.append("a single quote is not closed")
            j = self.n if j < 0 else j + 1
            self.out.append(cmd[i:j])
            return j
        if c == "\n" and self.heredocs:
            self.out.append("\n")
            return self._bodies(i + 1)
        if c == '"':
            self.stack.append("D")
        elif c == "#" and (i == 0 or cmd[i - 1] in _WORD_BREAK):
            j = cmd.find("\n", i)
            j = self.n if j < 0 else j
            self.out.append(cmd[i:j])
            return j
        elif cmd.startswith("<<", i) and not cmd.startswith("<<<", i):
            return self._heredoc(i)
        elif c == "$":
            return self._dollar(i)
        elif _keyword(cmd, i, "case") and _at_command_start(cmd, i):
            self.stack.append("C")
            return self._emit("case", i)
        elif ctx == "C" and _keyword(cmd, i, "esac"):
            self.stack.pop()
            return self._emit("esac", i)
        elif c == "(":
            self.stack.append("P")
        elif c == ")" and ctx == "P":
            self.stack.pop()
        return self._emit(c, i)

    def _dollar(self, i: int) -> int:
        cmd = self.cmd
        if cmd.startswith("$((", i):
            self.stack.append("A")
            return self._emit("$((", i)
        if cmd.startswith("$(", i):
            self.stack.append("P")
            return self._emit("$(", i)
        if cmd.startswith("${", i):
            return self._braced(i)
        m = _NAME.match(cmd, i + 1)
        if m is None:
            return self._emit("$", i)
        self.out.append(self._quoted(m.group(), cmd[i : m.end()]))
        return m.end()

    def _quoted(self, name: str, text: str) -> str:
        if name == "PAI_USER_ARGS":
            return '"$@"'
        return '"${' + name + '}"' if _quoted_var(name) else text

    def _braced(self, i: int) -> int:
        cmd = self.cmd
        end = _brace_end(cmd, i)
        if end is None:
            return self._emit("${", i)
        text, body = cmd[i:end], cmd[i + 2 : end - 1]
        m = _NAME.match(body)
        if m is not None and m.end() == len(body):
            self.out.append(self._quoted(body, text))
            return end
        if m is None or not _quoted_var(m.group()):
            # ${#NAME} (a length: digits), or another variable: left as written, unless a
            # contract variable hides inside, which would expand unquoted.
            if not body.startswith("#") and _CONTRACT_REF.search(body):
                self.problems.append(
                    f"{text} expands a contract variable inside another "
                    "expansion, where it cannot be quoted"
                )
            self.out.append(text)
            return end
        name, rest = m.group(), body[m.end() :]
        op = next((o for o in _PARAM_OPS if rest.startswith(o)), None)
        word = rest[len(op) :] if op else None
        safe = _SAFE_PATTERN if op in ("%", "%%", "#", "##") else _SAFE_WORD
        if name == "PAI_USER_ARGS" or op is None or word is None or not safe.fullmatch(word):
            self.problems.append(
                f'{text} cannot be made split-proof; write "{text}" in double quotes'
                if name != "PAI_USER_ARGS"
                else f"{text}: use $PAI_USER_ARGS as it is"
            )
            self.out.append(text)
            return end
        self.out.append(f'"{text}"')
        return end

    def _heredoc(self, i: int) -> int:
        cmd = self.cmd
        j = i + 2
        strip = cmd.startswith("-", j)
        j += strip
        while j < self.n and cmd[j] in _BLANKS:
            j += 1
        k = j
        while k < self.n and cmd[k] not in _WORD_BREAK:
            if cmd[k] in "'\"":
                close = cmd.find(cmd[k], k + 1)
                k = self.n if close < 0 else close + 1
                continue
            k += 2 if cmd[k] == "\\" else 1
        word = cmd[j:k]
        delimiter = re.sub(r"""\\(.)|['"]""", lambda mm: mm.group(1) or "", word)
        if not delimiter:
            self.problems.append("a here-document (<<) without a delimiter word")
        else:
            self.heredocs.append((delimiter, strip))
        self.out.append(cmd[i:k])
        return k

    def _bodies(self, i: int) -> int:
        """Copy the pending here-document bodies, each up to its delimiter line, as written."""
        cmd = self.cmd
        for delimiter, strip in self.heredocs:
            while True:
                if i >= self.n:
                    self.problems.append(
                        f"the here-document <<{delimiter} is not ended by a line {delimiter}"
                    )
                    self.heredocs = []
                    return i
                nl = cmd.find("\n", i)
                line_end = self.n if nl < 0 else nl + 1
                line = cmd[i:line_end]
                self.out.append(line)
                i = line_end
                if (line.rstrip("\n").lstrip("\t") if strip else line.rstrip("\n")) == delimiter:
                    break
        self.heredocs = []
        return i


DOCS_HINT = 'see docs/contract.md, "Parameter values are data, never code"'


def problems_with_hints(cmd: str) -> list[tuple[str, str]]:
    """(problem, hint) for what the rewrite cannot make split-proof, and for a contract
    variable that eval or `sh -c` would parse again as code (validate refuses these)."""
    rw = _Rewriter(cmd)
    rw.run()
    return [(p, DOCS_HINT) for p in rw.problems] + reevaluations(cmd)


def problems(cmd: str) -> list[str]:
    """What in the command cannot run safely (validate refuses these)."""
    return [problem for problem, _ in problems_with_hints(cmd)]


def rewrite(cmd: str) -> str:
    """The command with contract variables made split-proof (see the module docstring)."""
    rw = _Rewriter(cmd)
    text = rw.run()
    found = [(p, DOCS_HINT) for p in rw.problems] + reevaluations(cmd)
    if found:
        raise ShellRewriteError(
            f"the component's command cannot be run safely: {found[0][0]}", hint=found[0][1]
        )
    return text


def script(run: Run, role: str | None = None, *, install_requirements: bool = True) -> str:
    prelude = PRELUDE if install_requirements else PRELUDE.splitlines(keepends=True)[0]
    kind = job_kind(run.job_type)
    if role is not None and kind.has_role(role) and not kind.role(role).runs_command:
        return prelude + MPI_WORKER_WAIT
    if run.torch_elastic is not None:
        return prelude + torch_elastic_launch(run, role, rewrite(run.component.command))
    body = prelude + rewrite(run.component.command)
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
) -> list[str]:
    """The argv a replica runs: `sh -c SCRIPT sh ARGS...` (ARGS = the hyperparameters as argv),
    behind trainstack's in-container launcher when the run needs it (`uses_launcher`).

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
        script(run, role, install_requirements=install_requirements),
        SHELL,
        *user_args(run),
    ]
    if not uses_launcher(run, role, ships_logs=log_dir is not None):
        return argv
    ft = run.fault_tolerance
    options = []
    if ft is not None and ft.hang_timeout_seconds is not None:
        options.append(f"--hang-timeout={ft.hang_timeout_seconds}")
    options.append(f"--grace={grace_seconds:g}")
    if events_dir is not None:
        options.append(f"--events-dir={events_dir}")
    if termination_log is not None:
        options.append(f"--termination-log={termination_log}")
    if log_dir is not None:
        options.append(f"--log-dir={log_dir}")
    program = Layout.at(root).launcher + launcher.FILE
    return [*LAUNCHER_PYTHON, program, *options, "--", *argv]


def uses_launcher(run: Run, role: str | None = None, *, ships_logs: bool = False) -> bool:
    """Whether a replica runs behind the in-container launcher: where the run asks for hang
    detection (`faultTolerance.hangTimeout`) or its logs are shipped to an artifact store
    (`ships_logs`), except in a role that never runs the command (an MPI worker waits, silent
    by design, for the launcher's ranks)."""
    ft = run.fault_tolerance
    if not ships_logs and (ft is None or ft.hang_timeout_seconds is None):
        return False
    kind = job_kind(run.job_type)
    return not (role is not None and kind.has_role(role) and not kind.role(role).runs_command)

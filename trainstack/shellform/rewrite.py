"""The component's command made split-proof for `sh -c` (trainstack.contract.shell runs it;
spec validation refuses what cannot be): contract variables where the shell would word-split
are quoted, `$PAI_USER_ARGS` becomes `"$@"`, and the forms that cannot be made safe are listed.
Below spec and contract, which both use it (docs/contract.md, "Parameter values are data,
never code")."""

from __future__ import annotations

import re

from trainstack.contractnames import PAI_PREFIX
from trainstack.errors import UserError
from trainstack.shellform.reeval import CONTRACT_REF as _CONTRACT_REF
from trainstack.shellform.reeval import reevaluations

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_BREAK = " \t\n;&|()<>"
_BLANKS = " \t"
# `${NAME<op>word}`: the operators POSIX defines, longest first.
_PARAM_OPS = (":-", ":=", ":?", ":+", "%%", "##", "-", "=", "?", "+", "%", "#")
# A word after the operator that means the same quoted or not: no blanks, quotes, `$`, `\\`
# or backquotes; glob characters only after the pattern operators, where they stay patterns.
_SAFE_WORD = re.compile(r"[A-Za-z0-9_./:,+=@%^-]*")
_SAFE_PATTERN = re.compile(r"[A-Za-z0-9_./:,+=@%^*?\[\]!-]*")
# Words after which a command (and so the `case` keyword) may start.
_COMMAND_WORDS = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "{"})


class ShellRewriteError(UserError):
    """The command uses a shell form the rewrite cannot make split-proof."""


def _quoted_var(name: str) -> bool:
    return name.startswith(PAI_PREFIX) or name in ("MODEL", "METRICS") or name.startswith("MODEL_")


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
                # sh would fail with "Unterminated quoted string" at launch.
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

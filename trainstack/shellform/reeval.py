"""Commands that parse a contract variable's value again as shell code.

The rewrite in `shell.py` keeps every value one word, but two forms hand a value back to a
shell parser, where it runs as code whatever the quoting:
- `eval ARGS`: eval joins its arguments and parses them as a command (POSIX, "eval"), so
  `eval python main.py $PAI_USER_ARGS` with the value `x; rm -rf ~` runs `rm`;
- `sh -c SCRIPT` (bash, dash, zsh, ksh, ash too): SCRIPT is parsed as code, so a contract
  variable the outer shell expands into it (`sh -c "python main.py $PAI_USER_ARGS"`) becomes
  code. In a single-quoted script the inner shell expands it, which is data, and allowed.

The scan is lexical (shlex, quotes kept): a command position is the start, or what follows
`;`, `&`, `|`, `(`, `)`, a newline or a keyword such as `then`; `exec`, `command`, `env`,
`nohup`, `time` and `VAR=value` assignments before the command word are skipped.
"""

from __future__ import annotations

import re
import shlex

CONTRACT_REF = re.compile(r"\$\{?(PAI_[A-Za-z0-9_]*|MODEL[A-Za-z0-9_]*|METRICS)\b")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"})
_WRAPPERS = frozenset({"exec", "command", "env", "nohup", "time", "nice"})
_KEYWORDS = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "{", "}"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
SAFE_EVAL_HINT = (
    "drop eval: `python main.py $PAI_USER_ARGS` already gives the program every value as one "
    "argument, which no shell parses again"
)
SAFE_SH_C_HINT = (
    "single-quote the script and pass the values as its arguments: "
    "sh -c 'python main.py \"$@\"' sh $PAI_USER_ARGS (the inner shell gets them as $1, $2, …)"
)


def reevaluations(cmd: str) -> list[tuple[str, str]]:
    """(problem, hint) for each eval or `sh -c` that would parse a contract variable as code."""
    if not CONTRACT_REF.search(cmd):
        return []
    lexer = shlex.shlex(cmd.replace("\n", " ; "), posix=False, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        return []  # an unclosed quote: shell.py reports it
    found: list[tuple[str, str]] = []
    for words in _simple_commands(tokens):
        found += _check(words)
    return found


def _simple_commands(tokens: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token and all(c in ";&|()" for c in token):
            commands.append([])
        elif not commands[-1] and token in _KEYWORDS:
            continue
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _check(words: list[str]) -> list[tuple[str, str]]:
    i = 0
    while i < len(words) and (words[i] in _WRAPPERS or _ASSIGNMENT.match(words[i])):
        i += 1
    if i == len(words):
        return []
    name, args = words[i].rsplit("/", 1)[-1], words[i + 1 :]
    if name == "eval":
        refs = [m.group() for a in args if not a.startswith("'") for m in CONTRACT_REF.finditer(a)]
        if refs:
            return [
                (
                    f"eval parses its arguments again as shell code: a value of {refs[0]} "
                    "would run as a command",
                    SAFE_EVAL_HINT,
                )
            ]
    if name in _SHELLS:
        for j, arg in enumerate(args):
            if not arg.startswith("-") or arg.startswith("--"):
                break
            if "c" in arg[1:] and j + 1 < len(args):
                script = args[j + 1]
                ref = None if script.startswith("'") else CONTRACT_REF.search(script)
                if ref:
                    return [
                        (
                            f"{name} -c runs its script argument as code: {ref.group()} "
                            "expanded into it would run as a command",
                            SAFE_SH_C_HINT,
                        )
                    ]
                break
    return []

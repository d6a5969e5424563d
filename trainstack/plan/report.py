"""Show a plan: JSON for machines and pull requests, wrapped text blocks for people."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from rich.console import Console

from trainstack.plan.engine import Plan

_SUMMARY_WIDTH = 110
# Piped (CI logs, `| less`), a table is this wide: rich wraps each cell into it.
PIPED_WIDTH = 100


def console_width(is_tty: bool) -> int | None:
    """The terminal's own width on a terminal (rich reads it), else PIPED_WIDTH."""
    return None if is_tty else PIPED_WIDTH


def _binary(value: object) -> str:
    """A ConfigMap's binaryData entry (base64) as its size and digest: the code tarball is
    kilobytes of base64 nobody reads."""
    import base64
    import binascii
    import hashlib

    try:
        raw = base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        return f"<{len(str(value))} characters>"
    size = f"{len(raw)} B" if len(raw) < 1024 else f"{len(raw) / 1024:.1f} KiB"
    return f"<{size}, sha256:{hashlib.sha256(raw).hexdigest()[:12]}>"


def plan_json(plan: Plan, *, kind: str, env: str) -> str:
    counts: dict[str, int] = {}
    for r in plan.resources:
        counts[r.op] = counts.get(r.op, 0) + 1
    doc = {
        "kind": kind,
        "env": env,
        "project": plan.project,
        "stack": plan.stack,
        "summary": dict(sorted(counts.items())),
        "resources": [r.to_json() for r in plan.resources],
        "outputs": plan.outputs,
        "pending": plan.pending,
        "notes": plan.notes,
        # which templates came from the platform project rather than trainstack (docs/templates.md)
        "templates": {
            "replaced": list(plan.templates.replaced) if plan.templates else [],
            "added": list(plan.templates.added) if plan.templates else [],
        },
    }
    return json.dumps(doc, indent=2, sort_keys=True)


def key_inputs(inputs: dict[str, Any], width: int = _SUMMARY_WIDTH) -> str:
    """``k=v`` for the scalar inputs, nested ones dotted; long lists and blobs abbreviated."""
    parts: list[str] = []

    def walk(prefix: str, value: Any, depth: int) -> None:
        if prefix.startswith("binaryData.") and not isinstance(value, (dict, list)):
            parts.append(f"{prefix}={_binary(value)}")
        elif isinstance(value, dict) and depth < 2:
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v, depth + 1)
        elif isinstance(value, list):
            scalars = all(not isinstance(v, (dict, list)) for v in value)
            compact = json.dumps(value, separators=(",", ":"))
            if scalars:
                parts.append(f"{prefix}=[{','.join(map(str, value))}]")
            else:  # small structures (a taint, a label or two) are worth showing whole
                shown = compact if len(compact) <= 70 else f"[{len(value)} items]"
                parts.append(f"{prefix}={shown}")
        elif isinstance(value, dict):
            parts.append(f"{prefix}={{…}}")
        else:
            text = " ".join(str(value).split())  # an embedded JSON file's newlines and indent
            parts.append(f"{prefix}={text[:40] + '…' if len(text) > 40 else text}")

    walk("", {k: v for k, v in inputs.items() if k not in ("apiVersion", "kind")}, 0)
    line = " ".join(parts)
    return line if len(line) <= width else line[: width - 1] + "…"


def print_plan(plan: Plan, console: Console, *, kind: str, env: str) -> None:
    """One block per resource — its op, type and name on the first line, then its parent,
    options and key inputs wrapped to the console's width (its terminal's, or PIPED_WIDTH) —
    so no identifier is cut and no line runs past the width."""
    width = console.width
    console.print(
        f"{kind} plan for env {env!r}: project {plan.project}, stack {plan.stack}", markup=False
    )
    for r in plan.resources:
        head = f"{r.op:<6} {r.type}  {r.name}"
        if len(head) > width:  # a long type and name: each on its own line, never cut
            head = f"{r.op:<6} {r.type}\n{'':<7}{r.name}"
        console.print(head, markup=False, highlight=False, soft_wrap=True)
        flags = ",".join(
            f for f, on in (("protect", r.protect), ("retainOnDelete", r.retain_on_delete)) if on
        )
        details = " ".join(
            part
            for part in (
                f"parent={r.parent}" if r.parent else "",
                f"options={flags}" if flags else "",
                key_inputs(r.inputs, width=10 * width),
            )
            if part
        )
        for line in textwrap.wrap(details, width=width - 7, break_on_hyphens=False):
            console.print(" " * 7 + line, markup=False, highlight=False, soft_wrap=True)
    console.print("stack outputs:", markup=False)
    for key, value in sorted(plan.outputs.items()):
        text = value if isinstance(value, str) else json.dumps(value)
        wrapped = textwrap.wrap(
            f"{key} = {text}", width=width - 2, subsequent_indent="    ", break_on_hyphens=False
        )
        for line in wrapped or [f"{key} ="]:
            console.print("  " + line, markup=False, highlight=False, soft_wrap=True)
    # Never wrapped: a pending step ends in a command to paste, whole, from a pipe too.
    for step in plan.pending:
        console.print(f"pending: {step}", markup=False, highlight=False, soft_wrap=True)
    for note in plan.notes:
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    if plan.templates is not None:
        console.print(plan.templates.summary(), markup=False, highlight=False, soft_wrap=True)
    creates = sum(1 for r in plan.resources if r.op == "create")
    reads = len(plan.resources) - creates
    console.print(
        f"{creates} to create"
        + (f", {reads} to read" if reads else "")
        + " (offline plan: nothing was contacted, secrets shown as [secret])",
        markup=False,
    )


def markdown_section(target: str, text: str) -> str:
    """A file's plan as a section of a workflow's step summary: its heading, then the text in a
    fence longer than any run of backticks inside it (a command or a ConfigMap may hold
    three), so nothing in the text can end the block."""
    import re

    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"### {target}\n\n{fence}\n{body}{fence}\n\n"

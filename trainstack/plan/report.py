"""Show a plan: JSON for machines and pull requests, a rich table for people."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainstack.plan.engine import Plan

_SUMMARY_WIDTH = 110


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
    }
    return json.dumps(doc, indent=2, sort_keys=True)


def key_inputs(inputs: dict[str, Any], width: int = _SUMMARY_WIDTH) -> str:
    """``k=v`` for the scalar inputs, nested ones dotted; long lists and blobs abbreviated."""
    parts: list[str] = []

    def walk(prefix: str, value: Any, depth: int) -> None:
        if isinstance(value, dict) and depth < 2:
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
            text = str(value).replace("\n", " ")
            parts.append(f"{prefix}={text[:40] + '…' if len(text) > 40 else text}")

    walk("", {k: v for k, v in inputs.items() if k not in ("apiVersion", "kind")}, 0)
    line = " ".join(parts)
    return line if len(line) <= width else line[: width - 1] + "…"


def print_plan(plan: Plan, console: Console, *, kind: str, env: str) -> None:
    table = Table(
        title=f"{kind} plan for env {env!r}: project {plan.project}, stack {plan.stack}",
        show_lines=False,
        expand=False,
    )
    table.add_column("op")
    table.add_column("type", style="cyan", no_wrap=True)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("parent")
    table.add_column("options")
    table.add_column("key inputs", overflow="fold")
    for r in plan.resources:  # escape: "[secret]" must print, not be read as rich markup
        flags = ",".join(
            f for f, on in (("protect", r.protect), ("retainOnDelete", r.retain_on_delete)) if on
        )
        table.add_row(
            r.op,
            escape(r.type),
            escape(r.name),
            escape(r.parent or ""),
            escape(flags),
            escape(key_inputs(r.inputs)),
        )
    console.print(table)
    outputs = Table(title="stack outputs")
    outputs.add_column("output", style="bold")
    outputs.add_column("value", overflow="fold")
    for key, value in sorted(plan.outputs.items()):
        outputs.add_row(escape(key), escape(value if isinstance(value, str) else json.dumps(value)))
    console.print(outputs)
    for step in plan.pending:
        console.print(f"pending: {step}", markup=False)
    creates = sum(1 for r in plan.resources if r.op == "create")
    reads = len(plan.resources) - creates
    console.print(
        f"{creates} to create"
        + (f", {reads} to read" if reads else "")
        + " (offline plan: nothing was contacted, secrets shown as [secret])",
        markup=False,
    )

"""A policy report as text (people), JSON (machines) or GitHub workflow commands (annotations)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from trainstack.policy.model import Report


def text(reports: Sequence[Report]) -> str:
    lines: list[str] = []
    for r in reports:
        if not r.violations:
            lines.append(f"{r.target} on {r.env}: no violations")
            continue
        lines.append(
            f"{r.target} on {r.env}: {len(r.violations)} violation(s), {len(r.mandatory)} mandatory"
        )
        for v in r.violations:
            lines.append(f"  [{v.level.value}] {v.rule}: {v.resource}")
            lines.append(f"      field: {v.field}")
            lines.append(f"      found: {v.found}")
            lines.append(f"      fix:   {v.fix}")
    return "\n".join(lines)


def as_json(reports: Sequence[Report]) -> str:
    return json.dumps(
        [
            {"target": r.target, "env": r.env, "violations": [v.to_json() for v in r.violations]}
            for r in reports
        ],
        indent=2,
        sort_keys=True,
    )


def escape_data(text: str) -> str:
    """GitHub workflow command data: %, CR and LF escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_error(target: str, message: str) -> str:
    """A file that could not be checked, as an error annotation on it."""
    return f"::error file={escape_property(target)},title=not checked::" + escape_data(message)


def github(reports: Sequence[Report]) -> str:
    lines: list[str] = []
    for r in reports:
        for v in r.violations:
            kind = "error" if v.level.value == "mandatory" else "warning"
            file = "" if r.target == "platform" else f"file={escape_property(r.target)},"
            lines.append(
                f"::{kind} {file}title={escape_property(v.rule)}::"
                + escape_data(f"{v.resource}: {v.field}: {v.found}. fix: {v.fix}")
            )
    return "\n".join(lines)

"""Diagnostics as GitHub workflow commands: ``::error file=…,line=…,col=…::message`` shows inline
on the pull request's diff."""

from __future__ import annotations

import contextlib
import os

from trainstack.errors import Diagnostic
from trainstack.policy.report import escape_data, escape_property


def annotation(d: Diagnostic) -> str:
    props = []
    if d.file:
        path = d.file
        if os.path.isabs(path):  # annotations take repository-relative paths
            with contextlib.suppress(ValueError):  # another drive (Windows)
                path = os.path.relpath(path)
        props.append(f"file={escape_property(path)}")
    if d.line is not None:
        props.append(f"line={d.line}")
        if d.column is not None:
            props.append(f"col={d.column}")
    props.append(f"title={escape_property(d.code)}")
    text = f"{d.path}: {d.message}" if d.path else d.message
    if d.hint:
        text += f" (hint: {d.hint})"
    return f"::error {','.join(props)}::{escape_data(text)}"

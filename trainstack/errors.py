"""The one error hierarchy users see.

Every failure a user can fix is a ``UserError``; the CLI prints it without a traceback and exits
with its ``exit_code``. Anything else escaping the CLI is a bug in trainstack.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem in one file, located as precisely as we can."""

    file: str
    line: int | None
    column: int | None
    path: str
    message: str
    hint: str | None = None
    code: str = "invalid"

    def render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def to_json(self) -> dict[str, object]:
        return asdict(self)


class UserError(Exception):
    """A problem the user can fix; printed as-is, never with a traceback."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        return self.message + (f"\n    hint: {self.hint}" if self.hint else "")

    def diagnostics(self) -> list[Diagnostic]:
        return [
            Diagnostic(
                file="",
                line=None,
                column=None,
                path="",
                message=self.message,
                hint=self.hint,
                code=type(self).__name__,
            )
        ]


class SpecError(UserError):
    """One or more diagnostics against spec files."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self._diagnostics = sorted(set(diagnostics), key=_diag_key)
        if not self._diagnostics:
            raise ValueError("SpecError needs at least one diagnostic")
        super().__init__(self._diagnostics[0].message)

    def diagnostics(self) -> list[Diagnostic]:
        return list(self._diagnostics)

    def render(self) -> str:
        return "\n".join(d.render() for d in self._diagnostics)


def _diag_key(d: Diagnostic) -> tuple[str, int, int, str, str]:
    return (d.file, d.line or 0, d.column or 0, d.path, d.message)


class NotFoundError(UserError):
    """A file, run, component or stack the user named does not exist."""


class ConfigError(UserError):
    """Environment or stack configuration is missing or wrong."""


class ToolMissingError(UserError):
    """An external tool (the Pulumi CLI, …) is needed and not installed."""

    exit_code = 3


class MissingExtraError(ToolMissingError):
    """A Python package of an optional extra (trainstack.extras) is needed and not installed."""


class PolicyError(UserError):
    """A mandatory policy rule fired: ``deploy`` stops before anything is created."""

    exit_code = 1


class RunFailedError(UserError):
    """A run finished unsuccessfully; the message says where its logs are."""

    exit_code = 1


def diagnostics_json(diags: Sequence[Diagnostic]) -> str:
    return json.dumps([d.to_json() for d in diags], indent=2, sort_keys=True)

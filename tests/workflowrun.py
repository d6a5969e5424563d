"""Runs one job of a GitHub Actions workflow on this machine, step by step, as a hosted Linux
runner runs it: for the part of the syntax trainstack's workflow uses, and strictly, so that a
workflow using more fails the test instead of being half-run.

- Expressions (`${{ … }}`) are not evaluated: each one the job meets must be in the test's table
  of values (for text) or of conditions (for `if:`), by its exact text.
- `uses:` steps are not run: each action must be in the test's table of what stands in for it
  (the checkout is the temporary repository; setup-python is this interpreter's venv).
- `run:` steps run in a temporary file under the shell GitHub uses (the workflow syntax's
  `jobs.<job_id>.steps[*].shell`: unspecified is `bash -e {0}`, `bash` is
  `bash --noprofile --norc -eo pipefail {0}`, `sh` is `sh -e {0}`) with the workflow's, the job's
  and the step's `env`, `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` and `RUNNER_TEMP`.
- After a failed step the rest are skipped (every `if:` is implicitly `success() && …`).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

SHELLS: dict[str | None, tuple[str, ...]] = {
    None: ("bash", "-e", "{0}"),
    "bash": ("bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"),
    "sh": ("sh", "-e", "{0}"),
}
STEP_KEYS = {"name", "id", "if", "uses", "with", "run", "env", "shell"}
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.DOTALL)


@dataclass(frozen=True)
class Context:
    """What a step's `if:` may read: the environment it would get and earlier steps' outputs."""

    env: Mapping[str, str]
    outputs: Mapping[str, Mapping[str, str]]


Condition = Callable[[Context], bool]


@dataclass(frozen=True)
class StepOutcome:
    name: str
    ran: bool
    why: str = ""  # why it did not run
    code: int | None = None
    stdout: str = ""
    stderr: str = ""


@dataclass
class JobOutcome:
    ran: bool
    steps: list[StepOutcome] = field(default_factory=list)
    summary: str = ""
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)

    def step(self, name: str) -> StepOutcome:
        found = [s for s in self.steps if s.name == name]
        assert len(found) == 1, (name, [s.name for s in self.steps])
        return found[0]

    @property
    def failed(self) -> bool:
        return any(s.ran and s.code != 0 for s in self.steps)


@dataclass(frozen=True)
class Runner:
    """The stand-ins one job runs against."""

    values: Mapping[str, str]  # expression text -> its value
    conditions: Mapping[str, Condition]  # `if:` text (without `${{ }}`) -> its truth
    actions: Mapping[str, str]  # `uses:` -> what stands in for the action here
    skip: Mapping[str, str] = field(default_factory=dict)  # step name -> why it is not run
    env: Mapping[str, str] = field(default_factory=dict)  # the runner's own environment

    def text(self, value: object) -> str:
        def one(match: re.Match[str]) -> str:
            expr = match.group(1)
            if expr not in self.values:
                pytest.fail(f"the workflow uses ${{{{ {expr} }}}}, which this test gives no value")
            return self.values[expr]

        return EXPRESSION.sub(one, str(value))

    def holds(self, condition: object, context: Context) -> bool:
        text = str(condition).strip()
        whole = EXPRESSION.fullmatch(text)
        text = whole.group(1) if whole else text
        if text not in self.conditions:
            pytest.fail(f"the workflow's `if: {text}` is not one this test knows how to decide")
        return self.conditions[text](context)

    def run_job(self, workflow: Path, job_id: str, cwd: Path, temp: Path) -> JobOutcome:
        doc = yaml.safe_load(workflow.read_text())
        job: dict[str, Any] = doc["jobs"][job_id]
        env = {**self.env, "CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_TEMP": str(temp)}
        for scope in (doc, job):
            env.update({k: self.text(v) for k, v in (scope.get("env") or {}).items()})
        outcome = JobOutcome(ran=True)
        if "if" in job and not self.holds(job["if"], Context(env, outcome.outputs)):
            return JobOutcome(ran=False)
        default_shell = _default_shell(job) or _default_shell(doc)
        for index, step in enumerate(job["steps"]):
            unknown = set(step) - STEP_KEYS
            if unknown:
                pytest.fail(f"step {index} of {job_id} uses {sorted(unknown)}, not modelled here")
            name = str(step.get("name") or step.get("uses") or f"step {index}")
            outcome.steps.append(
                self._step(step, name, index, env, default_shell, cwd, temp, outcome)
            )
        return outcome

    def _step(
        self,
        step: dict[str, Any],
        name: str,
        index: int,
        job_env: dict[str, str],
        default_shell: str | None,
        cwd: Path,
        temp: Path,
        job: JobOutcome,
    ) -> StepOutcome:
        if job.failed:
            return StepOutcome(name, ran=False, why="a step before it failed")
        env = {**job_env, **{k: self.text(v) for k, v in (step.get("env") or {}).items()}}
        if "if" in step and not self.holds(step["if"], Context(env, job.outputs)):
            return StepOutcome(name, ran=False, why=f"if: {step['if']}")
        if "uses" in step:
            action = str(step["uses"])
            if action not in self.actions:
                pytest.fail(f"the workflow uses {action}, for which this test has no stand-in")
            return StepOutcome(name, ran=False, why=self.actions[action])
        if name in self.skip:
            return StepOutcome(name, ran=False, why=self.skip[name])
        shell = step.get("shell", default_shell)
        if shell not in SHELLS:
            pytest.fail(f"step {name!r} runs under {shell!r}, not modelled here")
        script = temp / f"step-{index}.sh"
        script.write_text(self.text(step["run"]))
        output, summary = temp / f"step-{index}.output", temp / f"step-{index}.summary"
        output.touch()
        summary.touch()
        env.update(GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary))
        argv = [str(script) if part == "{0}" else part for part in SHELLS[shell]]
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
        )
        if "id" in step:
            job.outputs[str(step["id"])] = _outputs(output)
        job.summary += summary.read_text()
        return StepOutcome(name, True, code=done.returncode, stdout=done.stdout, stderr=done.stderr)


def _default_shell(scope: Mapping[str, Any]) -> str | None:
    shell = ((scope.get("defaults") or {}).get("run") or {}).get("shell")
    return None if shell is None else str(shell)


def _outputs(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            pytest.fail(
                f"GITHUB_OUTPUT line {line!r} is not key=value (multi-line values: not modelled)"
            )
        values[key] = value
    return values


def runner_env(*path_first: Path) -> dict[str, str]:
    """A runner's environment: this machine's PATH behind the given folders, and no more."""
    path = os.pathsep.join([*(str(p) for p in path_first), os.environ.get("PATH", "")])
    return {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}

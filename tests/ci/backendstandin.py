"""A `pulumi` for the workflow's deploy job: the recording stand-in of tests/deploy/test_deploy.py
(`RecordingPulumi`), its backend kept in a JSON file between calls, so that a `trainstack deploy`
the workflow runs as a process of its own reaches the end of a deploy (no engine: `up` changes
nothing, as there). `write` puts the executable in a folder; each call is logged."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
_KEPT = ("tags", "deployments", "updates", "config")


def write(folder: Path, state: Path, stacks: dict[str, dict[str, str]], platform: Any) -> Path:
    """The executable ``folder/pulumi`` over a backend (in ``state``) holding ``stacks`` (name ->
    its tags) and a platform stack with the outputs ``platform``."""
    folder.mkdir(parents=True, exist_ok=True)
    state.write_text(
        json.dumps(
            {
                "stacks": sorted(stacks),
                "platform": platform,
                "tags": stacks,
                **{k: {} for k in _KEPT if k != "tags"},
            }
        )
    )
    exe = folder / "pulumi"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from tests.ci.backendstandin import main\n"
        f"sys.exit(main({str(state)!r}, sys.argv[1:]))\n"
    )
    exe.chmod(0o755)
    return exe


def main(state_file: str, args: list[str]) -> int:
    from tests.deploy.test_deploy import RecordingPulumi

    path = Path(state_file)
    # the Automation API adds this to every call, inside the `run` the recording one replaces
    args = [a for a in args if a != "--non-interactive"]
    with open(path.with_suffix(".log"), "a", encoding="utf-8") as log:
        log.write(" ".join(args) + "\n")
    if args[:1] == ["version"]:
        print("v3.272.0")
        return 0
    if args[:1] == ["login"]:
        print("stand-in: login done")
        return 0
    state = json.loads(path.read_text())
    cli = RecordingPulumi(stacks=set(state["stacks"]), platform=state["platform"])
    for key in _KEPT:
        setattr(cli, key, state[key])
    result = cli._locked(args, os.environ) or cli._answer(args)
    state.update({key: getattr(cli, key) for key in _KEPT}, stacks=sorted(cli.stacks))
    path.write_text(json.dumps(state))
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.code

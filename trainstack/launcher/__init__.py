"""The in-container launcher: `launcher.py` (standard library only) is the one program that runs
a replica's command in a pod and in a local run, so hang detection, restart records and their
reasons are the same code in both places. This module says where it lives and what it is called;
`trainstack.contract.shell.launch_command` puts it in front of the command.

In a pod the files come from the run's `<job>-trainstack-launcher` ConfigMap, mounted read-only
at /ml/launcher/ (trainstack.render.context); a local run copies it to `<run>/launcher/`
(trainstack.local.sandbox), the same place under the run's /ml tree.
"""

from __future__ import annotations

from importlib import resources

from trainstack.launcher.launcher import HANG_REASON, HUNG_EXIT_CODE

__all__ = [
    "EVENTS_SUFFIX",
    "FILE",
    "FILES",
    "HANG_REASON",
    "HUNG_EXIT_CODE",
    "MIN_HANG_TIMEOUT_SECONDS",
    "TERMINATION_LOG",
    "program_files",
]

FILE = "launcher.py"
# Everything shipped: the program and the module beside it that it imports.
FILES = (FILE, "logship.py", "activity.py")
# What the launcher appends each restart to, per replica: `<role>-<index>` + this.
EVENTS_SUFFIX = ".restarts.jsonl"
# The container's default terminationMessagePath: Kubernetes reports what is written there as
# `lastState.terminated.message` / `state.terminated.message`.
TERMINATION_LOG = "/dev/termination-log"
# The shortest spec.faultTolerance.hangTimeout: the launcher checks activity every
# min(1s, hangTimeout/5), so below this a slow interpreter start could be taken for a hang.
MIN_HANG_TIMEOUT_SECONDS = 5


def program_files() -> dict[str, str]:
    """The launcher's sources by file name, as shipped into pods and run directories."""
    here = resources.files("trainstack.launcher")
    return {name: here.joinpath(name).read_text(encoding="utf-8") for name in FILES}

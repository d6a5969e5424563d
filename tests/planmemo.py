"""The platform's offline plan, made once per test worker for each set of inputs.

Planning the platform runs the whole platform program under Pulumi's mocks (a fifth to half a
second each), and the plan, policy and infra tests plan the same shipped environments again and
again from fresh state homes and fresh copies of the project, where the plan cache
(trainstack/plan/platformcache.py) cannot answer. ``service.plan_platform`` is wrapped, for every
test, by a memo keyed as that cache keys its entries: the content of every file the program reads
(the project's two files, each CRD folder and file, the admin kubeconfig), the variables that can
change its result, the working directory, trainstack's source and the interpreter. The project's
folder and this test's temporary folder are part of the key only as placeholders, so a copy of
the project planned by another test is answered too; a plan that names either folder anywhere is
never kept, so no answer carries another test's paths.

What is not kept: a plan that raised (each call raises again), a plan whose inputs changed while
it ran, and stack config given through the environment (as the plan cache keeps none). An answer
is a copy of its own, and replays the warnings the program logged, as a cache hit does.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainstack.plan.engine import Plan

PlanPlatform = Callable[[str, "Path | None"], "Plan"]

_KEPT: dict[str, tuple[Plan, list[tuple[int, str]]]] = {}
_ROOT = "<project>"
_TMP = "<test folder>"


def _key(env: str, start: Path | None, test_folder: re.Pattern[str] | None) -> str | None:
    from trainstack.envfile import find_project
    from trainstack.errors import UserError
    from trainstack.infra.platform import inputs
    from trainstack.plan import platformcache

    environ = dict(os.environ)
    if inputs.config_in_environment(environ):
        return None
    try:
        project = find_project(start)
    except UserError:
        return None
    paths = platformcache._input_paths(project, env)
    states = [(str(path), platformcache._content_state(path)) for path in paths]
    if any(state is None for _, state in states):
        return None
    parts = [env, sys.version, platformcache._source_digest(), os.getcwd()]
    text = json.dumps([*parts, inputs.environment_inputs(environ), states], default=str)
    text = text.replace(str(project.root), _ROOT)
    if test_folder is not None:
        text = test_folder.sub(_TMP, text)
    return hashlib.sha256(text.encode()).hexdigest()


def _names_a_folder(plan: Plan, folders: list[str]) -> bool:
    text = json.dumps(
        [[r.to_json() for r in plan.resources], plan.outputs, plan.pending], default=str
    )
    return any(folder in text for folder in folders)


def memoized(
    real: PlanPlatform,
    basetemp: Path,
    kept: dict[str, tuple[Plan, list[tuple[int, str]]]] | None = None,
) -> PlanPlatform:
    """``real`` (``service.plan_platform``), answered from this worker's earlier plans of the
    same inputs (``kept``: another memo than the worker's)."""
    from trainstack.plan import platformcache

    kept = _KEPT if kept is None else kept

    test_folder = re.compile(re.escape(str(basetemp)) + r"/[^/\"]+")

    def plan_platform(env: str, start: Path | None = None) -> Plan:
        key = _key(env, start, test_folder)
        if key is not None and key in kept:
            plan, logged = kept[key]
            for level, message in logged:
                logging.getLogger().log(level, message)
            return copy.deepcopy(plan)
        with platformcache.logged_records() as logged:
            plan = real(env, start)
        if key is not None and key == _key(env, start, test_folder):
            from trainstack.envfile import find_project

            folders = [str(find_project(start).root), str(basetemp)]
            if not _names_a_folder(plan, folders):
                kept[key] = (copy.deepcopy(plan), list(logged))

        return plan

    return plan_platform

"""The platform program under the recording mocks, built once per test worker for each set of
its inputs.

Most infra tests build a shipped environment's platform program (a fifth to half a second under
Pulumi's mocks) and read what it registered; many build the same environment with the same
config. ``RecordingMocks.build`` keeps what a build registered and invoked, and what it
returned, under a key of everything the program reads: the stack config with its secret keys,
the project and stack names, the recorder's canned answers (stack outputs, secret output names)
and project root, the content of each CRD folder and the admin kubeconfig the config points at,
the variables that can change the program's result, the working directory and trainstack's
source. A second build with the same key gets copies of the registrations and invokes and the
same returned outputs (settled: reading them runs nothing), and the warnings the program logged
again.

Not kept: a build that raised, one whose inputs changed while it ran, and a recorder whose
answers a test replaced (``new_resource`` or ``call`` set on the instance).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# key -> (registrations, invokes, returned value, logged (level, message))
_KEPT: dict[str, tuple[list[Any], list[Any], Any, list[tuple[int, str]]]] = {}


def _key(recorder: Any) -> str | None:
    import pulumi
    from pulumi.runtime import config as sdk_config

    from trainstack.infra.platform import inputs
    from trainstack.plan import platformcache

    if {"new_resource", "call"} & set(vars(recorder)):
        return None
    root: Path = recorder.root
    values = {str(k): str(v) for k, v in sdk_config.CONFIG.get().items()}
    paths = platformcache.files_read(values, root)
    states = [(str(path), platformcache._content_state(path)) for path in paths]
    if any(state is None for _, state in states):
        return None
    parts = [
        sorted(values.items()),
        sorted(sdk_config._SECRET_KEYS.get()),
        pulumi.get_project(),
        pulumi.get_stack(),
        recorder.stack_outputs,
        recorder.secret_outputs,
        str(root),
        states,
        inputs.environment_inputs(dict(os.environ)),
        os.getcwd(),
        platformcache._source_digest(),
        sys.version,
    ]
    text = json.dumps(parts, default=repr, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def build_once(recorder: Any, build: Callable[[], Any]) -> Any:
    """``build()`` (the platform program run under ``recorder``), or what it gave before for the
    same inputs."""
    from trainstack.plan import platformcache

    key = _key(recorder)
    if key is not None and key in _KEPT:
        registered, invoked, value, logged = _KEPT[key]
        recorder.resources.extend(copy.deepcopy(registered))
        recorder.calls.extend(copy.deepcopy(invoked))
        for level, message in logged:
            logging.getLogger().log(level, message)
        return copy.copy(value)
    first_resource, first_call = len(recorder.resources), len(recorder.calls)
    with platformcache.logged_records() as logs:
        value = build()
    if key is not None and key == _key(recorder):
        _KEPT[key] = (
            copy.deepcopy(recorder.resources[first_resource:]),
            copy.deepcopy(recorder.calls[first_call:]),
            value,
            list(logs),
        )
    return copy.copy(value)

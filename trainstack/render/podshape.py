"""What a pod trainstack renders can hold: the one declaration the platform's pod admission
policy (trainstack/infra/platform/podguard.py) derives its allow-lists from, so the renderer and
the policy cannot drift (tests/infra/test_pod_guard.py renders every shipped run and admits each
of its pods through the evaluated policy).
"""

from __future__ import annotations

from typing import Any

from trainstack.render.options import RenderOptions
from trainstack.render.placement import rendered_tolerations

# The volume sources the renderer writes (render/code.py, render/context.py, render/storage.py,
# render/pod.py) and KubeDL adds to the pods it makes: emptyDir for git-sync (KubeDL v0.5.0
# pkg/code_sync/sync_handler.go:40), emptyDir and configMap for the MPI launcher
# (controllers/mpi/mpijob_controller.go:289-292, 367-375).
RENDERED_VOLUME_SOURCES = ("configMap", "emptyDir", "persistentVolumeClaim")
# file:// bindings on a single-user local cluster only (render/storage.py).
HOST_PATH_SOURCE = "hostPath"


def tolerations(options: RenderOptions) -> list[dict[str, Any]]:
    return rendered_tolerations(options)

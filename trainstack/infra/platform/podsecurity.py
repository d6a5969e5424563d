"""Pod Security Admission labels for every namespace the platform creates.

A team credential may create Jobs (and so pods) in its namespace; what those pods may do to the
node is decided by the namespace's ``pod-security.kubernetes.io/enforce`` level (Kubernetes "Pod
Security Admission", built in and on by default since 1.25; the levels are the "Pod Security
Standards"). Without the label a namespace admits privileged, hostPath, hostNetwork and hostPID
pods, and one team's pod could read every other team's volumes on its node.

- team namespaces: ``baseline`` — no privileged containers, host namespaces, hostPath volumes,
  host ports or added capabilities beyond the default set. Not ``restricted``: that level also
  requires ``runAsNonRoot`` and ``seccompProfile`` on every container, which neither the rendered
  jobs nor ordinary framework images (tensorflow/tensorflow, pytorch/pytorch, horovod/horovod run
  as root by default) satisfy, so it would refuse ordinary jobs. ``audit`` and ``warn`` are
  ``restricted`` so what a job would need to change is visible without refusing it.
- ``trainstack:hostPathVolumes: true`` (kubeconfig mode only, for a single-user local cluster such
  as kind, where ``file://`` bindings render hostPath volumes) makes team namespaces
  ``privileged``; the ``no-host-access`` policy rule follows the same setting.
- KubeDL's namespace: ``baseline`` as well; its controller needs nothing from the node.
- the admission namespace (``platformnames.ADMISSION_NAMESPACE``, volumepolicy.py): ``restricted``;
  it holds the admission policies' parameters and no pod of the platform's.

The version is pinned to the Kubernetes minor the platform's objects are checked against, so a
cluster upgrade does not tighten the rules under running teams unannounced.
"""

from __future__ import annotations

from enum import StrEnum

ENFORCE = "pod-security.kubernetes.io/enforce"
PREFIX = "pod-security.kubernetes.io/"
VERSION = "v1.30"  # the schema tests/infra checks the platform's objects against


class Level(StrEnum):
    PRIVILEGED = "privileged"
    BASELINE = "baseline"
    RESTRICTED = "restricted"


def labels(enforce: Level) -> dict[str, str]:
    """The six labels: enforce at ``enforce``, audit and warn at ``restricted``."""
    out: dict[str, str] = {}
    modes = (("enforce", enforce), ("audit", Level.RESTRICTED), ("warn", Level.RESTRICTED))
    for mode, level in modes:
        out[f"{PREFIX}{mode}"] = level.value
        out[f"{PREFIX}{mode}-version"] = VERSION
    return out


def team_level(host_path_volumes: bool) -> Level:
    return Level.PRIVILEGED if host_path_volumes else Level.BASELINE

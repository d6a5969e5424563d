"""The releases a Trainer environment installs by default: the versions every record of this
package is read from. Light on purpose: the plan cache keys on the CRD folders they name before it
decides whether to build the platform program."""

from __future__ import annotations

TRAINER_VERSION = "v2.3.0"
# The JobSet Trainer v2.3.0 installs beside itself (manifests/third-party/jobset/
# kustomization.yaml:19, 24).
JOBSET_VERSION = "v0.12.0"

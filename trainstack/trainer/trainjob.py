"""What a TrainJob (Kubeflow Trainer v2.3.0) may say about the pods its runtime makes: the
trainer fields, and the one place for the rest, `spec.runtimePatches`, with what a patch of a
replicated job's pod template may carry.

Paths are in github.com/kubeflow/trainer at tag v2.3.0; `trainjob_types.go` is
pkg/apis/trainer/v1alpha1/trainjob_types.go, `jobset.go`
pkg/runtime/framework/plugins/jobset/jobset.go.
"""

from __future__ import annotations

from trainstack.platformnames import TRAINJOB_PATCH_MANAGER

# A patch is keyed by its manager (listMapKey, trainjob_types.go:118-124, 293-301), a
# domain-prefixed path the webhook checks (jobset.go:175-176): trainstack's own.
PATCH_MANAGER = TRAINJOB_PATCH_MANAGER
# spec.trainer.env, .command and .args hold at most 128 entries each (trainjob_types.go:
# 253-273); runtimePatches at most 16 (trainjob_types.go:122).
MAX_TRAINER_ENV = 128
MAX_TRAINER_ARGV = 128
# What a patch may set on a replicated job's pod spec (PodSpecPatch, trainjob_types.go:
# 389-463): no priorityClassName, no topologySpreadConstraints, no ports, no workingDir.
POD_PATCH_FIELDS = frozenset(
    {
        "serviceAccountName",
        "volumes",
        "initContainers",
        "containers",
        "imagePullSecrets",
        "securityContext",
        "nodeSelector",
        "affinity",
        "tolerations",
        "schedulingGates",
        "terminationGracePeriodSeconds",
    }
)
# A container patch (ContainerPatch, trainjob_types.go:465-494) names a container the runtime
# already has (the webhook refuses any other, init containers too: jobset.go:193-202) and sets
# only env, volumeMounts and securityContext; env never on the trainer's `node` container, whose
# env is spec.trainer.env (jobset.go:203-205).
CONTAINER_PATCH_FIELDS = frozenset({"name", "env", "volumeMounts", "securityContext"})
# A container patch's volumeMounts are a list keyed by `name` (trainjob_types.go:483-488): a
# volume is mounted once.
VOLUME_MOUNT_KEY = "name"

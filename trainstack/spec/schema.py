"""The structural rules of the spec files, as cerberus schemas.

This is the single source of the shapes: the validator checks documents against it and
`trainstack schema` turns it into JSON Schema. Rules that relate fields to each other (or a run
to its component) live in `rules.py`. `meta.expect` says in words what a regex demands.
"""

from __future__ import annotations

from typing import Any

from trainstack import API_VERSION as API_VERSION
from trainstack import k8snames
from trainstack.kubedl.jobtype import JobType
from trainstack.spec.enums import Algorithm, BindingMode, Goal, ParamType, Pick, Scheduling

# At most 63: the name is the value of the trainstack.dev/component label, and a Kubernetes
# label value is at most 63 characters (Kubernetes "Labels and Selectors").
COMPONENT_NAME = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
RUN_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
SEMVER = r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
CHANNEL_NAME = r"[A-Za-z0-9-][A-Za-z0-9_-]{0,127}"
K8S_NAME = k8snames.NAME_253
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,254}"
# A Kubernetes Secret's name (a DNS subdomain) and one of its keys (a ConfigMap key: not "." or
# "..", not starting with ".."), each at most 253 characters: `secret-name/key`.
SECRET_REF = (
    r"(?=[^/]{1,253}/[^/]{1,253}$)" + k8snames.SUBDOMAIN + r"/\.?[-_A-Za-z0-9][-._A-Za-z0-9]*"
)
IMAGE = (
    r"([A-Za-z0-9.-]+(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?"
)
QUANTITY = r"[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?"
DURATION = r"([0-9]+[smhd])+"
RUN_DESCRIPTION = r"[^@^\\#$%&*<>'|\"/]*"

# The allowed lists come from the enums (one source per vocabulary: spec/enums.py).
JOB_TYPES = [j.value for j in JobType]
PARAM_TYPES = [t.value for t in ParamType]
BINDING_MODES = [m.value for m in BindingMode]
SCHEDULING = [s.value for s in Scheduling]
SCALAR = ["string", "integer", "float", "boolean"]
MAX_PARAMETERS = 100
MAX_ENV = 100
MAX_MODELS = 10
MAX_DATA_INPUTS = 10
# Every integer anywhere in a spec fits in 64 bits: Kubernetes' int32/int64 fields, JSON readers
# and the contract's consumers cannot hold more (structure.check applies it to the whole
# document, whatever the field).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _str(pattern: str | None = None, expect: str | None = None, **extra: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"type": "string", **extra}
    if pattern is not None:
        rule["regex"] = pattern
        rule["meta"] = {"expect": expect or f"text matching {pattern}"}
    return rule


def _bool() -> dict[str, Any]:
    return {"type": "boolean"}


def _int(lo: int | None = None, hi: int | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"type": "integer"}
    if lo is not None:
        rule["min"] = lo
    if hi is not None:
        rule["max"] = hi
    return rule


def _doc(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": {"type": "string", "required": True, "allowed": [API_VERSION]},
        "kind": {"type": "string", "required": True, "allowed": [kind]},
        "metadata": {"type": "dict", "required": True, "schema": metadata},
        "spec": {"type": "dict", "required": True, "schema": spec},
    }


_SECRET_REF_EXPECT = (
    "a Kubernetes Secret's name and key, such as hf-token/token (the name of "
    "the Secret, not the secret value)"
)
_QUANTITY = {
    "type": ["integer", "float", "string"],
    "regex": QUANTITY,
    "meta": {"expect": "a Kubernetes quantity such as 4, 500m, 16Gi"},
}

COMPONENT: dict[str, Any] = _doc(
    "Component",
    {
        "name": _str(
            COMPONENT_NAME,
            "1-63 lowercase letters, digits and '-', starting and ending with a letter or digit "
            "(it is a Kubernetes label value)",
            required=True,
        ),
        "version": _str(SEMVER, "a version x.y.z such as 1.0.0", required=True),
        "description": _str(maxlength=1024),
        "versionDescription": _str(maxlength=1024),
    },
    {
        "jobType": {"type": "string", "required": True, "allowed": JOB_TYPES},
        "image": _str(
            IMAGE,
            "an image reference such as registry.example.com/team/image:tag",
            required=True,
            maxlength=512,
        ),
        "imagePullSecret": {
            **_str(
                K8S_NAME, "the name of a Kubernetes secret (lowercase, digits, '-'), not a password"
            ),
            # A wrong value here is often a pasted password: never echo it.
            "meta": {
                "expect": "the name of a Kubernetes secret (lowercase, "
                "digits, '-'), not a password",
                "redact": True,
            },
        },
        "code": {
            "type": ["string", "dict"],
            "empty": False,
            "schema": {
                "git": _str(
                    r"(https?://|ssh://|git@)\S+",
                    "a git URL (https://, ssh:// or git@host:repo)",
                    required=True,
                ),
                "branch": _str(r"[^\s]{1,255}", "a branch name without spaces"),
                "commit": _str(r"[0-9a-f]{7,64}", "a commit hash (7-64 hex digits)"),
            },
        },
        "command": _str(required=True, empty=False, maxlength=16384),
        "inputs": {
            "type": "list",
            "schema": {
                "type": "dict",
                "schema": {
                    "name": _str(
                        CHANNEL_NAME,
                        "letters, digits, '_' and '-', not starting with '_'",
                        required=True,
                    ),
                    "description": _str(maxlength=1024),
                    "required": _bool(),
                },
            },
        },
        "outputs": {
            "type": "list",
            "schema": {
                "type": "dict",
                "schema": {
                    "name": _str(
                        CHANNEL_NAME,
                        "letters, digits, '_' and '-', not starting with '_'",
                        required=True,
                    ),
                    "description": _str(maxlength=1024),
                    "preload": _bool(),
                },
            },
        },
        "parameters": {
            "type": "list",
            "maxlength": MAX_PARAMETERS,
            "schema": {
                "type": "dict",
                "schema": {
                    "name": _str(
                        CHANNEL_NAME,
                        "letters, digits, '_' and '-', not starting with '_'",
                        required=True,
                    ),
                    "type": {"type": "string", "required": True, "allowed": PARAM_TYPES},
                    "default": {"type": SCALAR},
                    "required": _bool(),
                    "description": _str(maxlength=1024),
                    "range": {
                        "type": "dict",
                        "schema": {
                            "min": {"type": ["integer", "float"]},
                            "max": {"type": ["integer", "float"]},
                        },
                    },
                    "enum": {
                        "type": "list",
                        "minlength": 1,
                        "maxlength": 1000,
                        "schema": {"type": ["string", "integer", "float"]},
                    },
                },
            },
        },
        "constraints": {
            "type": "dict",
            "schema": {
                "machineType": {
                    "type": "list",
                    "minlength": 1,
                    "schema": {"type": "string", "allowed": ["cpu", "gpu"]},
                },
                "multiNode": _bool(),
                "multiGpu": _bool(),
            },
        },
    },
)

_URI_PATTERN = {
    "regex": r"[a-z][a-z0-9+.-]*://.*",
    "meta": {"expect": "a URI such as oss://bucket/path/"},
}
_BINDING_FORM = {
    "uri": {"type": "string", **_URI_PATTERN, "required": True},
    "type": {"type": "string", "allowed": ["file", "directory"]},
}

RUN: dict[str, Any] = _doc(
    "Run",
    {
        "name": _str(
            RUN_NAME,
            "1-64 letters, digits, '_' and '-', starting with a letter or digit",
            required=True,
        ),
        "description": _str(RUN_DESCRIPTION, "text without any of @^\\#$%&*<>'|\"/", maxlength=256),
        "experiment": _str(
            RUN_NAME, "1-64 letters, digits, '_' and '-', starting with a letter or digit"
        ),
        "tags": {
            "type": "dict",
            "maxlength": 20,
            "keysrules": {"type": "string"},
            "valuesrules": {"type": "string"},
        },
    },
    {
        "component": _str(required=True, empty=False),
        "parameters": {
            "type": "dict",
            "maxlength": MAX_PARAMETERS,
            "keysrules": {"type": "string"},
            "valuesrules": {"type": SCALAR},
        },
        # The plain-string form gets exactly the checks of its {uri: …} form: the same pattern
        # here (a regex applies to strings only, a schema to mappings only), the same
        # values.binding check in rules/run.py.
        "inputs": {
            "type": "dict",
            "keysrules": {"type": "string"},
            "valuesrules": {
                "type": ["string", "dict"],
                **_URI_PATTERN,
                "schema": {
                    **_BINDING_FORM,
                    "mode": {"type": "string", "allowed": BINDING_MODES},
                },
            },
        },
        "outputs": {
            "type": "dict",
            "keysrules": {"type": "string"},
            "valuesrules": {
                "type": ["string", "dict"],
                **_URI_PATTERN,
                "schema": dict(_BINDING_FORM),
            },
        },
        "models": {
            "type": "list",
            "maxlength": MAX_MODELS,
            "schema": {
                "type": "dict",
                "schema": {
                    "name": _str(
                        CHANNEL_NAME,
                        "letters, digits, '_' and '-', not starting with '_'",
                        required=True,
                    ),
                    "uri": _BINDING_FORM["uri"],
                    "version": {"type": ["string", "integer"]},
                },
            },
        },
        "resources": {
            "type": "dict",
            "keysrules": {"type": "string"},
            "valuesrules": {
                "type": "dict",
                "schema": {
                    "replicas": _int(1, 10000),
                    "cpu": _QUANTITY,
                    "memory": _QUANTITY,
                    "gpu": _int(0, 128),
                    "sharedMemory": _QUANTITY,
                },
            },
        },
        "priority": _int(1, 9),
        "scheduling": {"type": "string", "allowed": SCHEDULING},
        "spot": {
            "type": ["boolean", "dict"],
            "schema": {
                "bidDiscount": {"type": "integer", "allowed": [10, 20, 30, 40, 50, 60, 70, 80, 90]},
                "bidPrice": {"type": ["integer", "float"], "min": 0.0001},
            },
        },
        "faultTolerance": {
            "type": "dict",
            "schema": {
                "maxRestarts": _int(1, 128),
                "unconditional": _bool(),
                # No output, metrics or CPU/GPU for this long: the launcher restarts the
                # command in place (trainstack.launcher; at least MIN_HANG_TIMEOUT_SECONDS).
                "hangTimeout": {
                    "type": ["integer", "string"],
                    "regex": DURATION,
                    "min": 5,
                    "meta": {"expect": "seconds (at least 5), or a duration such as 30m, 1h"},
                },
            },
        },
        # PyTorch only: run the command under torchrun's elastic agent, so that when a replica
        # is recreated the others restart their workers and all resume (docs/contract.md).
        "torchElastic": {
            "type": "dict",
            "schema": {
                "maxRestarts": _int(0, 1000),
            },
        },
        "env": {
            "type": "dict",
            "maxlength": MAX_ENV,
            "keysrules": _str(ENV_NAME, "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"),
            "valuesrules": {"type": SCALAR},
        },
        # NAME → `secret-name/key`: the value comes from a Kubernetes Secret, never from the
        # spec. A wrong value here may be the pasted secret itself: never echo it.
        "secretEnv": {
            "type": "dict",
            "maxlength": MAX_ENV,
            "keysrules": _str(ENV_NAME, "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"),
            "valuesrules": {
                **_str(SECRET_REF, _SECRET_REF_EXPECT),
                "meta": {"expect": _SECRET_REF_EXPECT, "redact": True},
            },
        },
        "timeout": {
            "type": ["integer", "string"],
            "regex": DURATION,
            "min": 1,
            "meta": {"expect": "seconds, or a duration such as 90m, 24h, 1h30m, 2d"},
        },
        # How long the finished job (its pods and their logs) stays: ttlSecondsAfterFinished.
        "keepAfterFinished": {
            "type": ["integer", "string"],
            "regex": DURATION,
            "min": 1,
            "meta": {"expect": "seconds, or a duration such as 12h, 1d, 7d"},
        },
        # The replicas' logs stay in the artifact store for good (ModelArts' "permanent logs"),
        # beside the run's outputs, instead of expiring after the platform's logRetentionDays.
        "keepLogs": _bool(),
        "runAsUser": _int(0, 65535),
        "imagePullSecret": COMPONENT["spec"]["schema"]["imagePullSecret"],
        "namespace": _str(k8snames.LABEL_63, "a Kubernetes namespace name"),
        "serviceAccount": _str(K8S_NAME, "a Kubernetes service account name"),
        "advanced": {
            "type": "dict",
            "schema": {
                "customPortList": _str(
                    r"[0-9]+(-[0-9]+)?(;[0-9]+(-[0-9]+)?)*",
                    "ports and ranges separated by ';', such as 10000;10001-10010",
                ),
                "customPortNumPerWorker": _int(1, 65536),
                "createSvcForAllWorkers": _bool(),
            },
        },
    },
)


SWEEP_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]{0,55}"  # room for the trial suffix `-t000` in run names
SWEEP_ALGORITHMS = [a.value for a in Algorithm]
SWEEP_GOALS = [g.value for g in Goal]
SWEEP_PICKS = [p.value for p in Pick]
MAX_SWEEP_TRIALS = 10000
# A grid search's points are built all at once (optuna's GridSampler takes the whole product):
# ten times the most trials a sweep runs is room to spare, and still a small list.
MAX_GRID_POINTS = 10 * MAX_SWEEP_TRIALS

SWEEP: dict[str, Any] = _doc(
    "Sweep",
    {
        "name": _str(
            SWEEP_NAME,
            "1-56 letters, digits, '_' and '-', starting with a letter or digit",
            required=True,
        ),
        "description": RUN["metadata"]["schema"]["description"],
        "experiment": RUN["metadata"]["schema"]["experiment"],
        "tags": RUN["metadata"]["schema"]["tags"],
    },
    {
        # A path to a Run file (relative to this file), or a Run's `spec` section inline. Its
        # shape is the Run schema's; spec/rules/sweep.py checks an inline one as a Run.
        "run": {"type": ["string", "dict"], "required": True, "empty": False},
        # parameter name -> a list (grid points or choices) or {min, max, log}; the shapes
        # inside are checked against the component in spec/rules/sweep.py.
        "parameters": {
            "type": "dict",
            "required": True,
            "empty": False,
            "maxlength": MAX_PARAMETERS,
            "keysrules": {"type": "string"},
            "valuesrules": {"type": ["list", "dict"]},
        },
        "objective": {
            "type": "dict",
            "required": True,
            "schema": {
                "metric": _str(required=True, empty=False, maxlength=64),
                "goal": {"type": "string", "required": True, "allowed": SWEEP_GOALS},
                "value": {"type": "string", "allowed": SWEEP_PICKS},
            },
        },
        "algorithm": {"type": "string", "allowed": SWEEP_ALGORITHMS},
        "seed": _int(0, 2**31 - 1),
        "budget": {
            "type": "dict",
            "schema": {
                "trials": _int(1, MAX_SWEEP_TRIALS),
                "parallel": _int(1, 64),
                "timeout": {
                    "type": ["integer", "string"],
                    "regex": DURATION,
                    "min": 1,
                    "meta": {"expect": "seconds, or a duration such as 90m, 2h"},
                },
            },
        },
        "earlyStopping": {
            "type": "dict",
            "schema": {
                "startupTrials": _int(0, 1000),
                "warmupSteps": _int(0, 1000000),
            },
        },
    },
)

# The cerberus rules these schemas use. The compiled check (fastcheck) and the JSON Schema
# converter handle exactly these and refuse any other, so a new rule cannot silently go missing
# from either.
SCHEMA_RULES = frozenset(
    {
        "type",
        "required",
        "allowed",
        "regex",
        "min",
        "max",
        "minlength",
        "maxlength",
        "empty",
        "schema",
        "keysrules",
        "valuesrules",
        "meta",
    }
)

SCHEMAS: dict[str, dict[str, Any]] = {"Component": COMPONENT, "Run": RUN, "Sweep": SWEEP}

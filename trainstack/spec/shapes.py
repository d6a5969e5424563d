"""The building blocks of the spec's structural rules (cerberus): the patterns, limits and
rule makers that the model's field declarations (model.py) and the Sweep schema (schema.py) are
written with. `meta.expect` says in words what a regex demands.
"""

from __future__ import annotations

from typing import Any

from trainstack import API_VERSION as API_VERSION
from trainstack import k8snames
from trainstack.kubedl.jobtype import JobType
from trainstack.spec.enums import BindingMode, ParamType, Scheduling

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


def str_rule(pattern: str | None = None, expect: str | None = None, **extra: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"type": "string", **extra}
    if pattern is not None:
        rule["regex"] = pattern
        rule["meta"] = {"expect": expect or f"text matching {pattern}"}
    return rule


def bool_rule() -> dict[str, Any]:
    return {"type": "boolean"}


def int_rule(lo: int | None = None, hi: int | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"type": "integer"}
    if lo is not None:
        rule["min"] = lo
    if hi is not None:
        rule["max"] = hi
    return rule


def document(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": {"type": "string", "required": True, "allowed": [API_VERSION]},
        "kind": {"type": "string", "required": True, "allowed": [kind]},
        "metadata": {"type": "dict", "required": True, "schema": metadata},
        "spec": {"type": "dict", "required": True, "schema": spec},
    }


SECRET_REF_EXPECT = (
    "a Kubernetes Secret's name and key, such as hf-token/token (the name of "
    "the Secret, not the secret value)"
)
QUANTITY_RULE = {
    "type": ["integer", "float", "string"],
    "regex": QUANTITY,
    "meta": {"expect": "a Kubernetes quantity such as 4, 500m, 16Gi"},
}

URI_PATTERN = {
    "regex": r"[a-z][a-z0-9+.-]*://.*",
    "meta": {"expect": "a URI such as oss://bucket/path/"},
}
BINDING_FORM = {
    "uri": {"type": "string", **URI_PATTERN, "required": True},
    "type": {"type": "string", "allowed": ["file", "directory"]},
}
CHANNEL_EXPECT = "letters, digits, '_' and '-', not starting with '_'"
RUN_NAME_EXPECT = "1-64 letters, digits, '_' and '-', starting with a letter or digit"
ENV_NAME_EXPECT = "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
PULL_SECRET_EXPECT = "the name of a Kubernetes secret (lowercase, digits, '-'), not a password"
# A wrong value here is often a pasted password: never echo it.
PULL_SECRET_RULE = {
    **str_rule(K8S_NAME, PULL_SECRET_EXPECT),
    "meta": {"expect": PULL_SECRET_EXPECT, "redact": True},
}

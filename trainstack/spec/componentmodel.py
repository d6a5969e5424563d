"""A Component's typed model, each spec field declared once (trainstack.spec.fields.declare);
trainstack.spec.model re-exports it beside the Run's. The section aliases and the channel-name
rule are shared with the Run's declarations."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from trainstack.kubedl.jobtype import JobType
from trainstack.spec import shapes as sh
from trainstack.spec.enums import ParamType
from trainstack.spec.fields import Load, Section, declare

ParamValue = int | float | str | bool

N = Section.NESTED
M = Section.METADATA
S = Section.SPEC


@dataclass(frozen=True)
class Range:
    """Inclusive bounds. For String parameters the bounds apply to the value's length."""

    min: int | float | None = declare(N, "min", {"type": ["integer", "float"]}, default=None)
    max: int | float | None = declare(N, "max", {"type": ["integer", "float"]}, default=None)


def channel_name() -> dict[str, object]:
    return sh.str_rule(sh.CHANNEL_NAME, sh.CHANNEL_EXPECT, required=True)


@dataclass(frozen=True)
class Parameter:
    name: str = declare(N, "name", channel_name())
    type: ParamType = declare(
        N,
        "type",
        {"type": "string", "required": True, "allowed": sh.PARAM_TYPES},
        load=Load.ENUM,
        nested=ParamType,
    )
    default: ParamValue | None = declare(N, "default", {"type": sh.SCALAR}, default=None)
    required: bool = declare(N, "required", sh.bool_rule(), default=False)
    description: str = declare(N, "description", sh.str_rule(maxlength=1024), default="")
    range: Range | None = declare(
        N, "range", {"type": "dict"}, default=None, load=Load.OPTIONAL_NESTED, nested=Range
    )
    enum: tuple[ParamValue, ...] | None = declare(
        N,
        "enum",
        {
            "type": "list",
            "minlength": 1,
            "maxlength": 1000,
            "schema": {"type": ["string", "integer", "float"]},
        },
        default=None,
    )

    def __post_init__(self) -> None:
        # Floats written as integers (`lr: 1`) are floats, so the contract prints them alike.
        if self.type is ParamType.FLOAT:
            if self.default is not None:
                object.__setattr__(self, "default", float(self.default))
            if self.enum is not None:
                object.__setattr__(self, "enum", tuple(float(e) for e in self.enum))
        elif self.enum is not None and not isinstance(self.enum, tuple):
            object.__setattr__(self, "enum", tuple(self.enum))

    def coerce(self, value: ParamValue) -> ParamValue:
        """A value given for this parameter, as its type holds it."""
        return float(value) if self.type is ParamType.FLOAT else value


@dataclass(frozen=True)
class InputChannel:
    name: str = declare(N, "name", channel_name())
    description: str = declare(N, "description", sh.str_rule(maxlength=1024), default="")
    required: bool = declare(N, "required", sh.bool_rule(), default=False)


@dataclass(frozen=True)
class OutputChannel:
    name: str = declare(N, "name", channel_name())
    description: str = declare(N, "description", sh.str_rule(maxlength=1024), default="")
    # Filled from the bound location before the job starts (checkpoint resume).
    preload: bool = declare(N, "preload", sh.bool_rule(), default=False)


class CodeSource(enum.StrEnum):
    """Where a component's code comes from (`spec.code`). A StrEnum: its value is the word."""

    LOCAL = "local"  # a directory next to the component
    OSS = "oss"  # oss://bucket/prefix/
    GIT = "git"  # {git: URL, branch, commit}


class Scheme(enum.StrEnum):
    """A binding URI's scheme."""

    FILE = "file"
    OSS = "oss"
    NAS = "nas"
    PVC = "pvc"


@dataclass(frozen=True)
class GitCode:
    url: str = declare(
        N,
        "git",
        sh.str_rule(
            r"(https?://|ssh://|git@)\S+",
            "a git URL (https://, ssh:// or git@host:repo)",
            required=True,
        ),
    )
    branch: str | None = declare(
        N, "branch", sh.str_rule(r"[^\s]{1,255}", "a branch name without spaces"), default=None
    )
    commit: str | None = declare(
        N, "commit", sh.str_rule(r"[0-9a-f]{7,64}", "a commit hash (7-64 hex digits)"), default=None
    )


@dataclass(frozen=True)
class Code:
    """Where the component's code comes from. Exactly one of path/uri/git is set."""

    kind: CodeSource
    path: Path | None = None  # local: absolute directory
    uri: str | None = None  # oss://bucket/prefix/
    git: GitCode | None = None


@dataclass(frozen=True)
class Constraints:
    machine_types: tuple[str, ...] = declare(
        N,
        "machineType",
        {"type": "list", "minlength": 1, "schema": {"type": "string", "allowed": ["cpu", "gpu"]}},
        default=("cpu", "gpu"),
        load=Load.UNIQUE,
    )
    multi_node: bool = declare(N, "multiNode", sh.bool_rule(), default=True)
    multi_gpu: bool = declare(N, "multiGpu", sh.bool_rule(), default=True)


@dataclass(frozen=True)
class Component:
    # training_job.json's "component": what the process may want to know of its component.
    name: str = declare(
        M,
        "name",
        sh.str_rule(
            sh.COMPONENT_NAME,
            "1-63 lowercase letters, digits and '-', starting and ending with a letter or digit "
            "(it is a Kubernetes label value)",
            required=True,
        ),
    )
    version: str = declare(
        M, "version", sh.str_rule(sh.SEMVER, "a version x.y.z such as 1.0.0", required=True)
    )
    job_type: JobType = declare(
        S,
        "jobType",
        {"type": "string", "required": True, "allowed": sh.JOB_TYPES},
        load=Load.ENUM,
        nested=JobType,
    )
    image: str = declare(
        S,
        "image",
        sh.str_rule(
            sh.IMAGE,
            "an image reference such as registry.example.com/team/image:tag",
            required=True,
            maxlength=512,
        ),
    )
    command: str = declare(S, "command", sh.str_rule(required=True, empty=False, maxlength=16384))
    # Words for people, not the process.
    description: str = declare(M, "description", sh.str_rule(maxlength=1024), default="", job=False)
    version_description: str = declare(
        M,
        "versionDescription",
        sh.str_rule(maxlength=1024),
        default="",
        job=False,
    )
    # The run's own (which may override it) is written.
    image_pull_secret: str | None = declare(
        S, "imagePullSecret", sh.PULL_SECRET_RULE, default=None, job=False
    )
    # Written as where it came from (its kind): the process finds the code in its working
    # directory.
    code: Code | None = declare(
        S,
        "code",
        {"type": ["string", "dict"], "empty": False},
        default=None,
        load=Load.CODE,
        nested=GitCode,
    )
    # The run's bindings and values of these are written, under the run's fields.
    inputs: tuple[InputChannel, ...] = declare(
        S,
        "inputs",
        {"type": "list"},
        default=(),
        load=Load.NESTED_LIST,
        nested=InputChannel,
        job=False,
    )
    outputs: tuple[OutputChannel, ...] = declare(
        S,
        "outputs",
        {"type": "list"},
        default=(),
        load=Load.NESTED_LIST,
        nested=OutputChannel,
        job=False,
    )
    parameters: tuple[Parameter, ...] = declare(
        S,
        "parameters",
        {"type": "list", "maxlength": sh.MAX_PARAMETERS},
        default=(),
        load=Load.NESTED_LIST,
        nested=Parameter,
        job=False,
    )
    # Checked before the job exists; nothing for the process.
    constraints: Constraints = declare(
        S,
        "constraints",
        {"type": "dict"},
        factory=Constraints,
        load=Load.NESTED,
        nested=Constraints,
        job=False,
    )
    source: Path | None = None  # the component.yaml it was loaded from

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def input(self, name: str) -> InputChannel | None:
        return next((c for c in self.inputs if c.name == name), None)

    def output(self, name: str) -> OutputChannel | None:
        return next((c for c in self.outputs if c.name == name), None)

"""The closed vocabularies of the specs: one enum each, from which the cerberus schema's
allowed lists (spec/schema.py), the models and the sweep engine all read. JobType lives with the
job-kind model (trainstack.kubedl.jobtype)."""

from __future__ import annotations

import enum


class ParamType(enum.StrEnum):
    INT = "Int"
    FLOAT = "Float"
    STRING = "String"
    BOOL = "Bool"


class Scheduling(enum.StrEnum):
    INTELLIGENT = "intelligent"
    CENTRALIZED = "centralized"
    SPREAD = "spread"


class BindingMode(enum.StrEnum):
    """How a pod sees a binding."""

    MOUNT = "mount"  # network, read in place
    DOWNLOAD = "download"  # copied before start


class Algorithm(enum.StrEnum):
    GRID = "grid"
    RANDOM = "random"
    TPE = "tpe"


class Goal(enum.StrEnum):
    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


class Pick(enum.StrEnum):
    """Which value of the objective's series a trial is scored by."""

    LAST = "last"
    BEST = "best"

"""Evaluate a ValidatingAdmissionPolicy as the API server does, with cel-python: what
`policy check` runs on a plan before `pulumi up` (the `pod-shape` rule), and what the tests hold
the platform's guards to.

cel-python implements the CEL specification the API server follows; this module adds what the
API server wraps around the expressions (Kubernetes "Validating Admission Policy"): the
activation's names (``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject``,
``variables``), ``matchConditions`` (all must hold, else the policy does not apply), the
``variables`` evaluated in order and each visible to the ones after it, and the validations'
messages. Objects arrive as the API server holds them: a field set to null is absent.

A policy is given as the API server reads it (camelCase keys: ``matchConditions``,
``variables``, ``validations``), so what is evaluated is exactly what ``pulumi up`` creates.
cel-python is imported when a policy is first evaluated: most commands never need it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def without_nulls(value: Any) -> Any:
    """What the API server stores: null fields dropped (they read as absent to ``has()``)."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [without_nulls(v) for v in value]
    return value


@dataclass
class Request:
    """One admission request: the operation, the object (null on DELETE), the user."""

    operation: str = "CREATE"
    object: Mapping[str, Any] | None = None
    old_object: Mapping[str, Any] | None = None
    username: str = "system:serviceaccount:kube-system:job-controller"
    namespace: str | None = None
    kind: Mapping[str, str] = field(default_factory=dict)
    # group, version, resource: what a policy's variables dispatch on
    resource: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] | None = None
    namespace_object: Mapping[str, Any] | None = None

    def activation(self) -> dict[str, Any]:
        obj = self.object
        namespace = self.namespace
        if namespace is None and obj is not None:
            namespace = (obj.get("metadata") or {}).get("namespace")
        return {
            "request": {
                "operation": self.operation,
                "userInfo": {"username": self.username},
                "namespace": namespace or "",
                "kind": dict(self.kind),
                "resource": dict(self.resource),
            },
            "object": without_nulls(obj),
            "oldObject": without_nulls(self.old_object),
            "params": without_nulls(self.params),
            "namespaceObject": without_nulls(self.namespace_object),
        }


class _Erased:
    """Subscripts to `object`: what `typing.cast` is given, and ignores."""

    def __getitem__(self, item: object) -> type:
        return object


@functools.cache
def _free_casts() -> None:
    """cel-python's interpreter (0.5) calls `cast(Union[...], value)` or `cast(Tuple[...], ...)`
    at nearly every node it visits, and typing hashes every member of the subscripted union or
    tuple each time: a sixth of an evaluation. In its module those names serve only such casts
    (its classes and signatures were built when it was imported), so they are given a stand-in
    whose subscription costs nothing; `cast` returns its value whatever type it is handed. A
    name that is no longer typing's own (another version) is left alone."""
    import typing

    import celpy.evaluation as interpreter

    for name in ("Union", "Tuple", "Dict", "Iterable", "List"):
        if getattr(interpreter, name, None) is getattr(typing, name):
            setattr(interpreter, name, _Erased())


@functools.lru_cache(maxsize=4096)
def _program(expression: str) -> Any:
    """The compiled program of a CEL expression, kept for the process: a policy's expressions
    are the same for every request and every Evaluator (`policy check` evaluates the platform's
    policies on every object of a plan), and compiling one costs far more than evaluating it. A
    program holds no state of an evaluation (each ``evaluate`` gets its own activation)."""
    import celpy

    _free_casts()
    env = celpy.Environment()
    return env.program(env.compile(expression))


class Evaluator:
    """Evaluates policies on requests; each expression is compiled once per process."""

    def value(self, expression: str, activation: Mapping[str, Any]) -> Any:
        program = _program(expression)
        from celpy.evaluation import CELEvalError

        result = program.evaluate(dict(activation))
        if isinstance(result, CELEvalError):
            raise result
        return result

    def failures(self, policy: Mapping[str, Any], request: Request) -> list[str] | None:
        """None when a match condition leaves the request alone; else the message of each
        validation that does not hold (an expression that errors counts as refused, as under
        ``failurePolicy: Fail``)."""
        from celpy import celtypes
        from celpy.adapter import json_to_cel

        base: Any = json_to_cel(request.activation())
        activation: dict[str, Any] = dict(base)
        for condition in policy.get("matchConditions") or ():
            if not bool(self.value(condition["expression"], activation)):
                return None
        variables: dict[Any, Any] = {}
        for variable in policy.get("variables") or ():
            activation["variables"] = celtypes.MapType(variables)
            variables[celtypes.StringType(variable["name"])] = self.value(
                variable["expression"], activation
            )
        activation["variables"] = celtypes.MapType(variables)
        failed: list[str] = []
        for validation in policy.get("validations") or ():
            try:
                holds = bool(self.value(validation["expression"], activation))
            except Exception as err:  # an evaluation error is a refusal under failurePolicy Fail
                failed.append(f"{validation.get('message', '')} (error: {err})")
                continue
            if not holds:
                failed.append(str(validation.get("message", validation["expression"])))
        return failed


def admits(policy: Mapping[str, Any], request: Request, evaluator: Evaluator | None = None) -> bool:
    """The policy lets the request through (it does not apply, or every validation holds)."""
    failed = (evaluator or Evaluator()).failures(policy, request)
    return not failed


def _selected(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        held = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not held:
            return False
    return True


def matches(
    policy: Mapping[str, Any], request: Request, namespace_labels: Mapping[str, str]
) -> bool:
    """The policy's matchConstraints select the request: one of its resourceRules names the
    request's group, version, resource and operation, and its namespaceSelector the request's
    namespace (whose labels include ``kubernetes.io/metadata.name``, as the API server sets)."""
    constraints = policy.get("matchConstraints") or {}
    resource = request.resource

    def fits(values: Sequence[str], value: str) -> bool:
        return "*" in values or value in values

    ruled = any(
        fits(rule.get("apiGroups", []), resource.get("group", ""))
        and fits(rule.get("apiVersions", []), resource.get("version", ""))
        and fits(rule.get("resources", []), resource.get("resource", ""))
        and fits(rule.get("operations", []), request.operation)
        for rule in constraints.get("resourceRules") or ()
    )
    return ruled and _selected(constraints.get("namespaceSelector"), namespace_labels)


def refusals(
    policies: Mapping[str, Mapping[str, Any]],
    request: Request,
    namespace_labels: Mapping[str, str] | None = None,
    evaluator: Evaluator | None = None,
) -> list[str]:
    """What the API server answers: the messages of every selected policy's failed validations
    (an empty list: admitted)."""
    evaluator = evaluator or Evaluator()
    namespace = request.activation()["request"]["namespace"]
    labels = dict(namespace_labels or {})
    if namespace:
        labels.setdefault("kubernetes.io/metadata.name", namespace)
    out: list[str] = []
    for spec in policies.values():
        if matches(spec, request, labels):
            out += evaluator.failures(spec, request) or []
    return out

"""The admission evaluator the tests hold the platform's guards to (trainstack.policy.admission),
and picking the registered policies out of what the mocks recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainstack.policy.admission import Evaluator as Evaluator
from trainstack.policy.admission import Request as Request
from trainstack.policy.admission import admits as admits
from trainstack.policy.admission import matches as matches
from trainstack.policy.admission import refusals as refusals
from trainstack.policy.admission import without_nulls as without_nulls


def policies_named(registered: Sequence[Any], prefix: str) -> dict[str, Mapping[str, Any]]:
    """``{metadata.name: spec}`` of the registered ValidatingAdmissionPolicies whose name starts
    with ``prefix`` (``mocks.of_type(...)``'s resources)."""
    return {
        r.inputs["metadata"]["name"]: r.inputs["spec"]
        for r in registered
        if str(r.inputs["metadata"]["name"]).startswith(prefix)
    }

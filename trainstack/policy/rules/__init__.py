"""Every rule, one module each (a family of closely related checks shares one). Add a rule by
adding a module with a ``RULE`` and listing it here; docs/policies.md says how."""

from __future__ import annotations

from trainstack.policy.model import Rule
from trainstack.policy.rules import (
    budget,
    hostaccess,
    images,
    placement,
    podshape,
    poolsize,
    priority,
    protection,
    queued,
    quota,
    regions,
    secrets,
    storage,
    trust,
)

RULES: tuple[Rule, ...] = (
    *(
        m.RULE
        for m in (
            images,
            placement,
            poolsize,
            storage,
            hostaccess,
            podshape,
            quota,
            priority,
            secrets,
            protection,
            trust,
            regions,
            budget,
        )
    ),
    quota.BORROWING,
    queued.RULE,
)

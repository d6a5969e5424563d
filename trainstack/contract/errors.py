"""The contract's error, in a module of its own so that every contract module can raise it
without importing another (env and shell need each other's names)."""

from __future__ import annotations

from trainstack.errors import UserError


class ContractError(UserError):
    """A run asks for something the in-container contract cannot express."""

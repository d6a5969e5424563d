"""The command-rewrite tests load the contract tests' spec files (tests/contract/specs)."""

from tests.contract.conftest import load as load

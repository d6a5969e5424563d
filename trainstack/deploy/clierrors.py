"""The Pulumi CLI's failures, as the one error a verb reports: the end of what the CLI said (it
masks secrets itself), a concurrent update said plainly, a wrong passphrase as what to set."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from trainstack.deploy.settings import DeploySettings, is_passphrase_error, passphrase_mismatch
from trainstack.errors import UserError

_TAIL_LINES = 15


class DeployFailedError(UserError):
    """The Pulumi CLI ran and reported a failure; the message carries the end of its output."""

    exit_code = 1


@contextmanager
def cli_errors(doing: str, settings: DeploySettings, stack: str) -> Iterator[None]:
    """Turn the Automation API's CommandError into a DeployFailedError with the CLI's words
    (a wrong passphrase: into the one ConfigError that says what to set)."""
    from pulumi.automation.errors import CommandError, ConcurrentUpdateError

    try:
        yield
    except ConcurrentUpdateError:
        raise DeployFailedError(
            f"{doing}: another update of this stack is running",
            hint="one update per stack at a time; wait and retry",
        ) from None
    except CommandError as err:
        if is_passphrase_error(str(err)):
            raise passphrase_mismatch(settings, stack) from None
        # The CLI masks secrets in what it prints; keep the end, where the reason is.
        lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
        raise DeployFailedError(f"{doing} failed:\n" + "\n".join(lines[-_TAIL_LINES:])) from None

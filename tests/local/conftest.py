"""The local-runner tests take the shared `cli` fixture (tests/conftest.py); a test that drives
a `Supervisor` itself takes `as_runner`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.clirunner import leave_subreaper


@pytest.fixture
def as_runner() -> Iterator[None]:
    """This process a child subreaper for the test, as the `run` verb makes the runner's
    (trainstack/cli/run.py) before its Supervisor starts a replica: a replica's descendants
    orphaned by a stop re-parent here and the Supervisor reaps them at once. Otherwise they
    re-parent to init and stay zombies, still members of their process group, until init reaps
    them (some containers' init does so once a second, some never): each stop then waited for
    that, up to its grace period, where the runner does not."""
    from trainstack.local import procgroup

    assert procgroup.become_subreaper()
    try:
        yield
    finally:
        procgroup.reap_adopted(set())  # whatever the test's own stops left
        leave_subreaper()

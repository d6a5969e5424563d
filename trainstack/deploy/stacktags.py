"""A run stack's config and tags, written so that two deploys at once cannot mix them.

Pulumi locks a stack only while an update runs (``up``, ``refresh``, ``destroy``); ``config
set-all`` and ``stack tag set`` take no lock. So a deploy's config does not go into the stack's
shared config file before ``up``: it goes to ``up`` itself (a private ``--config-file``), and the
update records it in the stack's history. The tags, and the shared config file (the run, its
environment and the platform stack it reads, which ``pulumi config`` shows and ``destroy
--run-program`` runs the program with), are written after ``up``, from the config of the stack's
newest successful update, whoever ran it: the deploy whose ``up`` ran last is the one they
describe, and a deploy that lost the race writes the winner's values, not its own.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from trainstack import platformnames as names
from trainstack.deploy.index import TAG

if TYPE_CHECKING:
    from pulumi import automation as auto

_PREFIX = names.RUNS_PROJECT + ":"
# The tags that follow from the stack's name alone (<env>.<namespace>.<run>): every deploy of
# the stack writes the same values, so they may go on before ``up``, which keeps a stack whose
# first update failed findable (and destroyable) by run name.
NAME_TAGS = ("run", "env", "namespace")
# An update's history lists the updates since; a few more than the deploys that can race.
_HISTORY_PAGE = 20
# Each round means another deploy's ``up`` finished while this one wrote; it writes that one's
# tags in turn, so the rounds end when the deploys do.
_ROUNDS = 10


def deploy_config(tags: Mapping[str, str], platform: str) -> dict[str, str]:
    """The stack config one deploy hands to its ``up``: each run tag as ``trainstack-runs:<tag>``
    (what the tags are later read back from), and the stack its StackReference reads."""
    config = {_PREFIX + key.removeprefix(TAG): value for key, value in tags.items()}
    config[_PREFIX + "platformStack"] = platform
    return config


def name_tags(tags: Mapping[str, str]) -> dict[str, str]:
    return {TAG + key: tags[TAG + key] for key in NAME_TAGS if TAG + key in tags}


@contextmanager
def config_file(stack: auto.Stack, values: Mapping[str, str]) -> Iterator[str]:
    """A private copy of the stack's config file with ``values`` set, for ``up --config-file``.
    The copy keeps what the stack's own file holds (the passphrase provider's salt); the shared
    file is left as it is, so another deploy's values never reach this one's update."""
    work_dir = Path(stack.workspace.work_dir)
    document = _stack_settings(work_dir, stack.name.rsplit("/", 1)[-1])
    document["config"] = {**(document.get("config") or {}), **values}
    fd, path = tempfile.mkstemp(dir=work_dir, prefix=".deploy-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yaml.safe_dump(document, out, sort_keys=True)
        yield path
    finally:
        Path(path).unlink(missing_ok=True)


def _stack_settings(work_dir: Path, name: str) -> dict[str, Any]:
    for suffix in ("yaml", "yml", "json"):
        found = work_dir / f"Pulumi.{name}.{suffix}"
        if found.is_file():
            loaded = yaml.safe_load(found.read_text(encoding="utf-8"))
            return dict(loaded) if isinstance(loaded, dict) else {}
    return {}


# What the stack's own config file holds (`pulumi config`, and what `destroy --run-program`
# runs the program with): the values that say which run and which platform the stack is.
SHARED_CONFIG = ("env", "run", "platformStack")


def deployed_config(stack: auto.Stack) -> tuple[int | None, dict[str, str]] | None:
    """The ``trainstack-runs:`` config the stack's newest successful update ran with (its number,
    the values by key without the prefix); None when no update in reach recorded it (a stack
    deployed by an older trainstack)."""
    for update in stack.history(page_size=_HISTORY_PAGE, show_secrets=False):
        if update.kind != "update" or update.result != "succeeded":
            continue
        values = {
            key.removeprefix(_PREFIX): value.value
            for key, value in update.config.items()
            if key.startswith(_PREFIX) and value.value
        }
        return (update.version, values) if values.get("run") else None
    return None


def _tags_of(values: Mapping[str, str]) -> dict[str, str]:
    return {TAG + key: value for key, value in values.items() if key != "platformStack"}


def settle_tags(stack: auto.Stack) -> dict[str, str]:
    """Write the tags and the shared config of the stack's newest successful update, read
    again, and repeat while another deploy's update landed meanwhile: the last write of each
    then carries the values of the update that ran last. Returns the tags written (empty: none
    found)."""
    from pulumi import automation as auto

    written: tuple[int | None, dict[str, str]] | None = None
    for _ in range(_ROUNDS):
        deployed = deployed_config(stack)
        if deployed is None or deployed == written:
            break
        for key, value in sorted(_tags_of(deployed[1]).items()):
            stack.workspace.set_tag(stack.name, key, value)
        shared = {k: deployed[1][k] for k in SHARED_CONFIG if k in deployed[1]}
        stack.set_all_config({_PREFIX + k: auto.ConfigValue(v) for k, v in shared.items()})
        written = deployed
    return _tags_of(written[1]) if written is not None else {}

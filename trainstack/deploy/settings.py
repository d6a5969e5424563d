"""Where run stacks live and how their secrets are protected.

State goes to a local file backend under the state home (``.trainstack/pulumi``) unless a
backend URL is given (``--backend`` or ``$TRAINSTACK_BACKEND_URL``: any Pulumi backend, e.g. the
one the platform stack lives in, which StackReferences require). Secrets use the passphrase
provider: ``$PULUMI_CONFIG_PASSPHRASE`` if set, otherwise a generated passphrase kept in a 0600
file under the state home. The passphrase only ever travels in the CLI's environment. A run
stack's StackReference opens the platform stack's state with the run stack's passphrase, so a
platform stack under the passphrase provider needs ``$PULUMI_CONFIG_PASSPHRASE`` set to its own
(``deploy.platform`` checks this before anything is created).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from trainstack.envnames import BACKEND_ENV as BACKEND_ENV
from trainstack.envnames import PLATFORM_STACK_ENV as PLATFORM_STACK_ENV
from trainstack.errors import ConfigError
from trainstack.platformnames import platform_stack_name as platform_stack_name
from trainstack.platformnames import run_stack_name as run_stack_name
from trainstack.registry.home import state_home

PASSPHRASE_ENV = "PULUMI_CONFIG_PASSPHRASE"
PASSPHRASE_FILE = "pulumi-passphrase"


@dataclass(frozen=True)
class DeploySettings:
    home: Path
    backend_url: str
    work_dir: Path  # the runs project's folder: Pulumi.yaml and each stack's encryption salt
    passphrase_from: str  # "$PULUMI_CONFIG_PASSPHRASE" or the file's path, for messages
    _passphrase: str = field(repr=False)

    def env_vars(self) -> dict[str, str]:
        """What every Pulumi CLI call gets in its environment (never printed)."""
        return {
            "PULUMI_BACKEND_URL": self.backend_url,
            PASSPHRASE_ENV: self._passphrase,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
        }


def default_backend(root: Path) -> Path:
    """The folder of the file backend a home uses when no backend is named."""
    return root / "pulumi"


def nothing_deployed(root: Path, backend: str | None) -> bool:
    """True when no backend is named and the home's own file backend holds no stack, so no run
    can be deployed: read verbs then need no Pulumi CLI to say so. (A file backend keeps its
    stacks under `<folder>/.pulumi`.)"""
    if backend or os.environ.get(BACKEND_ENV):
        return False
    return not (default_backend(root) / ".pulumi").exists()


def load_settings(home: Path | None = None, backend: str | None = None) -> DeploySettings:
    root = home or state_home()
    url = backend or os.environ.get(BACKEND_ENV) or f"file://{default_backend(root)}"
    if not re.match(r"^[a-z0-9]+://", url):
        raise ConfigError(
            f"backend URL {url!r}: expected a Pulumi backend URL such as "
            "file:///path, s3://bucket or https://api.pulumi.com"
        )
    if url.startswith("file://"):
        Path(url.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
    work_dir = root / "pulumi-project"
    work_dir.mkdir(parents=True, exist_ok=True)
    phrase, source = _passphrase(root)
    return DeploySettings(
        home=root, backend_url=url, work_dir=work_dir, passphrase_from=source, _passphrase=phrase
    )


def _read_passphrase(path: Path) -> str:
    """The passphrase file's one line; a FIFO or device there is refused, not read forever."""
    from trainstack.regularfile import describe, read_regular

    try:
        raw = read_regular(path, 4096)
    except OSError as err:
        raise ConfigError(
            f"{path}: the stack passphrase cannot be read: {describe(err)}",
            hint=f"remove it to have a new one made, or set ${PASSPHRASE_ENV}",
        ) from None
    text = raw[:4096].decode("utf-8", errors="replace").strip()
    if "\0" in text:
        # A crash mid-write leaves NULs; the CLI gets the passphrase through its environment,
        # which cannot carry one.
        raise ConfigError(
            f"{path}: the stack passphrase cannot be read: it holds a NUL byte",
            hint="restore it from a backup (the stacks it encrypted open with no other), or set "
            f"${PASSPHRASE_ENV}",
        )
    return text


def _passphrase(root: Path) -> tuple[str, str]:
    if os.environ.get(PASSPHRASE_ENV):
        return os.environ[PASSPHRASE_ENV], f"${PASSPHRASE_ENV}"
    path = root / PASSPHRASE_FILE
    root.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(path):
        _create_passphrase(path)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as err:  # a link that leads nowhere, a folder it cannot stat
        raise ConfigError(
            f"{path}: the stack passphrase cannot be read: {err.strerror}",
            hint=f"remove it to have a new one made, or set ${PASSPHRASE_ENV}",
        ) from None
    if mode & 0o077:
        raise ConfigError(
            f"{path}: the stack passphrase is readable by others (mode {mode:o})",
            hint=f"chmod 600 {path}",
        )
    phrase = _read_passphrase(path)
    if not phrase:
        raise ConfigError(
            f"{path}: the stack passphrase file is empty",
            hint="restore it from a backup (the stacks it encrypted open with no other), or set "
            f"${PASSPHRASE_ENV}",
        )
    return phrase, str(path)


def _create_passphrase(path: Path) -> None:
    """Write a new passphrase whole, then give it its name: a file created with O_EXCL and
    written afterwards was visible empty in between, and a concurrent ``deploy`` encrypted its
    stack with an empty passphrase. ``link`` fails if the name exists, so of two racing deploys
    one passphrase wins and both read it."""
    fd, tmp = tempfile.mkstemp(prefix=".passphrase-", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(secrets.token_urlsafe(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):  # another deploy's passphrase won
            os.link(tmp, path)
    finally:
        os.unlink(tmp)


# What the Pulumi CLI says when a stack's secrets do not open with the passphrase it was given:
# "incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct passphrase ..."
# (pkg/secrets/passphrase). Reading any output of a stack that holds secrets decrypts them all,
# with or without --show-secrets, so this is what a wrong passphrase looks like from outside.
PASSPHRASE_ERROR = "incorrect passphrase"


def is_passphrase_error(cli_output: str) -> bool:
    return PASSPHRASE_ERROR in cli_output.lower()


def passphrase_mismatch(
    settings: DeploySettings, stack: str, *, platform_env: str | None = None
) -> ConfigError:
    """The one error for a stack whose secrets the run stacks' passphrase cannot open."""
    using = f"the run stacks' passphrase ({settings.passphrase_from})"
    if platform_env is not None:
        return ConfigError(
            f"platform stack {stack!r} was encrypted with another passphrase than {using}, so a "
            "run stack's StackReference could not decrypt its kubeconfig",
            hint=f"set {PASSPHRASE_ENV} to the passphrase `pulumi up --stack {platform_env}` ran "
            "with (run stacks and the platform stack must share one passphrase), then "
            "deploy again; or have a platform admin publish your team's scope "
            "(`trainstack scope publish`) and use your team's passphrase",
        )
    return ConfigError(
        f"stack {stack!r} does not open with {using}",
        hint=f"set {PASSPHRASE_ENV} to the passphrase the stack was deployed with",
    )


def legacy_run_stack_name(env: str, run: str) -> str:
    """What run stacks were named before the namespace was part of the name: such a
    stack is still deployed onto by the run of the namespace its tags name (docs/deploy.md)."""
    return f"{env}.{run}"

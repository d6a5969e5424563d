"""Find the platform project and read one environment's ``Pulumi.<env>.yaml`` as Pulumi would.

The CLI hands a program its config as ``namespace:key`` strings (structured values as JSON,
keys without a namespace belong to the project). ``secure:`` values are ciphertext only the
stack's secrets provider can open; a plan never decrypts: it passes a placeholder, marked secret,
so the program sees a secret where ``pulumi up`` would see one, and the output shows ``[secret]``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainstack.envnames import PROJECT_ENV as PROJECT_ENV
from trainstack.errors import ConfigError, NotFoundError, SpecError
from trainstack.suggest import hint as did_you_mean

SECRET_PLACEHOLDER = "plan-secret-placeholder"


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    # Pulumi.yaml's `config:` declarations: key -> {type, description, default?, ...}
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)

    def environments(self) -> list[str]:
        return sorted(
            p.name[len("Pulumi.") : -len(".yaml")] for p in self.root.glob("Pulumi.*.yaml")
        )


@dataclass(frozen=True)
class EnvConfig:
    env: str
    source: str  # the file, as shown in messages
    values: dict[str, str]
    secret_keys: frozenset[str]


def find_project(start: Path | None = None) -> Project:
    """The platform project: the nearest directory at or above ``start`` (``--project``, else
    ``$TRAINSTACK_PROJECT``, else the current directory) with a ``Pulumi.yaml``."""
    chosen = start or (Path(os.environ[PROJECT_ENV]) if os.environ.get(PROJECT_ENV) else None)
    if chosen is not None and not chosen.is_dir():
        raise NotFoundError(
            f"platform project {chosen}: no such directory",
            hint=f"--project DIR or ${PROJECT_ENV}: the folder with Pulumi.yaml",
        )
    here = (chosen or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        manifest = folder / "Pulumi.yaml"
        if manifest.is_file():
            data = _read_yaml(manifest)
            name = data.get("name") if isinstance(data, dict) else None
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{manifest}: name: expected the project name")
            declared = data.get("config") or {}
            if not isinstance(declared, dict):
                raise ConfigError(f"{manifest}: config: expected a mapping of declared keys")
            return Project(
                root=folder,
                name=name,
                declared={str(k): v for k, v in declared.items() if isinstance(v, dict)},
            )
    raise NotFoundError(
        f"no Pulumi.yaml in {here} or any folder above it",
        hint=f"name the platform project with --project DIR or ${PROJECT_ENV}, "
        "or run trainstack inside it",
    )


def read_env(project: Project, env: str) -> EnvConfig:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", env):
        raise ConfigError(f"--env: expected an environment name such as local, got {env!r}")
    path = project.root / f"Pulumi.{env}.yaml"
    # lexists: a directory, a FIFO or a broken link by that name is the environment file, and
    # the reader says what is wrong with it (not that there is none, with itself as suggestion).
    if not os.path.lexists(path):
        known = project.environments()
        raise NotFoundError(
            f"no environment {env!r}: {path.name} does not exist in {project.root}",
            hint=did_you_mean(env, known) or f"environments: {', '.join(known) or 'none'}",
        )
    data = _read_yaml(path)
    config = data.get("config", {}) if isinstance(data, dict) else None
    if not isinstance(config, dict):
        raise ConfigError(f"{path.name}: config: expected a mapping of config keys")
    values: dict[str, str] = {}
    secret: set[str] = set()
    for key, raw in config.items():
        full = str(key) if ":" in str(key) else f"{project.name}:{key}"
        value, is_secret = _unsecure(raw)
        values[full] = _as_config_string(value)
        if is_secret:
            secret.add(full)
    # As Pulumi does: a key Pulumi.yaml declares without a default must be set in every stack.
    for key, decl in project.declared.items():
        full = key if ":" in key else f"{project.name}:{key}"
        if full not in values and "default" not in decl and "value" not in decl:
            raise ConfigError(
                f"{path.name}: {full}: missing; Pulumi.yaml declares it "
                f"({decl.get('description', 'no description')})"
            )
    return EnvConfig(env=env, source=path.name, values=values, secret_keys=frozenset(secret))


def _read_yaml(path: Path) -> Any:
    """The file through the spec reader: its size, depth and node limits, no aliases (a few
    hundred bytes of nested aliases would otherwise expand to gigabytes), YAML 1.2 scalars as
    Pulumi reads them."""
    from trainstack import yamlsource

    try:
        what = "stack config files"
        doc = yamlsource.parse(path.name, yamlsource.read_text(path, what), what)
    except SpecError as err:
        raise ConfigError(
            "\n".join(d.render().replace(str(path), path.name) for d in err.diagnostics())
        ) from None
    return doc.data if doc.data is not None else {}


def _unsecure(value: Any) -> tuple[Any, bool]:
    """Replace every ``{secure: ...}`` (at any depth) by the placeholder; report if any was."""
    if isinstance(value, dict) and set(value) == {"secure"}:
        return SECRET_PLACEHOLDER, True
    if isinstance(value, dict):
        pairs = [(k, _unsecure(v)) for k, v in value.items()]
        return {k: v for k, (v, _) in pairs}, any(s for _, (_, s) in pairs)
    if isinstance(value, list):
        items = [_unsecure(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def _as_config_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)

"""Typed, checked reading of Pulumi stack config.

Pulumi hands a program its config as flat ``namespace:key`` strings (objects and lists as JSON).
A wrong or missing key should be one clear ``ConfigError`` naming the key, what was expected and
what was found — not a stack trace from deep inside a provider — so every read goes through a
``Section`` that knows the key's full path and which keys were never read (typos).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from trainstack.errors import ConfigError
from trainstack.suggest import hint

REQUIRED: Any = object()
"""Default meaning 'the key must be set'."""


def raw_stack_config() -> tuple[dict[str, Any], frozenset[str]]:
    """The running program's config and its secret keys, wherever Pulumi put them.

    The CLI's language host passes config in ``PULUMI_CONFIG``; the Automation API and the mocks
    use ``set_all_config``. Explicitly set values win, as in ``pulumi.Config``.
    """
    from pulumi.runtime import config as rc

    values: dict[str, Any] = dict(rc.get_config_env())
    values.update(rc.CONFIG.get())
    secret = set(rc.get_config_secret_keys_env()) | set(rc._SECRET_KEYS.get())
    return values, frozenset(secret)


def split_namespace(values: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    prefix = namespace + ":"
    return {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}


def did_you_mean(word: str, options: Iterable[str]) -> str | None:
    """A hint for a config key or value almost right (trainstack.suggest, the one helper)."""
    return hint(word, options)


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def _as_int(value: Any) -> int | None:
    """YAML gives ints, Pulumi's CLI gives strings and the mocks give floats: accept all three."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    return None


class Section:
    """One mapping of config values: a namespace's top level, or one nested object."""

    def __init__(
        self,
        data: Mapping[str, Any],
        path: str,
        source: str,
        secret_keys: frozenset[str] = frozenset(),
        top_level: bool = False,
        hide_values: bool = False,
    ) -> None:
        self._data = dict(data)
        self._path = path  # "trainstack:" or "trainstack:gpuPools[0]."
        self._source = source
        self._secret = secret_keys
        self._top = top_level
        # Inside a secret object (secret_section): an error names the key, never the value.
        self._hide = hide_values
        self._read: set[str] = set()

    # --- errors -----------------------------------------------------------------------------

    def key(self, key: str) -> str:
        return f"{self._path}{key}"

    def error(
        self, key: str, expected: str, got: Any = REQUIRED, hint: str | None = None
    ) -> ConfigError:
        if got is REQUIRED:
            what = "is missing"
        else:
            what = "is not (a secret's value is not shown)" if self._hide else f"is {_show(got)}"
        return ConfigError(
            f"{self._source}: {self.key(key)}: expected {expected}, but it {what}", hint=hint
        )

    # --- raw access -------------------------------------------------------------------------

    def has(self, key: str) -> bool:
        self._read.add(key)  # asking about a key declares it known (for suggestions)
        return key in self._data

    def _get(self, key: str, default: Any, expected: str) -> Any:
        self._read.add(key)
        if key not in self._data:
            if default is REQUIRED:
                raise self.error(key, expected)
            return default
        value = self._data[key]
        # Top-level values arrive as strings; structured ones are JSON inside the string.
        if self._top and isinstance(value, str) and value[:1] in ("{", "["):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return value

    def raw(self, key: str) -> Any:
        """A required value as given, for a getter of its own kind (a number, say)."""
        return self._get(key, REQUIRED, "a value")

    # --- typed getters ----------------------------------------------------------------------

    def string(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        choices: Sequence[str] = (),
        pattern: str | None = None,
        what: str = "a string",
    ) -> str:
        expected = f"one of {', '.join(choices)}" if choices else what
        value = self._get(key, default, expected)
        if not isinstance(value, str) or not value:
            raise self.error(key, expected, value)
        if choices and value not in choices:
            raise self.error(key, expected, value, hint=did_you_mean(value, choices))
        if pattern and not re.fullmatch(pattern, value):
            raise self.error(key, what, value)
        return value

    def optional_string(
        self, key: str, *, pattern: str | None = None, what: str = "a string"
    ) -> str | None:
        if key not in self._data:
            self._read.add(key)
            return None
        return self.string(key, pattern=pattern, what=what)

    def integer(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int:
        bounds = [f"≥ {minimum}"] if minimum is not None else []
        bounds += [f"≤ {maximum}"] if maximum is not None else []
        expected = "an integer" + (f" {' and '.join(bounds)}" if bounds else "")
        value = self._get(key, default, expected)
        number = _as_int(value)
        if (
            number is None
            or (minimum is not None and number < minimum)
            or (maximum is not None and number > maximum)
        ):
            raise self.error(key, expected, value)
        return number

    def boolean(self, key: str, default: Any = REQUIRED) -> bool:
        value = self._get(key, default, "true or false")
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise self.error(key, "true or false", value)

    def quantity(self, key: str, default: Any = REQUIRED) -> str:
        """A Kubernetes quantity (``8``, ``500m``, ``64Gi``), kept as the string Kubernetes uses."""
        expected = "a Kubernetes quantity such as 8, 500m or 64Gi"
        value = self._get(key, default, expected)
        whole = _as_int(value)
        text = str(whole) if whole is not None else value
        if not isinstance(text, str) or not re.fullmatch(
            r"\d+(\.\d+)?(m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?", text
        ):
            raise self.error(key, expected, value)
        return text

    def string_list(
        self,
        key: str,
        default: Any = REQUIRED,
        *,
        min_items: int = 0,
        choices: Sequence[str] = (),
        pattern: str | None = None,
        what: str = "strings",
    ) -> tuple[str, ...]:
        expected = f"a list of {what}" + (f" (at least {min_items})" if min_items else "")
        if choices:
            expected += f", each one of {', '.join(choices)}"
        value = self._get(key, default, expected)
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]  # "a,b" is a list too
        if (
            not isinstance(value, list)
            or len(value) < min_items
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise self.error(key, expected, value)
        for item in value:
            if choices and item not in choices:
                raise self.error(key, expected, value, hint=did_you_mean(item, choices))
            if pattern and not re.fullmatch(pattern, item):
                raise self.error(key, expected, value)
        if len(set(value)) != len(value):
            raise self.error(key, expected + " without duplicates", value)
        return tuple(value)

    def section(self, key: str, default: Any = REQUIRED) -> Section:
        value = self._get(key, default, "an object")
        if not isinstance(value, dict):
            raise self.error(key, "an object", value)
        return Section(value, f"{self.key(key)}.", self._source, hide_values=self._hide)

    def sections(self, key: str, default: Any = REQUIRED, *, min_items: int = 0) -> list[Section]:
        expected = "a list of objects" + (f" (at least {min_items})" if min_items else "")
        value = self._get(key, default, expected)
        if (
            not isinstance(value, list)
            or len(value) < min_items
            or not all(isinstance(v, dict) for v in value)
        ):
            raise self.error(key, expected, value)
        return [
            Section(v, f"{self.key(key)}[{i}].", self._source, hide_values=self._hide)
            for i, v in enumerate(value)
        ]

    # --- secrets ----------------------------------------------------------------------------

    def require_secret_key(self, key: str, how: str) -> None:
        """Check a secret is set, and set as a secret; its value is read by the program itself."""
        self._read.add(key)
        full = self.key(key)
        if key not in self._data:
            raise self.error(key, "a secret", hint=how)
        if full not in self._secret:
            raise ConfigError(
                f"{self._source}: {full}: is set in plain text; it must be a secret", hint=how
            )

    def secret_section(self, key: str, how: str) -> Section:
        """An object set as a secret (``pulumi config set --secret --path``): Pulumi marks the
        whole key secret when any value inside it is. Its values never appear in an error."""
        self.require_secret_key(key, how)
        value = self._get(key, REQUIRED, "an object")
        if not isinstance(value, dict):
            raise ConfigError(
                f"{self._source}: {self.key(key)}: expected an object, but it is not "
                "(a secret's value is not shown)",
                hint=how,
            )
        return Section(value, f"{self.key(key)}.", self._source, hide_values=True)

    # --- typos ------------------------------------------------------------------------------

    def finish(self, other_mode: Mapping[str, str] | None = None) -> None:
        """Every key must have been read: an unread key is a typo or belongs to another mode."""
        other_mode = other_mode or {}
        for key in sorted(set(self._data) - self._read):
            if key in other_mode:
                raise ConfigError(f"{self._source}: {self.key(key)}: {other_mode[key]}")
            known = self._read | set(other_mode)
            raise ConfigError(
                f"{self._source}: {self.key(key)}: unknown key",
                hint=did_you_mean(key, known) or f"known keys: {', '.join(sorted(known))}",
            )


class Pending:
    """Set-up steps an offline plan reports instead of failing on (see PlatformConfig.pending)."""

    def __init__(self, offline: bool) -> None:
        self.offline = offline
        self.items: list[str] = []

    def add(self, step: str) -> None:
        self.items.append(step)

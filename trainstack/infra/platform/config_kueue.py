"""An environment's Kueue: the ``kueue:*`` keys, read when any is set (docs/queues.md).

The install keys are Trainer's (config_trainer.py): ``kueue:version``, ``kueue:crdSource``,
``kueue:image`` (pinned by digest on ack) and ``kueue:namespace``. ``kueue:releaserImage`` is the
Python image the finalizer releaser runs in (trainstack.kueue.releaser; pinned by digest on ack,
where until it is set the releaser is not deployed). The sharing keys:

- ``kueue:cohort``: the cohort every team's ClusterQueue joins (default ``trainstack``);
- ``kueue:borrowingLimit``: how much more than its own quota a team may borrow from the cohort
  in each pool, as a percentage of its whole quota (``"50%"``); unset, no limit but what the
  others lend;
- ``kueue:lendingLimit``: how much of its idle quota in each pool a team lends, as a percentage
  of what it has there (``"50%"``: the other half stays its own); unset, all of it;
- ``kueue:teams``: per team ``weight`` (its fair-sharing weight, default 1),
  ``borrowingLimit`` and ``lendingLimit`` overriding the environment's.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainstack import k8snames
from trainstack.infra.configread import Pending, Section, split_namespace
from trainstack.infra.platform.config_trainer import ControllerConfig, _load, image_setting
from trainstack.infra.platform.kueue_release import (
    KUEUE,
    KUEUE_CONFIG_NS,
    KUEUE_RELEASE,
    KUEUE_UPSTREAM_IMAGE,
    KUEUE_VERSION,
)

INSTALL_KEYS = ("version", "crdSource", "image", "namespace")
# Any image with a `python3` (3.10 or later) on its PATH runs the releaser: it uses only the
# standard library.
RELEASER_UPSTREAM_IMAGE = "docker.io/library/python:3.13-alpine"
RELEASER_HOW = (
    "mirror a Python image into the platform's registry and pin its digest: pulumi config set "
    f"{KUEUE_CONFIG_NS}:releaserImage <registry>/<namespace>/python@sha256:<digest> "
    "(docs/queues.md)"
)
DEFAULT_COHORT = "trainstack"
_PERCENT = re.compile(r"(\d{1,4})%")


@dataclass(frozen=True)
class Sharing:
    """One team's terms in the cohort; percentages of its own quota, None: no limit."""

    weight: float = 1.0
    borrowing_percent: int | None = None
    lending_percent: int | None = None


@dataclass(frozen=True)
class KueueConfig:
    install: ControllerConfig
    cohort: str = DEFAULT_COHORT
    default: Sharing = Sharing()
    teams: Mapping[str, Sharing] = field(default_factory=dict)
    # The finalizer releaser's image; None: not deployed (ack, until it is set).
    releaser_image: str | None = None

    def sharing(self, team: str) -> Sharing:
        return self.teams.get(team, self.default)


def enabled(values: Mapping[str, Any]) -> bool:
    return bool(split_namespace(values, KUEUE_CONFIG_NS))


def _percent(sec: Section, key: str, default: int | None, maximum: int) -> int | None:
    if not sec.has(key):
        return default
    what = f'a percentage of the team\'s quota such as "50%" (0% to {maximum}%)'
    raw = sec.string(key, what=what)
    match = _PERCENT.fullmatch(raw.strip())
    if match is None or int(match.group(1)) > maximum:
        raise sec.error(key, what, raw)
    return int(match.group(1))


def _weight(sec: Section, default: float) -> float:
    if not sec.has("weight"):
        return default
    raw = sec.quantity("weight")
    try:
        value = float(raw)
    except ValueError:
        raise sec.error("weight", "a number such as 1 or 0.5", raw) from None
    return value


def load_kueue(
    values: Mapping[str, Any],
    source: str,
    team_names: tuple[str, ...],
    *,
    ack: bool,
    root: Path,
    pending: Pending,
) -> KueueConfig:
    own = split_namespace(values, KUEUE_CONFIG_NS)
    prefix = f"{KUEUE_CONFIG_NS}:"
    install_values = {prefix + k: v for k, v in own.items() if k in INSTALL_KEYS}
    install = _load(
        install_values,
        source,
        KUEUE_RELEASE,
        KUEUE_VERSION,
        KUEUE.namespace,
        KUEUE_UPSTREAM_IMAGE,
        ack=ack,
        root=root,
        pending=pending,
    )
    sec = Section(
        {k: v for k, v in own.items() if k not in INSTALL_KEYS}, prefix, source, top_level=True
    )
    for key in INSTALL_KEYS:
        sec.has(key)  # known, for suggestions
    releaser_image = image_setting(
        sec,
        "releaserImage",
        RELEASER_UPSTREAM_IMAGE,
        RELEASER_HOW,
        "KubeDL jobs Kueue queues cannot recreate a failed replica (docs/queues.md)",
        ack=ack,
        pending=pending,
    )
    cohort = sec.string("cohort", DEFAULT_COHORT, pattern=k8snames.LABEL_63, what="a DNS label")
    default = Sharing(
        1.0,
        _percent(sec, "borrowingLimit", None, 1000),
        _percent(sec, "lendingLimit", None, 100),
    )
    teams: dict[str, Sharing] = {}
    raw = own.get("teams", {})
    if isinstance(raw, str) and raw[:1] == "{":
        with contextlib.suppress(json.JSONDecodeError):  # else refused below: not an object
            raw = json.loads(raw)
    if sec.has("teams") and not isinstance(raw, dict):
        raise sec.error(
            "teams", "an object: team name -> weight, borrowingLimit, lendingLimit", raw
        )
    for name in sorted(raw):
        if name not in team_names:
            raise sec.error(
                f"teams.{name}", f"a team of trainstack:teams ({', '.join(team_names)})", name
            )
        value = raw[name]
        if not isinstance(value, dict):
            raise sec.error(
                f"teams.{name}", "an object: weight, borrowingLimit, lendingLimit", value
            )
        t = Section(value, f"{prefix}teams.{name}.", source)
        teams[name] = Sharing(
            _weight(t, default.weight),
            _percent(t, "borrowingLimit", default.borrowing_percent, 1000),
            _percent(t, "lendingLimit", default.lending_percent, 100),
        )
        t.finish()
    sec.finish()
    return KueueConfig(install, cohort, default, teams, releaser_image)

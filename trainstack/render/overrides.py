"""A platform project's own templates: `templates/` beside its Pulumi.yaml, searched before the
packaged ones (docs/templates.md). A platform team replaces a partial (`_pod.yaml.j2`,
`_metadata.yaml.j2`, ...) to put its labels, tolerations or sidecars on every job, or adds
partials that its replaced templates include.

The folder is read once per render into an `Overrides` snapshot: the same snapshot renders every
object of a run, keys the compiled environment (engine.py), and is what `plan`, `render` and
`deploy` name when overrides are in effect. What the folder holds is the platform repository's
text, but it is read as carefully as a user's: one flat folder, no link followed out of it, no
FIFO waited on, no file of unbounded size, every failure one `TemplateError` naming the file.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from trainstack.excerpt import printable
from trainstack.regularfile import OutsideRootError, describe, read_within
from trainstack.render.options import RenderError
from trainstack.yamlsource import shown

OVERRIDES_DIR = "templates"  # beside the platform project's Pulumi.yaml
PACKAGE = "trainstack.templates"  # the packaged ones (pyproject.toml maps it to templates/)
# The packaged templates are under 2 KiB each; a platform's partial has no reason to be larger
# than this, and a file that is (a log written there by mistake) is refused, not read whole.
MAX_BYTES = 256 << 10
# One flat folder: a name is a file name, never a path, so nothing outside the folder is
# reachable by name (`../`, `/etc/...`), and dotfiles (editor swap files, .gitkeep) are never
# templates.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.j2")
NAME_RULE = (
    "templates are one flat folder: a name is letters, digits, '_', '.' and '-', "
    "ends with .j2 and does not start with '.'"
)


class TemplateError(RenderError):
    """A platform project's template cannot be used; the message names the file (and line)."""


def is_template_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None and ".." not in name


def packaged(name: str) -> str | None:
    """The packaged template's text, None when trainstack ships none by that name."""
    if not is_template_name(name):
        return None
    try:
        return _package().joinpath(name).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


@functools.cache
def _package() -> Traversable:
    """Where the packaged templates are (fixed for the process; their text is read each time)."""
    return resources.files(PACKAGE)


def packaged_names() -> tuple[str, ...]:
    """Every template trainstack ships, partials included."""
    return tuple(
        sorted(p.name for p in resources.files(PACKAGE).iterdir() if is_template_name(p.name))
    )


@dataclass(frozen=True)
class Overrides:
    """The templates of a platform project's folder that differ from the packaged ones or add
    to them. A file identical to the packaged template of its name is no override (a checkout of
    this repository is such a project: its `templates/` is the packaged set itself)."""

    folder: str  # as shown in messages
    files: tuple[tuple[str, str], ...]  # (name, text), sorted by name

    def text(self, name: str) -> str | None:
        return dict(self.files).get(name)

    def filename(self, name: str) -> str:
        """What jinja2 records as the template's file: the path messages show."""
        return os.path.join(self.folder, name)

    @property
    def replaced(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.files if packaged(n) is not None)

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.files if packaged(n) is None)

    def summary(self) -> str:
        """One line for `render`, `plan` and `deploy`: which templates come from the platform."""
        parts = [f"{n} (replaces the packaged one)" for n in self.replaced]
        parts += [f"{n} (added)" for n in self.added]
        return f"templates from {self.folder}: {', '.join(parts)}"


def for_project(root: Path) -> Overrides | None:
    """The overrides of the platform project at `root`; None when it has none."""
    return load(root / OVERRIDES_DIR)


def load(folder: Path) -> Overrides | None:
    """A snapshot of `folder`'s templates; None when the folder does not exist or holds only
    copies of the packaged templates. Files whose names are no template names (README.md, a
    dotfile, `__init__.py`) are not templates and are left alone."""
    try:
        entries = sorted(os.listdir(folder))
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise TemplateError(
            f"{shown(folder)}: not a folder; a platform project's templates/ holds its templates",
        ) from None
    except OSError as err:
        raise TemplateError(f"{shown(folder)}: cannot be read: {describe(err)}") from None
    files: list[tuple[str, str]] = []
    for name in entries:
        if not is_template_name(name):
            continue
        text = _read(folder, name)
        if text != packaged(name):
            files.append((name, text))
    if not files:
        return None
    return Overrides(folder=printable(str(shown(folder))), files=tuple(files))


def _read(folder: Path, name: str) -> str:
    """The template's text; every failure one TemplateError naming it (the name is worked out
    only then: for every file of every run's plan it was a sixth of reading the folder)."""

    def where() -> str:
        return printable(str(shown(folder / name)))

    try:
        # read_within: a link that stays in the folder is followed, one that leaves it is not
        # (it is refused when opened, so a link swapped in after a check is refused too).
        data = read_within(folder, folder / name, limit=MAX_BYTES)
    except OutsideRootError:
        raise TemplateError(
            f"{where()}: a link to a place outside {shown(folder)}: not followed",
            hint="templates are files in the folder itself; copy the file there",
        ) from None
    except OSError as err:
        raise TemplateError(f"{where()}: cannot be read: {describe(err)}") from None
    if len(data) > MAX_BYTES:
        raise TemplateError(
            f"{where()}: over {MAX_BYTES >> 10} KiB; a template is a few KiB of YAML",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TemplateError(
            f"{where()}: not UTF-8 text (at byte {err.start})", hint="save it as UTF-8"
        ) from None

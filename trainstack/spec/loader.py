"""Load spec files into typed objects. The only way specs enter trainstack.

load → structure (cerberus) → rules → normalize. Every problem in a file is collected and raised
together as one SpecError; only Component and Run objects leave this module.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainstack import suggest
from trainstack.envnames import COMPONENTS_ENV as COMPONENTS_ENV
from trainstack.errors import Diagnostic, SpecError, UserError
from trainstack.spec import normalize, overrides, structure
from trainstack.spec.model import Component, Run
from trainstack.spec.pathlimits import too_long
from trainstack.spec.rules import component as component_rules
from trainstack.spec.rules import run as run_rules
from trainstack.spec.schema import API_VERSION
from trainstack.spec.sweeploader import sweep_from
from trainstack.spec.sweepmodel import Sweep
from trainstack.yamlsource import SourceDoc, load
from trainstack.yamlsource import shown as shown

KINDS = ("Component", "Run", "Sweep")
COMPONENT_FILE = "component.yaml"


@dataclass
class _Cached:
    stamp: tuple[int, int]
    result: Component | SpecError


class Loader:
    """Loads specs, caching components by file so a directory of runs parses each component once."""

    def __init__(self, components_dir: Path | None = None) -> None:
        env_dir = os.environ.get(COMPONENTS_ENV)
        self.components_dir = components_dir or (Path(env_dir) if env_dir else None)
        self._components: dict[Path, _Cached] = {}
        self._index: dict[Path, list[tuple[Path, str]]] = {}

    # -- public ---------------------------------------------------------------------------------

    def load(self, path: Path) -> Component | Run | Sweep:
        doc = load(shown(path))
        kind = _kind(doc)
        if kind == "Sweep":
            return sweep_from(self, doc)
        if kind == "Component":
            # Through the cache: runs that use this component reuse the result, and its
            # diagnostics are the same objects whichever way the file was reached.
            return self._cached(path, lambda: self._component_from(doc))
        return self._run_from(doc)

    def component(self, path: Path) -> Component:
        def build() -> Component:
            doc = load(shown(path))
            if _kind(doc) != "Component":
                raise SpecError(
                    [
                        doc.diag(
                            ("kind",),
                            f"expected a Component, found {doc.data.get('kind')!r}",
                            code="kind",
                        )
                    ]
                )
            return self._component_from(doc)

        return self._cached(path, build)

    def _cached(self, path: Path, build: Callable[[], Component]) -> Component:
        try:
            resolved = path.resolve()
        except (RuntimeError, OSError):  # a symlink loop (RuntimeError before Python 3.13)
            resolved = Path(os.path.abspath(path))  # reading it reports the loop
        try:
            st = resolved.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0)
        cached = self._components.get(resolved)
        if cached is None or cached.stamp != stamp:
            try:
                result: Component | SpecError = build()
            except SpecError as err:
                result = err
            cached = self._components[resolved] = _Cached(stamp, result)
        if isinstance(cached.result, SpecError):
            raise cached.result
        return cached.result

    def run(self, path: Path, params: overrides.Overrides = overrides.NONE) -> Run:
        """The Run of a file; `params`: `-p NAME=VALUE` parameters set over the file's."""
        doc = load(shown(path))
        if _kind(doc) != "Run":
            raise SpecError(
                [
                    doc.diag(
                        ("kind",), f"expected a Run, found {doc.data.get('kind')!r}", code="kind"
                    )
                ]
            )
        try:
            return self._run_from(overrides.apply(doc, params))
        except SpecError as err:
            raise overrides.relocate(err, params) from None

    def run_from(self, doc: SourceDoc) -> Run:
        """A Run from a parsed document (a sweep's inline base run)."""
        return self._run_from(doc)

    # -- internals ------------------------------------------------------------------------------

    def _component_from(self, doc: SourceDoc) -> Component:
        diags = _merge(structure.check(doc, "Component"), component_rules.check(doc))
        if diags:
            raise SpecError(diags)
        return normalize.component(doc.data, Path(doc.file).resolve())

    def _run_from(self, doc: SourceDoc) -> Run:
        structural = structure.check(doc, "Run")
        rules = run_rules.check(doc)
        ref = (
            doc.data.get("spec", {}).get("component")
            if isinstance(doc.data.get("spec"), dict)
            else None
        )
        comp: Component | None = None
        raw_params: dict[str, Any] = {}
        resolution: list[Diagnostic] = []
        if isinstance(ref, str) and ref:
            try:
                comp, raw_params = self._resolve(doc, ref)
            except SpecError as err:
                resolution = err.diagnostics()
        if comp is not None:
            rules += run_rules.check_against(doc, comp, raw_params)
        diags = _merge(structural, rules) + resolution
        if diags:
            raise SpecError(diags)
        assert comp is not None and isinstance(ref, str)
        return normalize.run(doc.data, Path(doc.file).resolve(), comp, ref)

    def _resolve(self, doc: SourceDoc, ref: str) -> tuple[Component, dict[str, Any]]:
        base = Path(doc.file).parent
        if "/" in ref or ref.endswith((".yaml", ".yml")) or ref.startswith("."):
            why = too_long(ref) or too_long(str((base / ref).absolute()))
            if why is not None:
                raise SpecError(
                    [
                        doc.diag(
                            ("spec", "component"), f"not a usable path: {why}", code="component-ref"
                        )
                    ]
                )
            target = base / ref
            if target.is_dir():
                target = target / COMPONENT_FILE
            # lexists: a FIFO, a broken link or a link loop there is read, and reported as what it
            # is, not as missing.
            if not os.path.lexists(target):
                raise SpecError(
                    [
                        doc.diag(
                            ("spec", "component"),
                            f"component file {ref!r} not found (looked for {target.resolve()})",
                            code="component-ref",
                        )
                    ]
                )
            comp = self._component_or_note(doc, target)
        else:
            comp = self._by_name(doc, ref)
        return comp, self._raw_parameters(comp)

    def _component_or_note(self, doc: SourceDoc, target: Path) -> Component:
        try:
            return self.component(target)
        except SpecError as err:
            note = doc.diag(
                ("spec", "component"),
                f"component {str(target)!r} is invalid "
                f"({len(err.diagnostics())} problem(s) reported for that file)",
                code="component-invalid",
            )
            raise SpecError([note, *err.diagnostics()]) from None

    def _raw_parameters(self, comp: Component) -> dict[str, Any]:
        # Value checks share one implementation with the component's defaults (rules/component),
        # which works on raw declarations; rebuild them from the typed component.
        out: dict[str, Any] = {}
        for p in comp.parameters:
            raw: dict[str, Any] = {"type": p.type.value}
            if p.range is not None:
                raw["range"] = {"min": p.range.min, "max": p.range.max}
            if p.enum is not None:
                raw["enum"] = list(p.enum)
            out[p.name] = raw
        return out

    def _by_name(self, doc: SourceDoc, ref: str) -> Component:
        name, _, version = ref.partition("@")
        root = self._components_root(Path(doc.file))
        if root is None:
            raise SpecError(
                [
                    doc.diag(
                        ("spec", "component"),
                        f"cannot resolve {ref!r}: no components directory",
                        hint="pass --components DIR, set "
                        f"{COMPONENTS_ENV}, or use a path such as ../component.yaml",
                        code="component-ref",
                    )
                ]
            )
        found = self._named(root, name)
        if not found:
            names = {c.name for c in self._valid(root, lambda _: True)}
            raise SpecError(
                [
                    doc.diag(
                        ("spec", "component"),
                        f"no component named {name!r} in {root}",
                        hint=suggest.hint(name, names),
                        code="component-ref",
                    )
                ]
            )
        if version:
            match = [c for c in found if c.version == version]
            if not match:
                have = ", ".join(sorted({c.version for c in found}, key=_semver))
                raise SpecError(
                    [
                        doc.diag(
                            ("spec", "component"),
                            f"component {name!r} has no version {version!r}; available: {have}",
                            code="component-ref",
                        )
                    ]
                )
        else:
            latest = max(found, key=lambda c: _semver(c.version)).version
            match = [c for c in found if c.version == latest]
        if len(match) > 1:
            files = ", ".join(str(shown(c.source)) for c in match if c.source is not None)
            raise SpecError(
                [
                    doc.diag(
                        ("spec", "component"),
                        f"{match[0].ref} is defined "
                        f"{len(match)} times ({files}); which one is meant is "
                        "ambiguous",
                        hint="a released version is immutable: give the changed copy a new version",
                        code="component-ref",
                    )
                ]
            )
        return match[0]

    def _components_root(self, run_file: Path) -> Path | None:
        if self.components_dir is not None:
            return self.components_dir
        for parent in run_file.resolve().parents:
            if parent.name == "components":
                return parent
            if (parent / "components").is_dir():
                return parent / "components"
        return None

    def _named(self, root: Path, name: str) -> list[Component]:
        """The valid components under `root` named `name`. Only the files whose
        `metadata.name` says so are checked and built: a tree of many components resolves one
        reference without validating all of them (a component that does not build is passed
        over here, and reported when that file itself is validated)."""
        found = self._valid(root, lambda said: said == name)
        return [c for c in found if c.name == name]

    def _valid(self, root: Path, wanted: Callable[[str], bool]) -> list[Component]:
        comps: list[Component] = []
        for path, said in self._scan(root):
            if wanted(said):
                with contextlib.suppress(SpecError):
                    comps.append(self.component(path))
        return comps

    def _scan(self, root: Path) -> list[tuple[Path, str]]:
        """Each component file under `root` with the name its metadata gives ("" when it gives
        none that can be read)."""
        key = root.resolve()
        if key not in self._index:
            self._index[key] = [
                (path, _said_name(path)) for path in sorted(key.rglob(COMPONENT_FILE))
            ]
        return self._index[key]


def _said_name(path: Path) -> str:
    try:
        data = load(shown(path)).data
    except UserError:
        return ""
    meta = data.get("metadata") if isinstance(data, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _merge(structural: list[Diagnostic], rules: list[Diagnostic]) -> list[Diagnostic]:
    """Structure diagnostics plus the rule diagnostics that say something new: a rule reading a
    field whose shape is already reported (`enum[0]` is a list) would only repeat it."""
    bad = {(d.file, d.path) for d in structural}

    def covered(d: Diagnostic) -> bool:
        return any(
            d.file == file and (d.path == b or d.path.startswith((b + ".", b + "[")))
            for file, b in bad
        )

    return structural + [d for d in rules if not covered(d)]


def _semver(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _kind(doc: SourceDoc) -> str:
    data = doc.data
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise SpecError(
            [
                doc.diag(
                    (),
                    f"expected a mapping with apiVersion, kind, metadata and spec; found {got}",
                    code="not-a-spec",
                )
            ]
        )
    kind = data.get("kind")
    diags: list[Diagnostic] = []
    if kind in KINDS:
        return str(kind)  # a wrong apiVersion is reported with the structure checks
    if data.get("apiVersion") != API_VERSION:
        diags.append(
            doc.diag(
                ("apiVersion",),
                f"expected apiVersion {API_VERSION!r}, found {data.get('apiVersion')!r}",
                code="api-version",
            )
        )
    if kind not in KINDS:
        diags.append(
            doc.diag(
                ("kind",),
                f"expected kind Component, Run or Sweep, found {kind!r}",
                hint=suggest.hint(kind, KINDS) if isinstance(kind, str) else None,
                code="kind",
            )
        )
    if diags:
        raise SpecError(diags)
    assert isinstance(kind, str)
    return kind


def load_component(path: Path | str) -> Component:
    return Loader().component(Path(path))


def load_run(
    path: Path | str,
    *,
    components_dir: Path | None = None,
    params: overrides.Overrides = overrides.NONE,
) -> Run:
    return Loader(components_dir).run(Path(path), params)


def load_sweep(
    path: Path | str,
    *,
    components_dir: Path | None = None,
    params: overrides.Overrides = overrides.NONE,
) -> Sweep:
    """A `kind: Sweep` file (spec/sweeploader.py), its base run loaded through a Loader;
    `params`: `-p NAME=VALUE` parameters fixed for every trial."""
    doc = load(shown(Path(path)))
    kind = doc.data.get("kind") if isinstance(doc.data, dict) else None
    if kind != "Sweep":
        raise SpecError([doc.diag(("kind",), f"expected a Sweep, found {kind!r}", code="kind")])
    return sweep_from(Loader(components_dir), doc, params)

"""The validate service: check many spec files and collect every diagnostic."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from trainstack import yamlsource
from trainstack.errors import Diagnostic, SpecError
from trainstack.spec.discover import spec_files
from trainstack.spec.loader import Loader, shown
from trainstack.spec.model import Component, Run
from trainstack.spec.sweepmodel import Sweep


@dataclass
class Report:
    components: list[Component] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    sweeps: list[Sweep] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: int = 0

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def validate(paths: Iterable[Path], *, components_dir: Path | None = None) -> Report:
    loader = Loader(components_dir)
    report = Report()
    seen: set[Diagnostic] = set()
    for path in spec_files(paths):
        report.files += 1
        try:
            spec = loader.load(path)
        except SpecError as err:
            for d in err.diagnostics():
                if d not in seen:  # a run repeats its invalid component's diagnostics
                    seen.add(d)
                    report.diagnostics.append(d)
            continue
        if isinstance(spec, Component):
            report.components.append(spec)
        elif isinstance(spec, Run):
            report.runs.append(spec)
        else:
            report.sweeps.append(spec)
    report.diagnostics += _duplicate_versions(report.components)
    return report


def _duplicate_versions(components: list[Component]) -> list[Diagnostic]:
    """name@version names one component: a released version is immutable (Alibaba PAI Designer
    custom components: component versioning), and a run's `component: name@version` must not be
    ambiguous."""
    by_ref: dict[str, list[Path]] = {}
    for comp in components:
        if comp.source is not None:
            by_ref.setdefault(comp.ref, []).append(comp.source)
    out: list[Diagnostic] = []
    for ref, sources in sorted(by_ref.items()):
        first, *others = sorted(set(sources))
        for other in others:
            try:
                doc = yamlsource.load(shown(other))
            except SpecError:
                continue  # changed since it was validated; its own problems are reported
            out.append(
                doc.diag(
                    ("metadata", "version"),
                    f"{ref} is also defined in {shown(first)}; a name@version must be defined once",
                    hint="a released version is immutable: give the changed copy a new version",
                    code="duplicate-version",
                )
            )
    return out

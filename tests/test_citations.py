"""Comments and docs cite the product documentation by name and topic, never "seed 000" or
DESIGN(.md): neither is in the repository, so a reader could not follow such a citation."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("trainstack", "tests", "docs", "components", "infra", "benchmarks")
TOP_FILES = ("ARCHITECTURE.md", "README.md", "pyproject.toml")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".j2", ".toml", ".txt", ".json"}

# "seed 003", "Seed 000's", "seeds 002/003", "the seed's", "the seeds", "DESIGN" (a random
# number generator's seed is not a citation).
CITATION = re.compile(r"\bseeds? 0\d\d|\bthe seeds\b|\bseed's|\bDESIGN\b", re.IGNORECASE)


def _sources() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES]
    for folder in FOLDERS:
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    return [p for p in files if p.resolve() != Path(__file__).resolve()]


def _citations(text: str) -> list[str]:
    # "DESIGN" is case-sensitive: the design of a thing is fine, the missing DESIGN.md is not.
    hits = [m.group() for m in CITATION.finditer(text)]
    return [h for h in hits if h.lower() != "design" or h == "DESIGN"]


def test_the_pattern_catches_what_it_must() -> None:
    assert _citations("the metrics spec (seed 003)") == ["seed 003"]
    assert _citations("# Seed 000's examples; uid (seeds 002/003)") == ["Seed 000", "seeds 002"]
    assert _citations("immutable (DESIGN), as the seed's TF_CONFIG") == ["DESIGN", "seed's"]
    assert _citations("as the seeds say") == ["the seeds"]
    assert _citations("like the design; manual_seed(seed) from the seed; hash seeds") == []


def test_no_source_cites_seeds_or_design() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in _sources()
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if _citations(line)
    ]
    assert not found, "cite the product documentation by name and topic:\n" + "\n".join(found)

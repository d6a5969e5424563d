"""Labels that tell runs apart: the parameters whose values differ between them (a sweep's
trials, the runs of a comparison), not run ids nobody remembers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

MAX_LABEL = 48  # characters of a chart label before it is cut


def differing(params: Sequence[Mapping[str, object]]) -> list[str]:
    """Per item, `name=value` of each parameter whose value is not the same in all of them."""
    names = sorted({k for p in params for k in p})
    varying = [n for n in names if len({_text(p.get(n)) for p in params}) > 1]
    out = []
    for p in params:
        text = ", ".join(f"{n}={_text(p.get(n, '-'))}" for n in varying)
        out.append(text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…")
    return out


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)

"""The fonts charts are drawn in: matplotlib's own (DejaVu Sans) has no Chinese, Japanese or
Korean glyphs, and a metric, chart or run name may be in any script (the spec allows any
Unicode name), which it would draw as empty boxes.

A CJK font is found once per process: Noto Sans CJK from the `noto-cjk-sans-otc` package (a
dependency: a wheel of the font file, nothing fetched), else one the system has (fontconfig's,
as matplotlib lists them). It is registered with matplotlib and drawn as the fallback after the
usual sans-serif font, glyph by glyph. Without one, a chart still draws, and says under it which
characters no font here has."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from pathlib import Path

from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.text import Text

# Families a system may have with CJK glyphs (Debian's fonts-noto-cjk, fonts-wqy-*, macOS's,
# Windows'), tried in order when the package's font is not installed.
SYSTEM_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "PingFang SC",
    "Hiragino Sans GB",
    "Microsoft YaHei",
    "SimHei",
)
NOTE_ID = "missing-glyphs"
HINT = "install the noto-cjk-sans-otc package, or a CJK font (fonts-noto-cjk)"


def _packaged() -> Path | None:
    """The package's font file (the package is imported by name: it ships no type hints)."""
    try:
        package = importlib.import_module("noto_cjk_sans_otc")
    except ImportError:
        return None
    path = Path(str(getattr(package, "FONT_PATH", "")))
    return path if path.is_file() else None


@functools.cache
def cjk_family() -> str | None:
    """The family name of a CJK font matplotlib can draw with, registered; None without one."""
    path = _packaged()
    if path is not None:
        try:
            font_manager.fontManager.addfont(str(path))
            return str(font_manager.FontProperties(fname=str(path)).get_name())
        except (OSError, RuntimeError, ValueError):
            pass  # a damaged file: the system's, if any
    have = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in SYSTEM_FAMILIES if name in have), None)


def families() -> list[str]:
    """`font.family` for a chart: the usual sans-serif font, then the CJK one where found."""
    found = cjk_family()
    return ["sans-serif", found] if found else ["sans-serif"]


@functools.cache
def _font_paths(names: tuple[str, ...]) -> tuple[str, ...]:
    # A generic name (sans-serif) is matplotlib's default font; one not found falls back to it.
    found = (font_manager.findfont(font_manager.FontProperties(family=[n])) for n in names)
    return tuple(dict.fromkeys(found))


def missing(texts: Iterable[str]) -> str:
    """The characters of `texts` that none of the chart's fonts has (spaces and controls
    aside), in order, each once."""
    fonts = [font_manager.get_font(p) for p in _font_paths(tuple(families()))]
    out: dict[str, None] = {}
    for text in texts:
        for ch in text:
            if ch.isspace() or not ch.isprintable() or ch in out:
                continue
            if not any(f.get_char_index(ord(ch)) for f in fonts):
                out[ch] = None
    return "".join(out)


def note_missing(fig: Figure) -> None:
    """Write under `fig` which of its characters cannot be drawn here, once."""
    texts = [t for t in fig.findobj(Text) if isinstance(t, Text)]
    if any(t.get_gid() == NOTE_ID for t in texts):
        return
    lost = missing(t.get_text() for t in texts)
    if not lost:
        return
    # Named by code point: the characters themselves would be drawn as the same empty boxes.
    shown = " ".join(f"U+{ord(ch):04X}" for ch in lost[:6]) + (" …" if len(lost) > 6 else "")
    note = f"{len(lost)} character(s) drawn as boxes, no font here has them ({shown}): {HINT}"
    fig.text(0.01, 0.005, note, fontsize=7, color="#8a4b00", gid=NOTE_ID, family="sans-serif")

"""Chart names in Chinese (the spec allows any Unicode name) are drawn in a CJK font, not as
empty boxes; without one, a chart still draws and says which characters it could not."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from tests.metrics.test_draw_idle_report import write_chart
from trainstack.metrics import fonts
from trainstack.metrics.draw import chart_figure, chart_png

NAME = "训练损失"


def chinese_chart(tmp_path: Path):  # type: ignore[no-untyped-def]
    return write_chart(
        tmp_path,
        {"name": NAME, "x": "step", "ys": ["loss"], "series": ["训练", "验证"]},
        "step,训练,验证\n1,2,3\n2,1,2\n",
    )


def drawn_warnings(draw):  # type: ignore[no-untyped-def]
    """What matplotlib warned while drawing (a glyph missing from every font is one)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = draw()
    return got, [str(w.message) for w in caught]


def test_a_chinese_chart_is_drawn_with_its_glyphs(tmp_path: Path) -> None:
    assert fonts.cjk_family() is not None, "noto-cjk-sans-otc (a dependency) is not installed"
    data = chinese_chart(tmp_path)

    def draw() -> bytes:
        fig = chart_figure(data)
        FigureCanvasAgg(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        assert not [t for t in fig.findobj(Text) if t.get_gid() == fonts.NOTE_ID]
        return buf.getvalue()

    png, said = drawn_warnings(draw)
    assert png.startswith(b"\x89PNG")
    assert not [w for w in said if "missing from font" in w], said
    assert fonts.missing([NAME, "训练", "验证"]) == ""


def test_without_a_cjk_font_the_chart_draws_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fonts, "cjk_family", lambda: None)
    data = chinese_chart(tmp_path)
    png, _ = drawn_warnings(lambda: chart_png(data))
    assert png.startswith(b"\x89PNG")
    fig, _ = drawn_warnings(lambda: chart_figure(data))
    [note] = [t.get_text() for t in fig.findobj(Text) if t.get_gid() == fonts.NOTE_ID]
    assert "drawn as boxes" in note and "U+8BAD" in note and "noto-cjk-sans-otc" in note
    assert fonts.missing(["loss"]) == ""  # Latin names need no note

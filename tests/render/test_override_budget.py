"""A platform project's templates run wherever a run is planned, CI on a pull request among them:
a render is bounded as Kubernetes bounds admission CEL (trainstack/render/budget.py), and every
way an override can fail or overspend is one TemplateError naming the file, never a traceback,
a MemoryError or a render that does not end.

Each case below ran past 30 s, died of MemoryError or hung before the budget (nested loops, a
huge repetition, `wordwrap`/`indent`/printf widths, a YAML alias bomb in the rendered text, an
object far over what the API server accepts).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.render.conftest import SPECS
from tests.render.test_template_overrides import _packaged, _replace, project
from trainstack.render import budget


def _pod_with(line: str) -> str:
    return _replace(_packaged("_pod.yaml.j2"), "  volumes:", line + "\n  volumes:")


EXPENSIVE: dict[str, tuple[str, str]] = {
    "nested loops over ranges": (
        "  x: {% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}1",
        r"_pod\.yaml\.j2:\d+: (more than 1,000,000 loop steps|longer than [\d.]+ s)",
    ),
    "nested loops over lists": (
        "  x: {% set xs = range(20000) | list %}"
        "{% for a in xs %}{% for b in xs %}{% endfor %}{% endfor %}1",
        r"_pod\.yaml\.j2:\d+: (more than 1,000,000 loop steps|longer than [\d.]+ s)",
    ),
    "a huge repetition": (
        '  x: {{ ("ab" * 1000000000) | length }}',
        r"_pod\.yaml\.j2:\d+: a repeated string or list of 2,000,000,000 items",
    ),
    "a huge power": ("  x: {{ (10 ** 100000000) | string | length }}", r"a power's digits"),
    "a printf width": ('  x: {{ "%999999999d" % 1 }}', r"a formatted string of"),
    "a printf width through format": (
        '  x: {{ "%999999999d" | format(1) }}',
        r"what format would build of",
    ),
    "a huge indent": ('  x: {{ "a\\nb" | indent(999999999) | length }}', r"indent"),
    "a huge center": ('  x: {{ "a" | center(999999999) | length }}', r"center"),
    "a join of huge strings": (
        '  x: {{ (["x" * 1000000] * 1000) | join | length }}',
        r"what join would build of",
    ),
    "an object over what the API server accepts": (
        '  x: {{ "y" * 1000000 }}{{ "y" * 1000000 }}',
        r"templates.*: (a rendered object|what indent would build) of [\d,]+ items, over 1,572,864",
    ),
    "a YAML alias bomb": (
        "  bomb: &a [x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
        r"is not YAML: a YAML alias \(\*a\)",
    ),
}


@pytest.fixture
def short_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short wall-time budget, so the one case only time bounds ends soon; what the tests
    assert is the error, never how long it took."""
    monkeypatch.setattr(budget, "MAX_SECONDS", 1.0)


@pytest.mark.parametrize("what", sorted(EXPENSIVE))
def test_an_expensive_override_is_one_template_error(
    what: str, tmp_path: Path, cli: Cli, short_budget: None
) -> None:
    line, message = EXPENSIVE[what]
    where = project(tmp_path / "p", **{"_pod.yaml.j2": _pod_with(line)})
    done = cli("render", str(SPECS / "mpi.run.yaml"), "--project", str(where))
    assert done.code == 2, (done.out, done.err)
    assert "Traceback" not in done.err and done.out == ""
    assert done.err.startswith("error: ") and done.err.count("error: ") == 1, done.err
    assert re.search(message, done.err), done.err


def test_a_template_that_cannot_be_compiled_is_one_error(tmp_path: Path, cli: Cli) -> None:
    """jinja2 folded constants while compiling: `"%999999999d" % 1` was built at compile time,
    outside any render, as a MemoryError traceback."""
    where = project(tmp_path / "p", **{"_pod.yaml.j2": _pod_with('  x: {{ "%9999999999d" % 1 }}')})
    done = cli("render", str(SPECS / "mpi.run.yaml"), "--project", str(where))
    assert done.code == 2 and "Traceback" not in done.err, done.err
    assert "_pod.yaml.j2" in done.err


def test_the_packaged_templates_and_a_fair_override_spend_little(tmp_path: Path, cli: Cli) -> None:
    fair = _pod_with(
        "  x: {% for a in range(1000) %}{% for b in range(100) %}{% endfor %}{% endfor %}1"
    )
    where = project(tmp_path / "p", **{"_pod.yaml.j2": fair})
    done = cli("render", str(SPECS / "mpi.run.yaml"), "--project", str(where))
    assert done.code == 0, done.err


def test_a_callers_own_alarm_neither_turns_the_budget_off_nor_is_lost() -> None:
    """A caller that set an alarm of its own (the in-process CLI's timeout) left renders bounded
    only by loop steps, which a loop over a list does not count: one ran until it finished."""
    import signal
    import time

    fired: list[int] = []

    def host(signum: int, frame: object) -> None:
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, host)
    try:
        signal.setitimer(signal.ITIMER_REAL, 60)
        with pytest.raises(budget.Exhausted, match="longer than"), budget.bounded(0.2):
            while True:  # stands for a template's loop that no step counts
                time.sleep(0.01)
        assert signal.getsignal(signal.SIGALRM) is host
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 60  # the caller's alarm is still to come
        # The caller's deadline first: its handler runs, and the render's still holds after.
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(budget.Exhausted, match="longer than"), budget.bounded(0.3):
            while True:
                time.sleep(0.01)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

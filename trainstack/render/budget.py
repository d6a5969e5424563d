"""Bounds on what one template render may cost: time, loop steps and the size of what it builds.

A platform project's templates run wherever a run is planned (CI on a pull request among them),
and the sandbox bounds what they may touch, not what they may spend: nested loops over ranges, a
string multiplied a billion times, `wordwrap` or `indent` of a huge string, a printf width of a
billion ran for minutes or died of MemoryError. As Kubernetes bounds admission CEL with a cost
budget, a render here gets

- `MAX_STEPS` iterations of `range()` in all (each loop over a range counts its items),
- `MAX_TEXT` characters for any string or list an operator or filter builds, checked from the
  operands' sizes before it is built, and for the rendered object itself (the API server refuses
  an object much over 1.5 MiB; etcd's request limit),
- `MAX_SECONDS` of wall time, enforced by the interval timer where a render runs on the main
  thread (a loop over a plain list counts no step), and checked at every step elsewhere.

Exceeding one is `Exhausted`, which the engine turns into one TemplateError naming the file and
line of the override that spent it.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from jinja2.sandbox import MAX_RANGE

MAX_STEPS = 1_000_000
MAX_TEXT = 3 << 19  # 1.5 MiB
MAX_SECONDS = 10.0


class Exhausted(Exception):
    """A render spent more than its budget allows."""


@dataclass
class _Budget:
    deadline: float
    steps: int = 0
    seconds: float = field(default=MAX_SECONDS)

    def step(self, count: int = 1) -> None:
        self.steps += count
        if self.steps > MAX_STEPS:
            raise Exhausted(f"more than {MAX_STEPS:,} loop steps (the render budget)")
        if self.steps % 4096 == 0 and time.monotonic() > self.deadline:
            self.late()

    def late(self) -> None:
        raise Exhausted(f"longer than {self.seconds:g} s (the render budget)")


_current: ContextVar[_Budget | None] = ContextVar("trainstack_render_budget", default=None)


@contextlib.contextmanager
def bounded(seconds: float | None = None) -> Iterator[None]:
    """Everything rendered inside gets one budget."""
    limit = MAX_SECONDS if seconds is None else seconds
    budget = _Budget(deadline=time.monotonic() + limit, seconds=limit)
    token = _current.set(budget)
    try:
        with _alarm(budget):
            yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def _alarm(budget: _Budget) -> Iterator[None]:
    """SIGALRM at the deadline, where this is the main thread: Python runs the handler between
    two bytecodes, so a template's loop stops wherever it is. A caller's own alarm (a Python
    handler and a one-shot timer: a harness's timeout around an in-process command) is kept:
    whichever deadline comes first fires first, and the caller's timer is armed again, for what
    is left of it, afterwards. Without that, a render under such a caller had no time bound
    but the loop steps, which a loop over a list does not count."""
    previous = signal.getsignal(signal.SIGALRM)
    delay, interval = signal.getitimer(signal.ITIMER_REAL)
    usable = (
        threading.current_thread() is threading.main_thread()
        and interval == 0.0
        and ((previous in (signal.SIG_DFL, None) and delay == 0.0) or callable(previous))
    )
    if not usable:
        yield
        return
    host_deadline = time.monotonic() + delay if delay else None
    state = {"host_pending": host_deadline is not None}

    def arm() -> None:
        deadlines = [budget.deadline]
        if state["host_pending"] and host_deadline is not None:
            deadlines.append(host_deadline)
        signal.setitimer(signal.ITIMER_REAL, max(min(deadlines) - time.monotonic(), 0.001))

    def on_alarm(signum: int, frame: Any) -> None:
        ours_first = not state["host_pending"] or (
            host_deadline is not None and budget.deadline <= host_deadline
        )
        if ours_first:
            budget.late()
        state["host_pending"] = False
        if callable(previous):
            previous(signum, frame)  # the caller's alarm, as it would have run without us
        arm()  # it returned: our own deadline is still to come

    signal.signal(signal.SIGALRM, on_alarm)
    arm()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if state["host_pending"] and host_deadline is not None:
            signal.setitimer(signal.ITIMER_REAL, max(host_deadline - time.monotonic(), 0.001))


def current() -> _Budget | None:
    return _current.get()


def steps(count: int = 1) -> None:
    budget = _current.get()
    if budget is not None:
        budget.step(count)


class CountedRange:
    """The sandbox's `range` (at most MAX_RANGE items), each item iterated a step of the
    budget; its length is known without stepping."""

    def __init__(self, *args: int) -> None:
        self._range = range(*args)
        if len(self._range) > MAX_RANGE:
            raise Exhausted(f"a range of more than {MAX_RANGE:,} items")

    def __len__(self) -> int:
        return len(self._range)

    def __iter__(self) -> Iterator[int]:
        for value in self._range:
            steps()
            yield value

    def __repr__(self) -> str:
        return repr(self._range)


def size_of(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | list | tuple | dict) else 0


def check_size(size: int, what: str) -> None:
    if size > MAX_TEXT:
        raise Exhausted(f"{what} of {size:,} items, over {MAX_TEXT:,} (the render budget)")


def product_size(left: Any, right: Any) -> int:
    """How long `left * right` would be, before it is built (0 for numbers)."""
    for seq, times in ((left, right), (right, left)):
        if size_of(seq) and isinstance(times, int) and not isinstance(times, bool):
            return size_of(seq) * max(times, 0)
    return 0


_WIDTH = re.compile(r"%[-+ #0]*(\d*)(?:\.(\d+))?")


def format_size(text: str, args: Any = ()) -> int:
    """How long `text % args` may be: every width and precision in the format adds to it."""
    extra = 0
    for width, precision in _WIDTH.findall(text):
        extra += int(width or 0) + int(precision or 0)
    values = args if isinstance(args, tuple | list) else (args,)
    return len(text) + extra + sum(size_of(v) if isinstance(v, str) else 32 for v in values)


def _estimate(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """The size a filter is about to build, from its arguments, where it can grow them."""
    first = args[0] if args else None
    if name == "indent" and isinstance(first, str):
        width = args[1] if len(args) > 1 else kwargs.get("width", 4)
        width = len(width) if isinstance(width, str) else int(width or 0)
        return len(first) + (first.count("\n") + 2) * max(width, 0)
    if name == "center" and isinstance(first, str):
        return max(len(first), int(args[1] if len(args) > 1 else kwargs.get("width", 80)))
    if name == "format" and isinstance(first, str):
        return format_size(first, args[1:])
    if name == "join" and first is not None and not isinstance(first, str):
        items = list(first) if not isinstance(first, list | tuple) else first
        return sum(len(str(i)) for i in items[: MAX_TEXT + 1])
    if name == "replace" and isinstance(first, str) and len(args) > 2:
        old, new = str(args[1]), str(args[2])
        hits = first.count(old) if old else len(first) + 1
        return len(first) + hits * len(new)
    return 0


def bounded_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A filter held to the budget: what it is about to build counted from its arguments (a
    width, a format's widths, a join's items), and what it built."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        steps()
        values = args[1:] if getattr(fn, "jinja_pass_arg", None) is not None else args
        check_size(_estimate(name, values, kwargs), f"what {name} would build")
        result = fn(*args, **kwargs)
        check_size(size_of(result), f"what {name} built")
        return result

    for attr in ("jinja_pass_arg", "__name__", "__doc__"):
        if hasattr(fn, attr):
            with contextlib.suppress(AttributeError, TypeError):
                setattr(wrapped, attr, getattr(fn, attr))
    return wrapped


def binop_size(operator: str, left: Any, right: Any) -> None:
    """Refuse, before it is computed, an operator result over the budget."""
    if operator == "*":
        check_size(product_size(left, right), "a repeated string or list")
    elif operator == "+":
        check_size(size_of(left) + size_of(right), "a joined string or list")
    elif operator == "%" and isinstance(left, str):
        check_size(format_size(left, right), "a formatted string")
    elif operator == "**" and isinstance(left, int) and isinstance(right, int):
        digits = abs(right) * max(abs(left), 2).bit_length() // 3
        check_size(digits, "a power's digits")

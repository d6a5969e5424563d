"""What the console reads and draws is kept, keyed on what it was read or drawn from: the sweeps
pages read each optuna storage once until it changes, a sweep's history and compare's chart are
drawn once until their inputs change, a warm run page reads no usage samples again, and a
comparison of 12 runs keeps all 12. Each read or draw is counted by wrapping the real function;
the pages are the real application over real SQLite, optuna storages and run folders."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.ui.conftest import LOOPBACK
from tests.ui.fixtures import add_trial, metric_run, sweep, wide_run
from trainstack.ui import charts
from trainstack.ui.app import UiConfig, create_app
from trainstack.ui.cache import StampCache


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    charts.forget()  # nothing kept from another test's registry
    yield tmp_path / "home"
    charts.forget()


@pytest.fixture
def client(home: Path) -> Iterator[FlaskClient]:
    with create_app(UiConfig(home=home)).test_client() as c:
        c.environ_base["HTTP_HOST"] = LOOPBACK["Host"]
        yield c


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> Counter[str]:
    """Counts calls of `module.name` (still called), by their first argument's text."""
    calls: Counter[str] = Counter()
    real: Callable[..., Any] = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[str(args[1] if len(args) > 1 else args[0] if args else "")] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def ok(client: FlaskClient, path: str) -> bytes:
    got = client.get(path)
    assert got.status_code == 200, (path, got.status_code, got.data[:300])
    return got.data


def test_the_sweeps_pages_read_each_storage_once_until_it_changes(
    home: Path, client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.sweep import listing, summary

    for name in ("s0", "s1", "s2"):
        sweep(home, name, trials=3)
    loads = counting(monkeypatch, listing, "info")
    draws = counting(monkeypatch, summary, "history_png")
    for _ in range(3):
        ok(client, "/sweeps")
        ok(client, "/sweeps/s1")
        first = ok(client, "/sweeps/s1/history.png")
    assert loads == {"s0": 1, "s1": 1, "s2": 1}
    assert sum(draws.values()) == 1
    add_trial(home, "s1", 0.01)  # the sweep goes on: its pages and its chart follow
    listed = ok(client, "/sweeps")
    assert b"<td>4</td><td>trial 3: 0.01</td>" in listed
    assert b"trial 3 (s1-3): 0.01" in ok(client, "/sweeps/s1")
    assert ok(client, "/sweeps/s1/history.png") != first
    assert loads == {"s0": 1, "s1": 2, "s2": 1} and sum(draws.values()) == 2


def test_the_compare_chart_is_drawn_once_until_a_run_changes(
    home: Path, client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.metrics import compare

    a, b = metric_run(home, "a"), metric_run(home, "b", scale=2.0)
    draws = counting(monkeypatch, compare, "overlay")
    src = f"/compare/chart.png?run={a}&run={b}&metric=train/loss"
    first = ok(client, src)
    assert ok(client, src) == first and sum(draws.values()) == 1
    with (home / "runs" / b / "metrics" / "train.csv").open("a") as fh:
        fh.write("51,9.0\n")  # a spike at the end of b
    assert ok(client, src) != first and sum(draws.values()) == 2


def test_a_comparison_of_twelve_runs_reads_each_run_once(
    home: Path, client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [metric_run(home, f"r{i}", scale=1.0 + i) for i in range(12)]
    reads = counting(monkeypatch, charts, "view")  # trainstack.metrics.runview's, as charts has it
    query = "&".join(f"run={i}" for i in ids)
    for _ in range(2):
        html = ok(client, f"/compare?{query}").decode()
        chart = re.search(r'id="overlay" src="([^"]+)"', html)
        assert chart is not None
        ok(client, chart.group(1).replace("&amp;", "&"))
    assert sum(reads.values()) == 12, reads


def test_a_warm_run_page_reads_no_usage_samples_again(
    home: Path, client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.metrics import usage

    run_id = wide_run(home)
    reads = counting(monkeypatch, usage, "read")
    ok(client, f"/runs/{run_id}")
    assert sum(reads.values()) == 1  # the view; its cost and goodput ledger use what it read
    ok(client, f"/runs/{run_id}")
    assert sum(reads.values()) == 1


def test_a_cache_holds_no_more_bytes_than_its_budget() -> None:
    kept: StampCache[bytes] = StampCache(100, budget=1000, weigh=len)
    for i in range(50):
        kept.get(i, (), lambda: b"x" * 300)
    assert kept.held == (3, 900)
    assert kept.get("big", (), lambda: b"y" * 1001) == b"y" * 1001  # returned, not kept
    assert kept.held == (3, 900)
    calls = []
    kept.get(49, (), lambda: calls.append(1) or b"")  # the most recent is still there
    assert calls == []

"""``status``, ``logs`` and ``wait`` against a server that never answers or
answers oddly. Each case ends in one clear error with a non-zero exit — never a traceback, never
a hang — and nothing odd reaches the registry (the run's record is left as it was).

The server is the recorded-response server of test_cluster (plus, for silence, a socket that
accepts and never answers); the requests go through the real ``kubernetes`` client.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_cluster import (  # noqa: F401  (fixtures)
    JOB_PATH,
    PODS_PATH,
    PlatformCLI,
    RecordedAPI,
    api,
    cli,
    cli_exit,
    deployed,
    home,
    kubeconfig,
    registry_record,
)

TIMEOUT_ENV = "TRAINSTACK_KUBE_TIMEOUT"
RECORDED = Path(__file__).parents[1] / "infra" / "kubeapi"


def running_pods(**changes: Any) -> bytes:
    """pods-running.json with the worker pod's fields changed (dotted paths)."""
    doc = json.loads((RECORDED / "pods-running.json").read_bytes())
    worker = next(p for p in doc["items"] if p["metadata"]["labels"]["replica-type"] == "worker")
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = worker
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return json.dumps(doc).encode()


def assert_one_clear_error(done: Any, *needles: str) -> None:
    err = done.err
    assert done.code not in (0, None), done.output
    assert "Traceback" not in done.output, done.output
    assert err.count("error:") == 1, err
    for needle in needles:
        assert needle in err, err


def assert_record_untouched(home: Path, entry: Any) -> None:  # noqa: F811
    record = registry_record(home, entry)
    assert str(record.status) == "running" and record.restarts == 0
    assert not record.exits


@pytest.fixture(autouse=True)
def stack_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """``status`` reads the stack's history too: test_deploy covers it; here only the cluster."""
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus

    monkeypatch.setattr(
        service,
        "stack_status",
        lambda found: StackStatus(
            entry=found.entry,
            last_kind="update",
            last_result="succeeded",
            last_end=None,
            outputs={},
        ),
    )


@pytest.fixture
def silent() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "mnist-baseline-01"],
        ["wait", "mnist-baseline-01"],
        ["logs", "mnist-baseline-01"],
    ],
)
def test_a_server_that_never_answers_is_one_clear_error_within_the_timeout(
    home: Path,  # noqa: F811
    cli: PlatformCLI,  # noqa: F811
    silent: str,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry = deployed(home)
    cli.outputs["kubeconfig"] = kubeconfig(silent)
    monkeypatch.setenv(TIMEOUT_ENV, "0.3")  # waited out: a short one
    done = cli_exit(argv)
    assert_one_clear_error(done, f"the cluster at {silent} did not answer within 0.3s")
    assert TIMEOUT_ENV in done.err, "the error says how to allow more time"
    assert_record_untouched(home, entry)


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        (JOB_PATH, b'"a string"', "expected an object, found a string"),
        (JOB_PATH, b'{"status": {"conditions": "Running"}}', "status.conditions: expected a list"),
        (
            JOB_PATH,
            b'{"status": {"conditions": [{"type": 7, "status": "True"}]}}',
            "status.conditions[0].type: expected a string, found a number",
        ),
        (PODS_PATH, b'{"items": ["a pod"]}', "items[0]: expected an object, found a string"),
        (
            PODS_PATH,
            running_pods(**{"status.containerStatuses.0.lastState.terminated.exitCode": None}),
            "exitCode: expected an integer, found null",
        ),
        (
            PODS_PATH,
            running_pods(**{"status.containerStatuses.0.lastState.terminated.exitCode": "137"}),
            "exitCode: expected an integer, found a string",
        ),
        (
            PODS_PATH,
            running_pods(**{"status.containerStatuses.0.restartCount": 2**70}),
            "restartCount: expected an integer from 0 to 2147483647",
        ),
        (
            PODS_PATH,
            running_pods(**{"metadata.labels.replica-index": "-1"}),
            "replica-index: expected a replica index (0, 1, ...), found '-1'",
        ),
        (
            PODS_PATH,
            running_pods(**{"metadata.labels.replica-index": "one"}),
            "replica-index: expected a replica index (0, 1, ...), found 'one'",
        ),
        (JOB_PATH, b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (PODS_PATH, b"{not json", "did not answer JSON"),
    ],
)
@pytest.mark.parametrize("verb", ["status", "wait"])
def test_an_odd_answer_is_one_clear_error_and_nothing_reaches_the_registry(
    home: Path,  # noqa: F811
    api: RecordedAPI,  # noqa: F811
    cli: PlatformCLI,  # noqa: F811
    path: str,
    body: bytes,
    needle: str,
    verb: str,
) -> None:
    entry = deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    api.serve(path, (200, body))
    done = cli_exit([verb, "mnist-baseline-01"])
    assert_one_clear_error(done, needle, "the cluster's answer")
    assert_record_untouched(home, entry)


def test_logs_of_an_odd_pod_list_is_one_clear_error(
    home: Path,  # noqa: F811
    api: RecordedAPI,  # noqa: F811
    cli: PlatformCLI,  # noqa: F811
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, (200, running_pods(**{"metadata.labels.replica-index": "x"})))
    done = cli_exit(["logs", "mnist-baseline-01"])
    assert_one_clear_error(done, "replica-index")

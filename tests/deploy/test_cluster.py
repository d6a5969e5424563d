"""status / logs / wait of a deployed run, through the real ``kubernetes`` client, against the
Kubernetes API's responses (tests/infra/kubeapi/*.json) served over HTTP on 127.0.0.1.

The Pulumi CLI is a stand-in that answers the platform stack's outputs: the kubeconfig the
client uses is the platform's (or its team-scoped one), which points at the local server.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from pulumi.automation import CommandResult, PulumiCommand
from pulumi.automation.errors import create_command_error
from semver import VersionInfo

from tests.clirunner import Cli, Result
from trainstack.deploy.index import RunIndex, StackEntry

RECORDED = Path(__file__).parents[1] / "infra" / "kubeapi"
PLATFORM = "organization/trainstack/local"
NS = "team-vision"
JOB_PATH = f"/apis/training.kubedl.io/v1alpha1/namespaces/{NS}/pytorchjobs/mnist-baseline-01"
PODS_PATH = f"/api/v1/namespaces/{NS}/pods"
TOKEN = "platform-admin-token"


class RecordedAPI(ThreadingHTTPServer):
    """Serves recorded responses by path; a list of them is served in turn (the last repeats)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: dict[str, list[tuple[int, bytes]]] = {}
        self.requests: list[tuple[str, dict[str, list[str]], str]] = []  # path, query, auth
        # what was written: method, path, JSON body (None when empty), auth
        self.writes: list[tuple[str, str, Any, str]] = []

    def serve(self, path: str, *responses: str | tuple[int, bytes]) -> None:
        self.routes[path] = [
            (200, (RECORDED / r).read_bytes()) if isinstance(r, str) else r for r in responses
        ]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def answer(self, path: str) -> tuple[int, bytes]:
        queue = self.routes.get(path)
        if not queue:
            return 404, json.dumps(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "reason": "NotFound",
                    "code": 404,
                }
            ).encode()
        return queue.pop(0) if len(queue) > 1 else queue[0]


class _Handler(BaseHTTPRequestHandler):
    server: RecordedAPI
    timeout = 5  # a stuck client cannot hold the test

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self.server.requests.append(
            (url.path, parse_qs(url.query), self.headers.get("Authorization", ""))
        )
        code, body = self.server.answer(url.path)
        self.send_response(code)
        self.send_header(
            "Content-Type", "text/plain" if url.path.endswith("/log") else "application/json"
        )
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _write(self) -> None:
        """POST and DELETE: recorded with their body, answered from the routes served as
        ``"<METHOD> <path>"`` (404 when none)."""
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        auth = self.headers.get("Authorization", "")
        self.server.writes.append((self.command, url.path, body, auth))
        code, answer = self.server.answer(f"{self.command} {url.path}")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_POST = _write
    do_DELETE = _write

    def log_message(self, *args: Any) -> None:  # keep pytest's output clean
        pass


@pytest.fixture
def api() -> Iterator[RecordedAPI]:
    server = RecordedAPI()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def kubeconfig(url: str, token: str = TOKEN) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "recorded",
            "clusters": [{"name": "recorded", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "recorded", "context": {"cluster": "recorded", "user": "u"}}],
        }
    )


class PlatformCLI(PulumiCommand):
    """Stands in for ``pulumi``: the platform stack's outputs (secrets only with
    --show-secrets, as the CLI does), and an empty stack list."""

    def __init__(self, outputs: dict[str, Any]) -> None:
        self.command = "pulumi"
        self.version = VersionInfo.parse("3.272.0")
        self.outputs = outputs
        self.calls: list[list[str]] = []

    def run(
        self,
        args: list[str],
        cwd: str,
        additional_env: Any,
        on_output: Any = None,
        on_error: Any = None,
    ) -> CommandResult:
        self.calls.append(list(args))
        if args[:2] == ["stack", "output"] and PLATFORM in args:
            shown = {
                k: v if "--show-secrets" in args or "ubeconfig" not in k else "[secret]"
                for k, v in self.outputs.items()
            }
            return CommandResult(json.dumps(shown), "", 0)
        if args[:2] == ["stack", "ls"]:
            return CommandResult("[]", "", 0)
        result = CommandResult("", f"error: unexpected call {args}", 255)
        raise create_command_error(result)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.delenv("TRAINSTACK_BACKEND_URL", raising=False)
    return tmp_path / "home"


def deployed(
    home: Path,
    *,
    kind: str = "PyTorchJob",
    job: str = "mnist-baseline-01",
    api_version: str = "training.kubedl.io/v1alpha1",
) -> StackEntry:
    """A run as ``deploy`` leaves it: a registry record (running) and an index entry."""
    from trainstack.registry import NewRun, Registry, RunKind

    with Registry.open(home) as registry:
        record = registry.create(
            NewRun(
                name=job,
                component="mnist-ddp",
                component_version="1.2.0",
                kind=RunKind.CLUSTER,
                stack_name=f"local.{job}",
            )
        )
        registry.mark_running(record.id, [])
    entry = StackEntry(
        run=job,
        env="local",
        stack=f"local.{job}",
        project="trainstack-runs",
        backend=f"file://{home / 'pulumi'}",
        component="mnist-ddp",
        version="1.2.0",
        experiment=None,
        spec_path=None,
        registry_id=record.id,
        outputs={"jobName": job, "namespace": NS, "kind": kind, "apiVersion": api_version},
    )
    RunIndex(home).put(entry)
    return entry


@pytest.fixture
def cli(api: RecordedAPI, monkeypatch: pytest.MonkeyPatch) -> PlatformCLI:
    import trainstack.deploy.workspace as workspace

    stand_in = PlatformCLI(
        {
            "mode": "kubeconfig",
            "kubeconfig": kubeconfig(api.url),
            "kubeContext": "recorded",
            "namespaces": {"vision": NS},
        }
    )
    monkeypatch.setattr(workspace, "find_pulumi", lambda: stand_in)
    return stand_in


def cli_exit(argv: list[str]) -> Result:
    """The verb run in this process (the recorded API and stand-in CLI apply)."""
    return Cli().invoke(*argv)


def registry_record(home: Path, entry: StackEntry) -> Any:
    from trainstack.registry import Registry

    assert entry.registry_id is not None
    with Registry.open(home) as registry:
        return registry.get(entry.registry_id)


# --- status ------------------------------------------------------------------------------------


def test_status_shows_conditions_and_each_replica(
    home: Path, api: RecordedAPI, cli: PlatformCLI, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.deploy import service

    entry = deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    state = service.live(service.locate("mnist-baseline-01", home=home))
    assert str(state.outcome) == "running"
    assert [(c.type, c.status) for c in state.conditions] == [
        ("Created", "True"),
        ("Running", "True"),
    ]
    master, worker = state.replicas
    assert (master.role, master.index, master.phase, master.restarts, master.exit_code) == (
        "master",
        0,
        "Running",
        0,
        None,
    )
    # the worker was OOM-killed once and restarted: its last exit is what status shows
    assert (worker.role, worker.phase, worker.restarts, worker.exit_code, worker.reason) == (
        "worker",
        "Running",
        1,
        137,
        "OOMKilled",
    )
    # the client used the platform's kubeconfig and asked for the job's pods by label
    paths = {p: (q, auth) for p, q, auth in api.requests}
    assert paths[PODS_PATH][0] == {"labelSelector": ["job-name=mnist-baseline-01"]}
    assert paths[JOB_PATH][1] == f"Bearer {TOKEN}"
    assert ["stack", "output", "--json", "--stack", PLATFORM, "--show-secrets"] in cli.calls
    record = registry_record(home, entry)
    assert str(record.status) == "running" and record.restarts == 1


def test_status_cli_prints_the_live_job(
    home: Path,
    api: RecordedAPI,
    cli: PlatformCLI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus

    entry = deployed(home)
    # the stack half (Pulumi history) is covered in test_deploy; here only the live half
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(
            entry=entry, last_kind="update", last_result="succeeded", last_end=None, outputs={}
        ),
    )
    api.serve(JOB_PATH, "pytorchjob-failed.json")
    api.serve(PODS_PATH, "pods-failed.json")
    done = cli_exit(["status", "mnist-baseline-01"])
    assert done.code == 0
    out = done.out
    assert (
        "job PyTorchJob team-vision/mnist-baseline-01: failed (PyTorchJob "
        "mnist-baseline-01 is failed because 1 Master replica(s) failed.)"
    ) in out
    assert "condition Failed=True JobFailed since 2026-11-30T09:07:12Z" in out
    # the replicas as a table (trainstack.texttable), under the job
    table = out.split("condition ")[-1].splitlines()[1:]
    assert [line.split() for line in table] == [
        ["REPLICA", "PHASE", "RESTARTS", "EXIT", "REASON", "POD"],
        ["master-0", "Failed", "0", "1", "Error", "mnist-baseline-01-master-0"],
        ["worker-0", "Running", "0", "-", "-", "mnist-baseline-01-worker-0"],
    ]
    assert table[0].startswith("  REPLICA  ") and table[0].index("POD") == table[1].index("mnist")
    assert str(registry_record(home, entry).status) == "failed"


def test_status_lists_and_records_the_restarts_the_pods_show(
    home: Path, api: RecordedAPI, cli: PlatformCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a deployed run's recovery history, from lastState.terminated
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus
    from trainstack.registry import Registry

    entry = deployed(home)
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(
            entry=entry, last_kind="update", last_result="succeeded", last_end=None, outputs={}
        ),
    )
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    for _ in range(2):  # read twice: recorded once
        done = cli_exit(["status", "mnist-baseline-01"])
        assert done.code == 0, done.output
    (line,) = [x for x in done.out.splitlines() if "restart:" in x]
    assert "worker-0  OOMKilled, exit 137, after 29.0s" in line
    assert entry.registry_id is not None
    with Registry.open(home) as registry:
        (restart,) = registry.restarts(entry.registry_id)
    assert (restart.key, restart.reason, restart.exit_code) == ("worker-0", "OOMKilled", 137)


def test_a_launchers_final_hang_reads_hung_from_the_termination_message(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    from trainstack.deploy import service
    from trainstack.deploy.recovery import restarts

    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-hung.json")
    state = service.live(service.locate("mnist-baseline-01", home=home))
    (restart,) = restarts(state)
    assert (restart.key, restart.reason, restart.exit_code) == ("worker-0", "hung", 125)
    assert restart.ran_seconds == 3629.0
    assert "3 hang restart(s)" in restart.detail


def test_a_finished_custom_job_reads_succeeded_with_indexed_replicas(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    from trainstack.deploy import service

    entry = deployed(home, kind="Job", job="sweep-01", api_version="batch/v1")
    api.serve(f"/apis/batch/v1/namespaces/{NS}/jobs/sweep-01", "job-custom-complete.json")
    api.serve(PODS_PATH, "pods-custom.json")
    state = service.live(service.locate("sweep-01", home=home))
    assert str(state.outcome) == "succeeded"
    assert [(r.role, r.index, r.exit_code) for r in state.replicas] == [
        ("worker", 0, 0),
        ("worker", 1, 0),
    ]
    record = registry_record(home, entry)
    assert str(record.status) == "succeeded"
    assert [(e.key, e.exit_code) for e in record.exits] == [("worker-0", 0), ("worker-1", 0)]


def test_team_credentials_are_preferred_to_the_admin_kubeconfig(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    from trainstack.deploy import service

    deployed(home)
    cli.outputs["teamKubeconfigs"] = {NS: kubeconfig(api.url, token="team-vision-token")}
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    service.live(service.locate("mnist-baseline-01", home=home))
    assert {auth for _, _, auth in api.requests} == {"Bearer team-vision-token"}


def test_refused_credentials_are_one_clear_error(
    home: Path, api: RecordedAPI, cli: PlatformCLI, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(home)
    api.serve(JOB_PATH, (401, b'{"kind":"Status","code":401,"reason":"Unauthorized"}'))
    done = cli_exit(["wait", "mnist-baseline-01"])
    err = done.err
    assert done.code == 2
    assert "refused the credentials from platform stack" in err and "HTTP 401" in err
    assert "rotated" in err and "Traceback" not in err and TOKEN not in err


def test_an_unreachable_cluster_is_one_clear_error(
    home: Path, cli: PlatformCLI, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(home)
    cli.outputs["kubeconfig"] = kubeconfig("http://127.0.0.1:9")  # discard port: refused
    done = cli_exit(["logs", "mnist-baseline-01"])
    err = done.err
    assert done.code == 2
    assert "cannot reach the cluster at http://127.0.0.1:9" in err and "Traceback" not in err


# --- wait --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("final", "pods", "code", "status"),
    [
        ("pytorchjob-succeeded.json", "pods-succeeded.json", 0, "succeeded"),
        ("pytorchjob-failed.json", "pods-failed.json", 1, "failed"),
    ],
)
def test_wait_blocks_until_the_job_ends_and_exits_with_its_outcome(
    final: str,
    pods: str,
    code: int,
    status: str,
    home: Path,
    api: RecordedAPI,
    cli: PlatformCLI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    entry = deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json", "pytorchjob-running.json", final)
    api.serve(PODS_PATH, "pods-running.json", "pods-running.json", pods)
    done = cli_exit(["wait", "mnist-baseline-01", "--interval", "0.1", "--timeout", "30"])
    assert done.code == code
    assert sum(1 for p, _, _ in api.requests if p == JOB_PATH) == 3, "polled until the end"
    err = done.err
    assert "mnist-baseline-01: running [master-0 Running, worker-0 Running]" in err
    if code:
        assert "job team-vision/mnist-baseline-01 failed" in err and "master-0 exit 1" in err
    assert str(registry_record(home, entry).status) == status


def test_wait_gives_up_after_its_timeout(
    home: Path, api: RecordedAPI, cli: PlatformCLI, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    started = time.monotonic()
    done = cli_exit(["wait", "mnist-baseline-01", "--interval", "0.1", "--timeout", "0.5"])
    assert done.code == 124
    assert time.monotonic() - started < 20
    assert "still running after 0.5s" in done.err
    assert str(registry_record(home, entry).status) == "running"


# --- logs --------------------------------------------------------------------------------------


def test_logs_of_one_replica(
    home: Path, api: RecordedAPI, cli: PlatformCLI, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    log = f"{NS}/pods/mnist-baseline-01-worker-0/log"
    api.serve(f"/api/v1/namespaces/{log}", (200, b"epoch 1 loss 0.9\nepoch 2 loss 0.5\n"))
    done = cli_exit(
        ["logs", "mnist-baseline-01", "--role", "worker", "--index", "0", "-f", "--tail", "50"]
    )
    assert done.code == 0
    assert done.out.encode() == b"epoch 1 loss 0.9\nepoch 2 loss 0.5\n"
    (query,) = [q for p, q, _ in api.requests if p.endswith("/log")]
    assert query == {"container": ["pytorch"], "follow": ["true"], "tailLines": ["50"]}


def test_logs_of_every_replica_are_prefixed(
    home: Path, api: RecordedAPI, cli: PlatformCLI, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    for role, text in (("master", b"rank 0 ready\n"), ("worker", b"rank 1 ready\nloss 1.0")):
        api.serve(f"/api/v1/namespaces/{NS}/pods/mnist-baseline-01-{role}-0/log", (200, text))
    done = cli_exit(["logs", "mnist-baseline-01", "--grep", "ready"])
    assert done.code == 0
    assert done.out.encode() == (b"master-0 | rank 0 ready\nworker-0 | rank 1 ready\n")


def test_logs_of_a_missing_replica_name_those_there_are(
    home: Path, api: RecordedAPI, cli: PlatformCLI, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    done = cli_exit(["logs", "mnist-baseline-01", "--role", "ps"])
    assert done.code == 2
    err = done.err
    assert "has no pod for ps" in err and "its replicas: master-0, worker-0" in err


def test_following_a_starting_job_waits_for_its_pods_then_merges_their_streams(
    home: Path,
    api: RecordedAPI,
    cli: PlatformCLI,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.deploy import watch

    # the next look for pods after a twentieth of a second, not the 2 s a user's `logs -f` waits
    wait = functools.partial(watch.wait_for_pods, interval=0.05)
    monkeypatch.setattr(watch, "wait_for_pods", wait)
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-none.json", "pods-running.json")  # no pods on the first look
    for role in ("master", "worker"):
        api.serve(
            f"/api/v1/namespaces/{NS}/pods/mnist-baseline-01-{role}-0/log",
            (200, f"{role} line 1\n{role} line 2\n".encode()),
        )
    done = cli_exit(["logs", "mnist-baseline-01", "--follow"])
    assert done.code == 0
    out = done.out.encode().decode().splitlines()
    assert sorted(out) == [
        "master-0 | master line 1",
        "master-0 | master line 2",
        "worker-0 | worker line 1",
        "worker-0 | worker line 2",
    ]
    assert out.index("master-0 | master line 1") < out.index("master-0 | master line 2")
    assert sum(1 for p, _, _ in api.requests if p == PODS_PATH) == 2
    follows = [q for p, q, _ in api.requests if p.endswith("/log")]
    assert all(q.get("follow") == ["true"] for q in follows) and len(follows) == 2

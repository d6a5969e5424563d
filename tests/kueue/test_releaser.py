"""The finalizer releaser (trainstack/kueue/releaser.py): which pods it frees, the script as it runs
in the cluster (its own file, standard library only) against a stand-in API server that lists,
watches, applies JSON patches as RFC 6902 says and holds every patch to the platform's
admission guard, and the guard itself."""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from tests.infra.admission import Evaluator, Request
from trainstack.infra.platform import kueue_releaser
from trainstack.kueue import api
from trainstack.kueue.releaser import releasable

NS = "vision"
RULES = kueue_releaser.rules()
RELEASER = kueue_releaser.username("kueue-system")
OTHER_FINALIZER = "example.com/keep"


def pod(
    name: str,
    *,
    phase: str = "Failed",
    deleting: bool = True,
    node: str | None = "node-a",
    finalizers: tuple[str, ...] = (api.POD_FINALIZER,),
    owner: str = "training.kubedl.io/v1alpha1",
    controller: bool = True,
    grouped: bool = True,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "labels": {"job-name": "mnist", **({api.POD_GROUP_NAME_LABEL: "mnist"} if grouped else {})},
        "annotations": {api.POD_GROUP_TOTAL_COUNT_ANNOTATION: "3"},
        "finalizers": list(finalizers),
        "ownerReferences": [
            {
                "apiVersion": owner,
                "kind": "PyTorchJob",
                "name": "mnist",
                "uid": "u1",
                "controller": controller,
            }
        ],
        "resourceVersion": "1",
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-12-03T06:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "pytorch", "image": "trainer:1"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod("failed"), True),
        (pod("succeeded", phase="Succeeded"), True),
        (pod("never-placed", phase="Pending", node=None), True),
        (pod("elastic", owner="inference.kubedl.io/v1alpha1"), True),
        (pod("still-running", phase="Running"), False),
        (pod("starting-on-its-node", phase="Pending"), False),
        (pod("not-deleted", deleting=False), False),
        (pod("no-kueue-finalizer", finalizers=(OTHER_FINALIZER,)), False),
        (pod("not-in-a-group", grouped=False), False),
        (pod("a-batch-jobs", owner="batch/v1"), False),
        (pod("owner-not-controller", controller=False), False),
    ],
    ids=lambda v: v["metadata"]["name"] if isinstance(v, dict) else str(v),
)
def test_only_a_deleted_kubedl_pod_of_a_group_that_will_not_run_again_is_released(
    obj: dict[str, Any], expected: bool
) -> None:
    assert releasable(obj, RULES) is expected


# --- a stand-in API server -------------------------------------------------------------------


class StandIn:
    """Pods by name; each watch request answers the next scripted stream (a list of events, or
    410 Gone, or (events, pods newer than their events)), stored as streamed; each PATCH is
    applied as RFC 6902 says, after the guard admits it, and a deleted pod with no finalizer
    left is gone, as the API server does."""

    def __init__(self, pods: list[dict[str, Any]], watches: list[Any]) -> None:
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.watches = list(watches)
        self.version = 100
        self.queries: list[dict[str, list[str]]] = []
        self.patches: list[tuple[str, str, list[dict[str, Any]]]] = []
        self.refused: list[list[str]] = []
        self.policy = kueue_releaser.policy_spec("kueue-system")
        self.evaluator = Evaluator()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query)
                server.queries.append(query)
                assert url.path == "/api/v1/pods", url.path
                if "watch" not in query:
                    items = [
                        p
                        for p in server.pods.values()
                        if RULES.group_label in p["metadata"].get("labels", {})
                    ]
                    body = {"metadata": {"resourceVersion": str(server.version)}, "items": items}
                    return self._send(200, body)
                script = server.watches.pop(0) if server.watches else []
                arrivals: list[dict[str, Any]] = []
                if isinstance(script, tuple):
                    script, arrivals = script
                for e in script if isinstance(script, list) else ():
                    if e["type"] in ("ADDED", "MODIFIED"):
                        server.pods[e["object"]["metadata"]["name"]] = e["object"]
                # what the store holds by the time the client acts: newer than its event
                server.pods.update({a["metadata"]["name"]: a for a in arrivals})
                if script == 410:
                    script = [{"type": "ERROR", "object": {"code": 410, "message": "too old"}}]
                lines = b"".join(json.dumps(e).encode() + b"\n" for e in script)
                self.send_response(200)
                self.send_header("Content-Length", str(len(lines)))
                self.end_headers()
                self.wfile.write(lines)

            def do_PATCH(self) -> None:
                assert self.headers["Content-Type"] == "application/json-patch+json"
                parts = urllib.parse.urlsplit(self.path).path.split("/")
                ns, name = parts[4], parts[6]
                ops = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.patches.append((ns, name, ops))
                old = server.pods.get(name)
                if old is None:
                    return self._send(404, {"reason": "NotFound"})
                try:
                    new = jsonpatch.apply_patch(old, ops)
                except jsonpatch.JsonPatchTestFailed as e:
                    return self._send(422, {"reason": "Invalid", "message": str(e)})
                failed = server.evaluator.failures(
                    server.policy, Request("UPDATE", new, old_object=old, username=RELEASER)
                )
                if failed:
                    server.refused.append(failed)
                    return self._send(403, {"reason": "Forbidden", "message": failed})
                if new["metadata"].get("deletionTimestamp") and not new["metadata"]["finalizers"]:
                    del server.pods[name]
                else:
                    server.pods[name] = new
                self._send(200, new)

        return Handler


@contextlib.contextmanager
def serve(stand_in: StandIn) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), stand_in.handler())
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def test_the_script_as_the_cluster_runs_it_releases_exactly_the_pods_it_may(
    tmp_path: Path,
) -> None:
    # `b` is still running when listed, and fails later; `e`'s event shows its finalizers as
    # they were before another controller added one, so its first patch's test fails (422) and
    # it is released on the next list, after the watch is too old (410).
    b_running = pod("b", phase="Running", finalizers=(OTHER_FINALIZER, api.POD_FINALIZER))
    e_stored = pod("e", finalizers=(OTHER_FINALIZER, api.POD_FINALIZER))
    stand_in = StandIn(
        [
            pod("a"),
            b_running,
            pod("c", owner="batch/v1"),
            pod("d", deleting=False, phase="Running"),
        ],
        [
            (
                [
                    event("MODIFIED", {**b_running, "status": {"phase": "Failed"}}),
                    event("ADDED", pod("e")),
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "107"}}},
                ],
                [e_stored],
            ),
            410,
            [],
        ],
    )
    # The file alone, without site-packages: what the platform's ConfigMap carries and
    # python3 runs in a plain Python image.
    script = tmp_path / kueue_releaser.SCRIPT
    shutil.copy(kueue_releaser.SOURCE, script)
    with serve(stand_in) as url:
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-S",
                str(script),
                f"--api={url}",
                "--rounds=3",
                *kueue_releaser.arguments(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert [(ns, name) for ns, name, _ in stand_in.patches] == [
        (NS, "a"),
        (NS, "b"),
        (NS, "e"),  # refused by its test op: the finalizers moved
        (NS, "e"),
    ]
    assert stand_in.patches[1][2] == [
        {"op": "test", "path": "/metadata/finalizers/1", "value": api.POD_FINALIZER},
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]
    assert stand_in.refused == []  # every patch it sent, the guard admits
    # a released pod is gone, or waits for its other finalizers only; the batch Job's and the
    # live one keep Kueue's
    assert {n: p["metadata"]["finalizers"] for n, p in stand_in.pods.items()} == {
        "b": [OTHER_FINALIZER],
        "c": [api.POD_FINALIZER],
        "d": [api.POD_FINALIZER],
        "e": [OTHER_FINALIZER],
    }
    released = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["released"] for r in released] == [f"{NS}/a", f"{NS}/b", f"{NS}/e"]
    assert released[0] == {
        "released": f"{NS}/a",
        "group": "mnist",
        "owner": "PyTorchJob/mnist",
        "phase": "Failed",
    }
    # it lists pods of groups only, and watches from the list's version, then the bookmark's
    lists = [q for q in stand_in.queries if "watch" not in q]
    watches = [q for q in stand_in.queries if "watch" in q]
    assert all(q["labelSelector"] == [api.POD_GROUP_NAME_LABEL] for q in stand_in.queries)
    assert len(lists) == 2 and len(watches) == 3
    assert watches[0]["resourceVersion"] == ["100"]
    assert watches[1]["resourceVersion"] == ["107"]


def test_an_unreachable_api_server_is_retried_from_a_fresh_list() -> None:
    from trainstack.kueue import releaser

    lines: list[str] = []
    pauses: list[float] = []
    api_client = releaser.Api("http://127.0.0.1:9")  # discard port: refused
    releaser.run(api_client, RULES, lines.append, rounds=2, pause=pauses.append)
    assert pauses == [releaser.RETRY_SECONDS] * 2
    assert all("error" in json.loads(line) for line in lines) and len(lines) == 2


# --- the guard ---------------------------------------------------------------------------------


def _apply(old: dict[str, Any], change: Any) -> dict[str, Any]:
    new = copy.deepcopy(old)
    change(new)
    return new


def _drop(name: str) -> Any:
    return lambda p: p["metadata"].__setitem__(
        "finalizers", [f for f in p["metadata"]["finalizers"] if f != name]
    )


@pytest.mark.parametrize(
    ("old", "change", "refused"),
    [
        (
            pod("ok", finalizers=(OTHER_FINALIZER, api.POD_FINALIZER)),
            _drop(api.POD_FINALIZER),
            None,
        ),
        (pod("running", phase="Running"), _drop(api.POD_FINALIZER), "will not run again"),
        (pod("alive", deleting=False), _drop(api.POD_FINALIZER), "being deleted"),
        (pod("job", owner="batch/v1"), _drop(api.POD_FINALIZER), "KubeDL job"),
        (
            pod("other", finalizers=(OTHER_FINALIZER, api.POD_FINALIZER)),
            _drop(OTHER_FINALIZER),
            "no other finalizer",
        ),
        (
            pod("relabel"),
            lambda p: (_drop(api.POD_FINALIZER)(p), p["metadata"]["labels"].update(team="nlp")),
            "nothing but the finalizer",
        ),
        (
            pod("reimage"),
            lambda p: (
                _drop(api.POD_FINALIZER)(p),
                p["spec"]["containers"][0].update(image="evil:1"),
            ),
            "nothing but the finalizer",
        ),
    ],
    ids=lambda v: v["metadata"]["name"] if isinstance(v, dict) else "",
)
def test_the_guard_lets_the_releaser_remove_kueues_finalizer_and_nothing_else(
    old: dict[str, Any], change: Any, refused: str | None
) -> None:
    policy = kueue_releaser.policy_spec("kueue-system")
    new = _apply(old, change)
    failed = Evaluator().failures(policy, Request("UPDATE", new, old_object=old, username=RELEASER))
    assert failed is not None  # the match condition selects the releaser's requests
    if refused is None:
        assert failed == []
    else:
        assert any(refused in m for m in failed), failed
    # anyone else's update is not this policy's business
    other = Request("UPDATE", new, old_object=old, username="system:serviceaccount:x:y")
    assert Evaluator().failures(policy, other) is None

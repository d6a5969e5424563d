"""The finalizer releaser: lets KubeDL recreate a replica of a job Kueue admitted as a pod group.

Kueue keeps its finalizer on a failed pod of a group until a newer pod of its role has joined
(Kueue v0.19.2 pkg/controller/jobs/pod/pod_controller.go:1323-1327, 1357), or the whole group
is finished or its Workload deleted (590-608). That suits a maker that names each new pod
afresh. KubeDL names a replica `<job>-<role>-<index>` and recreates it under the same name only
once the deleted one is gone (KubeDL v0.5.0 pkg/job_controller/pod.go:264-312, 524;
failover.go:55-112): the name stays taken, the replacement never comes, and the job waits for
good. The same holds for the pods Kueue deletes when it preempts a group (Stop,
pod_controller.go:513-566, finalizes them only when the Workload itself is deleted) and for a
job torn down before its group finished.

The releaser removes Kueue's finalizer from exactly the pods whose end Kueue has nothing left to
learn from: pods of a group, controlled by a KubeDL job, already being deleted, and that will
never run again (terminated, or never placed on a node). Kueue then counts the pod as absent and
waits for its replacement (WaitingForReplacementPods, 1459-1516), which KubeDL creates under the
freed name; Kueue's webhook gates it and its next reconcile admits it into the role's place
(trainstack.kueue.podgroup models both sources). A pod that is still running keeps the
finalizer until its containers have stopped.

This file runs in the cluster as it is (the platform ships it in a ConfigMap and starts it with
`python3`), so it imports nothing beyond the standard library; the platform passes Kueue's and
KubeDL's names as arguments. It lists and watches the pods of groups, and for each one it may
release, sends a JSON patch that removes the finalizer at the index it saw, guarded by a `test`
of that index: a pod whose finalizers changed meanwhile is left for its next event. An admission
policy lets the releaser's service account make no other change
(trainstack.infra.platform.kueue_releaser).
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

# A pod that will not run again (its phase: core/v1 types.go PodPhase).
TERMINAL_PHASES = ("Failed", "Succeeded")
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
# A watch the server ends after this long is started again from the last version seen.
WATCH_SECONDS = 300
RETRY_SECONDS = 5.0


@dataclass(frozen=True)
class Rules:
    """The names the releaser goes by: Kueue's finalizer and group label, and the API groups
    of the makers whose pods it releases."""

    finalizer: str
    group_label: str
    owner_groups: tuple[str, ...]

    @property
    def selector(self) -> str:
        return self.group_label  # every pod that has the label, whatever its group


def controller_of(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in metadata.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def releasable(pod: Mapping[str, Any], rules: Rules) -> bool:
    """Whether the releaser removes Kueue's finalizer from `pod` (see the module's text)."""
    meta = pod.get("metadata") or {}
    if not meta.get("deletionTimestamp"):
        return False
    if rules.finalizer not in (meta.get("finalizers") or ()):
        return False
    if rules.group_label not in (meta.get("labels") or {}):
        return False
    owner = controller_of(meta)
    if owner is None or str(owner.get("apiVersion", "")).split("/")[0] not in rules.owner_groups:
        return False
    phase = (pod.get("status") or {}).get("phase")
    placed = bool((pod.get("spec") or {}).get("nodeName"))
    return phase in TERMINAL_PHASES or not placed


def patch(pod: Mapping[str, Any], rules: Rules) -> list[dict[str, Any]]:
    """The JSON patch that removes the finalizer where this view of the pod has it."""
    index = list(pod["metadata"]["finalizers"]).index(rules.finalizer)
    path = f"/metadata/finalizers/{index}"
    return [{"op": "test", "path": path, "value": rules.finalizer}, {"op": "remove", "path": path}]


class ApiError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"HTTP {status}: {text[:300]}")
        self.status = status


class Api:
    """The API server over HTTP(S): in the cluster, through the service account's token (read
    for each request, as the kubelet rotates it) and CA."""

    def __init__(self, base: str, token_file: str | None = None, ca_file: str | None = None):
        self.base = base.rstrip("/")
        self.token_file = token_file
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else None

    @staticmethod
    def in_cluster() -> Api:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if ":" in host:
            host = f"[{host}]"
        return Api(
            f"https://{host}:{port}", f"{SERVICE_ACCOUNT}/token", f"{SERVICE_ACCOUNT}/ca.crt"
        )

    def _open(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if content_type:
            req.add_header("Content-Type", content_type)
        if self.token_file:
            with open(self.token_file, encoding="utf-8") as f:
                req.add_header("Authorization", "Bearer " + f.read().strip())
        try:
            return urllib.request.urlopen(req, timeout=WATCH_SECONDS + 30, context=self.context)
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, e.read().decode("utf-8", "replace")) from None

    def get(self, path: str) -> Any:
        with self._open("GET", path) as r:
            return json.load(r)

    def stream(self, path: str) -> Iterator[Any]:
        with self._open("GET", path) as r:
            for line in r:
                if line.strip():
                    yield json.loads(line)

    def patch(self, path: str, ops: list[dict[str, Any]]) -> None:
        with self._open("PATCH", path, ops, "application/json-patch+json") as r:
            r.read()


def _pods_path(rules: Rules, **query: str) -> str:
    return "/api/v1/pods?" + urllib.parse.urlencode({"labelSelector": rules.selector, **query})


def release(api: Api, pod: Mapping[str, Any], rules: Rules, log: Callable[[str], None]) -> bool:
    """Release one pod; False when it was gone or changed (its next event says what now)."""
    meta = pod["metadata"]
    ns, name = meta["namespace"], meta["name"]
    path = f"/api/v1/namespaces/{urllib.parse.quote(ns)}/pods/{urllib.parse.quote(name)}"
    try:
        api.patch(path, patch(pod, rules))
    except ApiError as e:
        # 404: already gone. 422: the test failed, the finalizers moved under us.
        if e.status in (404, 422):
            return False
        raise
    owner = controller_of(meta) or {}
    phase = (pod.get("status") or {}).get("phase") or "never placed"
    log(
        json.dumps(
            {
                "released": f"{ns}/{name}",
                "group": meta["labels"][rules.group_label],
                "owner": f"{owner.get('kind')}/{owner.get('name')}",
                "phase": phase,
            },
            sort_keys=True,
        )
    )
    return True


def sweep(api: Api, rules: Rules, log: Callable[[str], None]) -> str:
    """Release every releasable pod there is now; the list's resourceVersion to watch from."""
    listed = api.get(_pods_path(rules))
    for pod in listed.get("items") or ():
        if releasable(pod, rules):
            release(api, pod, rules, log)
    return str((listed.get("metadata") or {}).get("resourceVersion") or "")


def follow(api: Api, rules: Rules, version: str, log: Callable[[str], None]) -> str | None:
    """Watch from `version`, releasing as pods become releasable; the version to go on from,
    or None when the server says it is too old (410 Gone) and the pods must be listed again."""
    query = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": str(WATCH_SECONDS)}
    if version:
        query["resourceVersion"] = version
    for event in api.stream(_pods_path(rules, **query)):
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                return None
            raise ApiError(int(obj.get("code") or 500), str(obj.get("message")))
        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if kind in ("ADDED", "MODIFIED") and releasable(obj, rules):
            release(api, obj, rules, log)
    return version


def run(
    api: Api,
    rules: Rules,
    log: Callable[[str], None],
    *,
    rounds: int | None = None,
    pause: Callable[[float], None] = time.sleep,
) -> None:
    """List, then watch, forever (or `rounds` watches, for a test); list again after a 410 or an
    error, after a pause."""
    version: str | None = None
    done = 0
    while rounds is None or done < rounds:
        done += 1
        try:
            if version is None:
                version = sweep(api, rules, log)
            version = follow(api, rules, version, log)
        except (ApiError, OSError, ValueError) as e:
            log(json.dumps({"error": str(e), "retry_seconds": RETRY_SECONDS}))
            version = None
            pause(RETRY_SECONDS)


def main(argv: list[str] | None = None, out: IO[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--finalizer", required=True)
    parser.add_argument("--group-label", required=True)
    parser.add_argument("--owner-group", required=True, action="append")
    parser.add_argument("--api", help="the API server's URL (default: in the cluster)")
    parser.add_argument("--rounds", type=int, help="stop after this many watches")
    args = parser.parse_args(argv)
    stream = out or sys.stdout

    def log(line: str) -> None:
        print(line, file=stream, flush=True)

    api = Api(args.api) if args.api else Api.in_cluster()
    rules = Rules(args.finalizer, args.group_label, tuple(args.owner_group))
    run(api, rules, log, rounds=args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The cluster, through the official ``kubernetes`` client: a deployed job, its pods, their logs.

Responses are read as the API's JSON (``_preload_content=False``), not as the client's model
classes: ``jobstate`` works on plain mappings for every kind, KubeDL's custom resources included.
The kubeconfig comes from the platform stack's outputs (``deploy.platform.cluster_access``) and
lives in memory only; it is never written or printed.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from trainstack.deploy.clustererror import ClusterError as ClusterError
from trainstack.envnames import KUBE_TIMEOUT_ENV as TIMEOUT_ENV
from trainstack.errors import ConfigError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# Each request to the API server: at most this many seconds in all (connect, answer, body), unless
# $TRAINSTACK_KUBE_TIMEOUT says otherwise; connecting gets at most CONNECT_TIMEOUT of it. A
# server that accepts the connection and never answers would otherwise hold status/logs/wait.
DEFAULT_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0
# Bigger answers are refused: a job's pod list is kilobytes per pod.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


def request_timeout() -> float:
    """The per-request deadline in seconds, from $TRAINSTACK_KUBE_TIMEOUT (default 30)."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None or raw == "":
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"${TIMEOUT_ENV}={raw!r}: expected a positive number of seconds")
    return value


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach the cluster: a kubeconfig's text (None: the ambient ~/.kube/config or
    $KUBECONFIG) and a context; ``source`` names where it came from, for messages."""

    kubeconfig: str | None = field(repr=False)
    context: str | None
    source: str
    # What renews these credentials when the cluster refuses them (a team scope's token is
    # renewed by publishing the scope again, not by `pulumi up`).
    renew: str = "`pulumi up` the platform stack"


class Cluster:
    def __init__(self, access: ClusterAccess, timeout: float | None = None) -> None:
        self.access = access
        self.timeout = timeout if timeout is not None else request_timeout()
        self._api = _api_client(access)

    @property
    def _timeouts(self) -> tuple[float, float]:
        """(connect, read) for urllib3; the read timeout bounds each wait for bytes."""
        return (min(CONNECT_TIMEOUT, self.timeout), self.timeout)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def job(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The job object as JSON; None when it does not exist."""
        from kubernetes import client

        def batch_job() -> Any:  # custom: a batch/v1 Job
            return client.BatchV1Api(self._api).read_namespaced_job(
                name, namespace, _preload_content=False, _request_timeout=self._timeouts
            )

        def kubedl_job() -> Any:
            # each KubeDL kind's plural is its lower-cased kind + "s" (KubeDL v0.5.0
            # config/crd/bases)
            group, _, version = api_version.partition("/")
            return client.CustomObjectsApi(self._api).get_namespaced_custom_object(
                group,
                version,
                namespace,
                f"{kind.lower()}s",
                name,
                _preload_content=False,
                _request_timeout=self._timeouts,
            )

        call = batch_job if (api_version, kind) == ("batch/v1", "Job") else kubedl_job
        return self._json(f"{kind} {namespace}/{name}", call, missing_ok=True)

    def pods(self, namespace: str, job: str, selector: str | None = None) -> list[dict[str, Any]]:
        """The job's pods: both KubeDL and batch/v1 Jobs label them ``job-name=<job>``; a
        JobSet's are found by ``selector`` (trainstack.deploy.jobstate.pod_selector)."""
        from kubernetes import client

        from trainstack.deploy.apijson import Reader

        what = f"pods of {namespace}/{job}"
        doc = self._json(
            what,
            lambda: client.CoreV1Api(self._api).list_namespaced_pod(
                namespace,
                label_selector=selector or f"job-name={job}",
                _preload_content=False,
                _request_timeout=self._timeouts,
            ),
        )
        return list(Reader(what).items((doc or {}).get("items"), "items"))

    def events(self, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
        """The events about object ``kind``/``name`` (the job controller's, for a job); empty
        when the credentials may not read events."""
        from kubernetes import client

        from trainstack.deploy.apijson import Reader

        what = f"events of {kind} {namespace}/{name}"
        doc = self._json(
            what,
            lambda: client.CoreV1Api(self._api).list_namespaced_event(
                namespace,
                field_selector=f"involvedObject.name={name},involvedObject.kind={kind}",
                _preload_content=False,
                _request_timeout=self._timeouts,
            ),
            missing_ok=True,
            forbidden_ok=True,
        )
        return list(Reader(what).items((doc or {}).get("items"), "items"))

    def custom_object(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        """A namespaced custom object (a gang scheduler's PodGroup); None when it does not
        exist or the credentials may not read it."""
        from kubernetes import client

        return self._json(
            f"{plural} {namespace}/{name}",
            lambda: client.CustomObjectsApi(self._api).get_namespaced_custom_object(
                group,
                version,
                namespace,
                plural,
                name,
                _preload_content=False,
                _request_timeout=self._timeouts,
            ),
            missing_ok=True,
            forbidden_ok=True,
        )

    def custom_objects(
        self, group: str, version: str, plural: str, namespace: str
    ) -> list[dict[str, Any]]:
        """A namespace's custom objects of a kind (Kueue's Workloads); empty when the kind is
        not installed or the credentials may not list it."""
        from kubernetes import client

        from trainstack.deploy.apijson import Reader

        what = f"{plural} of {namespace}"
        doc = self._json(
            what,
            lambda: client.CustomObjectsApi(self._api).list_namespaced_custom_object(
                group,
                version,
                namespace,
                plural,
                _preload_content=False,
                _request_timeout=self._timeouts,
            ),
            missing_ok=True,
            forbidden_ok=True,
        )
        return list(Reader(what).items((doc or {}).get("items"), "items"))

    def pending_workloads(self, namespace: str, local_queue: str) -> dict[str, Any] | None:
        """Kueue's pending-workloads summary of a LocalQueue (its visibility API); None when it
        is not served or the credentials may not read it."""
        from trainstack.kueue import api

        path = (
            f"/apis/{api.VISIBILITY_GROUP}/{api.VISIBILITY_VERSION}/namespaces/{namespace}/"
            f"localqueues/{local_queue}/{api.PENDING_WORKLOADS}"
        )

        def call() -> Any:
            from kubernetes.client.exceptions import ApiException

            request = self._api.param_serialize(
                method="GET",
                resource_path=path,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(*request, _request_timeout=self._timeouts)
            if not 200 <= response.status <= 299:
                response.read()  # type: ignore[no-untyped-call]
                raise ApiException.from_response(http_resp=response, body=None, data=None)
            return response.response

        return self._json(
            f"pending workloads of {namespace}/{local_queue}",
            call,
            missing_ok=True,
            forbidden_ok=True,
        )

    def log(
        self,
        namespace: str,
        pod: str,
        container: str | None,
        *,
        follow: bool,
        tail: int | None = None,
    ) -> Iterator[bytes]:
        """The pod's log as it arrives (``follow``: until the container stops)."""
        from kubernetes import client
        from urllib3.exceptions import HTTPError

        what = f"the log of {namespace}/{pod}"
        connect, read = self._timeouts
        response = self._guard(
            what,
            lambda: client.CoreV1Api(self._api).read_namespaced_pod_log(
                pod,
                namespace,
                container=container,
                follow=follow,
                tail_lines=tail,
                _preload_content=False,
                # A followed stream may be quiet for hours: no timeout then (the client accepts
                # no (connect, None)). `logs -f` has just read the job and its pods within the
                # deadline, so the server does answer.
                _request_timeout=None if follow else (connect, read),
            ),
        )
        try:
            yield from response.stream(8192, decode_content=True)
        except HTTPError as err:
            raise self._transport_error(what, err) from None
        finally:
            response.release_conn()

    def call(
        self,
        what: str,
        request: Callable[[ApiClient, tuple[float, float]], Any],
        *,
        missing_ok: bool = False,
    ) -> dict[str, Any] | None:
        """Any other request (``scope publish``'s Secret and TokenRequest), made with the client
        and (connect, read) timeouts given, answered as JSON within this cluster's deadline."""
        return self._json(what, lambda: request(self._api, self._timeouts), missing_ok=missing_ok)

    # --- plumbing ----------------------------------------------------------------------------

    def _json(
        self,
        what: str,
        call: Callable[[], Any],
        *,
        missing_ok: bool = False,
        forbidden_ok: bool = False,
    ) -> dict[str, Any] | None:
        """``forbidden_ok``: a 403 reads as None (what the credentials may not read is optional
        detail, such as events and PodGroups)."""
        from kubernetes.client.exceptions import ApiException

        from trainstack.deploy.apijson import Reader

        deadline = time.monotonic() + self.timeout
        try:
            response = self._guard(what, call, forbidden_ok=forbidden_ok)
        except ApiException as err:
            if (err.status == 404 and missing_ok) or (err.status == 403 and forbidden_ok):
                return None
            raise ClusterError(
                f"{what}: the cluster at {self.host} answered HTTP {err.status} {err.reason}"
            ) from None
        body = self._body(what, response, deadline)
        try:
            doc = json.loads(body or b"{}")
        except RecursionError:
            raise Reader(what).error("", "its JSON is nested too deeply to read") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ClusterError(
                f"{what}: the cluster at {self.host} did not answer JSON (the cluster's answer "
                f"begins {body[:40]!r})"
            ) from None
        return dict(Reader(what).obj(doc, ""))

    def _body(self, what: str, response: Any, deadline: float) -> bytes:
        """The answer's body, read within the request's deadline and size limit."""
        from urllib3.exceptions import HTTPError

        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.stream(65536, decode_content=True):
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise ClusterError(
                        f"{what}: the cluster's answer is larger than "
                        f"{MAX_ANSWER_BYTES // (1024 * 1024)} MiB"
                    )
                if time.monotonic() > deadline:
                    raise self._late(what)
                chunks.append(chunk)
        except HTTPError as err:
            raise self._transport_error(what, err) from None
        finally:
            response.release_conn()
        return b"".join(chunks)

    def _late(self, what: str) -> ClusterError:
        return ClusterError(
            f"{what}: the cluster at {self.host} did not answer within {self.timeout:g}s",
            hint=f"a slow or overloaded API server; allow more time with {TIMEOUT_ENV}=SECONDS "
            f"(credentials from {self.access.source})",
        )

    def _transport_error(self, what: str, err: Exception) -> ClusterError:
        from urllib3.exceptions import MaxRetryError, NewConnectionError, TimeoutError

        cause = err.reason if isinstance(err, MaxRetryError) and err.reason else err
        # urllib3's NewConnectionError (refused, no route) subclasses ConnectTimeoutError
        if isinstance(cause, TimeoutError) and not isinstance(cause, NewConnectionError):
            return self._late(what)
        return ClusterError(
            f"{what}: cannot reach the cluster at {self.host} ({type(cause).__name__})",
            hint=f"credentials from {self.access.source}",
        )

    def _guard(self, what: str, call: Callable[[], Any], *, forbidden_ok: bool = False) -> Any:
        """Run one API call; refused credentials and an unreachable cluster are one clear
        ``ClusterError`` each (a 404, and a 403 when ``forbidden_ok``, stay an ApiException for
        the caller to judge)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return call()
        except ApiException as err:
            if err.status == 403 and forbidden_ok:
                raise
            if err.status in (401, 403):
                raise ClusterError(
                    f"{what}: the cluster at {self.host} refused the credentials from "
                    f"{self.access.source} (HTTP {err.status})",
                    hint=f"credentials may have expired or been rotated: {self.access.renew}, "
                    "then try again",
                ) from None
            if err.status == 404 and what.startswith("the log of"):
                raise ClusterError(
                    f"{what}: the pod is gone",
                    hint="finished pods are deleted per the job's cleanPodPolicy",
                ) from None
            raise
        except HTTPError as err:
            raise self._transport_error(what, err) from None


def _api_client(access: ClusterAccess) -> ApiClient:
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    try:
        if access.kubeconfig:
            try:
                doc = yaml.safe_load(access.kubeconfig)
            except yaml.YAMLError:
                raise ClusterError(f"{access.source}: the kubeconfig is not valid YAML") from None
            if not isinstance(doc, dict):
                raise ClusterError(f"{access.source}: the kubeconfig is not a mapping")
            config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                doc,
                context=access.context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                context=access.context, client_configuration=configuration, persist_config=False
            )
    except ConfigException as err:
        raise ClusterError(f"{access.source}: cannot use the kubeconfig ({err})") from None
    # No retries: each request is bounded by its own deadline, and urllib3's default (three
    # retries of a read that timed out) would multiply it.
    configuration.retries = False
    return client.ApiClient(configuration)

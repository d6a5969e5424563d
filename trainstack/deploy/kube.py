"""The cluster, through the official ``kubernetes`` client: a deployed job, its pods, their logs.

Responses are read as the API's JSON (``_preload_content=False``), not as the client's model
classes: ``jobstate`` works on plain mappings for every kind, KubeDL's custom resources included.
The kubeconfig comes from the platform stack's outputs (``deploy.platform.cluster_access``) and
lives in memory only; it is never written or printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from trainstack.errors import UserError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# (connect, read) seconds for one request.
REQUEST_TIMEOUT = (10.0, 60.0)


class ClusterError(UserError):
    """The cluster could not be reached or refused the request."""


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach the cluster: a kubeconfig's text (None: the ambient ~/.kube/config or
    $KUBECONFIG) and a context; ``source`` names where it came from, for messages."""

    kubeconfig: str | None = field(repr=False)
    context: str | None
    source: str


class Cluster:
    def __init__(self, access: ClusterAccess) -> None:
        self.access = access
        self._api = _api_client(access)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def job(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The job object as JSON; None when it does not exist."""
        from kubernetes import client

        def batch_job() -> Any:  # custom: a batch/v1 Job
            return client.BatchV1Api(self._api).read_namespaced_job(
                name, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
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
                _request_timeout=REQUEST_TIMEOUT,
            )

        call = batch_job if (api_version, kind) == ("batch/v1", "Job") else kubedl_job
        return self._json(f"{kind} {namespace}/{name}", call, missing_ok=True)

    def pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        """The job's pods: both KubeDL and batch/v1 Jobs label them ``job-name=<job>``."""
        from kubernetes import client

        doc = self._json(
            f"pods of {namespace}/{job}",
            lambda: client.CoreV1Api(self._api).list_namespaced_pod(
                namespace,
                label_selector=f"job-name={job}",
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            ),
        )
        return list((doc or {}).get("items") or [])

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

        response = self._guard(
            f"the log of {namespace}/{pod}",
            lambda: client.CoreV1Api(self._api).read_namespaced_pod_log(
                pod,
                namespace,
                container=container,
                follow=follow,
                tail_lines=tail,
                _preload_content=False,
                # a followed stream may be quiet for hours: no read timeout then
                _request_timeout=None if follow else REQUEST_TIMEOUT,
            ),
        )
        try:
            yield from response.stream(8192, decode_content=True)
        finally:
            response.release_conn()

    # --- plumbing ----------------------------------------------------------------------------

    def _json(
        self, what: str, call: Callable[[], Any], *, missing_ok: bool = False
    ) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            response = self._guard(what, call)
        except ApiException as err:
            if err.status == 404 and missing_ok:
                return None
            raise ClusterError(
                f"{what}: the cluster at {self.host} answered HTTP {err.status} {err.reason}"
            ) from None
        try:
            doc = json.loads(response.data or b"{}")
        except json.JSONDecodeError:
            raise ClusterError(f"{what}: the cluster at {self.host} did not answer JSON") from None
        return doc if isinstance(doc, dict) else None

    def _guard(self, what: str, call: Callable[[], Any]) -> Any:
        """Run one API call; refused credentials and an unreachable cluster are one clear
        ``ClusterError`` each (a 404 stays an ApiException for the caller to judge)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return call()
        except ApiException as err:
            if err.status in (401, 403):
                raise ClusterError(
                    f"{what}: the cluster at {self.host} refused the credentials from "
                    f"{self.access.source} (HTTP {err.status})",
                    hint="credentials may have been rotated: `pulumi up` the platform stack, "
                    "then try again",
                ) from None
            if err.status == 404 and what.startswith("the log of"):
                raise ClusterError(
                    f"{what}: the pod is gone",
                    hint="finished pods are deleted per the job's cleanPodPolicy",
                ) from None
            raise
        except HTTPError as err:
            raise ClusterError(
                f"{what}: cannot reach the cluster at {self.host} ({type(err).__name__})",
                hint=f"credentials from {self.access.source}",
            ) from None


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
    return client.ApiClient(configuration)

"""The run program: one run's stack — a Kubernetes provider and exactly the rendered objects.

It does not rebuild manifests: ``trainstack.render`` produced them (the KubeDL job, its ConfigMap,
...) and they are registered as they are, so ``trainstack render`` output, ``trainstack plan RUN``
and what ``trainstack deploy`` creates can never disagree. The cluster comes from the platform
stack's outputs through a StackReference; its kubeconfig stays a secret Output throughout.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pulumi
import pulumi_kubernetes as k8s

from trainstack import platformnames as names
from trainstack.errors import UserError
from trainstack.trainer import TRAINJOB_API_VERSION, TRAINJOB_KIND

# KubeDL's API groups: every training kind, plus ElasticBatchJob (inference.kubedl.io).
KUBEDL_GROUPS = ("training.kubedl.io", "inference.kubedl.io")


class RunLike(Protocol):
    """What the run program needs of ``trainstack.spec.model.Run``."""

    @property
    def name(self) -> str: ...


def _configmap(
    name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    return k8s.core.v1.ConfigMap(
        name,
        metadata=m["metadata"],
        data=m.get("data"),
        binary_data=m.get("binaryData"),
        immutable=m.get("immutable"),
        opts=opts,
    )


def _secret(name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    # Whatever a Secret carries is stored encrypted in state, never as plain text.
    merged = pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
    )
    return k8s.core.v1.Secret(
        name,
        metadata=m["metadata"],
        type=m.get("type"),
        data=m.get("data"),
        string_data=m.get("stringData"),
        immutable=m.get("immutable"),
        opts=merged,
    )


def _service(
    name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    return k8s.core.v1.Service(name, metadata=m["metadata"], spec=m.get("spec"), opts=opts)


def _claim(name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    return k8s.core.v1.PersistentVolumeClaim(
        name, metadata=m["metadata"], spec=m.get("spec"), opts=opts
    )


def _volume(name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    return k8s.core.v1.PersistentVolume(name, metadata=m["metadata"], spec=m.get("spec"), opts=opts)


def _account(
    name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    return k8s.core.v1.ServiceAccount(
        name, metadata=m["metadata"], image_pull_secrets=m.get("imagePullSecrets"), opts=opts
    )


def _role(name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    return k8s.rbac.v1.Role(name, metadata=m["metadata"], rules=m.get("rules"), opts=opts)


def _role_binding(
    name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    return k8s.rbac.v1.RoleBinding(
        name, metadata=m["metadata"], role_ref=m["roleRef"], subjects=m.get("subjects"), opts=opts
    )


def _batch_job(
    name: str, m: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    return k8s.batch.v1.Job(name, metadata=m["metadata"], spec=m.get("spec"), opts=opts)


_Builder = Callable[[str, Mapping[str, Any], pulumi.ResourceOptions], pulumi.CustomResource]
# Built-in kinds get their typed resource (the provider knows their schema and readiness).
_TYPED: dict[tuple[str, str], _Builder] = {
    ("v1", "ConfigMap"): _configmap,
    ("v1", "Secret"): _secret,
    ("v1", "Service"): _service,
    ("v1", "PersistentVolume"): _volume,
    ("v1", "PersistentVolumeClaim"): _claim,
    ("v1", "ServiceAccount"): _account,
    ("batch/v1", "Job"): _batch_job,
    # The MPI launcher's exec rights (trainstack.render.context).
    ("rbac.authorization.k8s.io/v1", "Role"): _role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _role_binding,
}


def is_kubedl_job(manifest: Mapping[str, Any]) -> bool:
    return str(manifest.get("apiVersion", "")).split("/")[0] in KUBEDL_GROUPS


def is_job(manifest: Mapping[str, Any]) -> bool:
    """The run's workload: a KubeDL job, a TrainJob (a Trainer environment's), or the Indexed
    Job a ``custom`` component renders to."""
    identity = (manifest.get("apiVersion"), manifest.get("kind"))
    return is_kubedl_job(manifest) or identity in (
        ("batch/v1", "Job"),
        (TRAINJOB_API_VERSION, TRAINJOB_KIND),
    )


def resource_name(manifest: Mapping[str, Any]) -> str:
    """The Pulumi name: kind and object name, unique within the run's stack."""
    return f"{str(manifest['kind']).lower()}-{manifest['metadata']['name']}"


def register(manifest: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """One rendered object as one Pulumi resource, its fields passed through unchanged."""
    kind, api_version = str(manifest.get("kind", "")), str(manifest.get("apiVersion", ""))
    name = resource_name(manifest)
    build = _TYPED.get((api_version, kind))
    if build is not None:
        return build(name, manifest, opts)
    if "." not in api_version.split("/")[0] or "/" not in api_version:  # a built-in API group
        known = ", ".join(sorted(f"{k} ({v})" for v, k in _TYPED))
        raise UserError(
            f"the run program cannot deploy a {kind} ({api_version}) yet",
            hint=f"known built-in kinds: {known}",
        )
    extra = sorted(set(manifest) - {"apiVersion", "kind", "metadata", "spec", "status"})
    if extra:  # CustomResource carries metadata and spec only; dropping fields would be silent
        raise UserError(
            f"{kind} {manifest['metadata']['name']}: top-level fields "
            f"{', '.join(extra)} cannot be deployed as a custom resource"
        )
    return k8s.apiextensions.CustomResource(
        name,
        api_version=api_version,
        kind=kind,
        metadata=manifest["metadata"],
        spec=manifest.get("spec"),
        opts=opts,
    )


def _job(manifests: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    jobs = [m for m in manifests if is_job(m)]
    if len(jobs) != 1:
        raise UserError(f"a run renders to exactly one job, got {len(jobs)}")
    return jobs[0]


# pulumi-kubernetes: a resource with this annotation is created without waiting for readiness.
# A batch/v1 Job (``custom``) would otherwise hold ``deploy`` until it completes (10 min default).
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"


def manifest_hash(manifests: Sequence[Mapping[str, Any]], rerun: str = "") -> str:
    """A digest of everything the run deploys (plus a ``--rerun`` token): the job's identity."""
    text = json.dumps(list(manifests), sort_keys=True, separators=(",", ":")) + rerun
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cluster_provider(platform_stack: str, namespace: str) -> k8s.Provider:
    """The Kubernetes provider, from the platform stack's *current* outputs: credentials scoped to
    the run's namespace (``teamKubeconfigs``) when the platform exports them, else its admin
    kubeconfig. ``destroy`` runs this too (``--run-program``), so rotated credentials are used."""
    platform = pulumi.StackReference("platform", stack_name=platform_stack)
    admin = platform.get_output(names.OUT_KUBECONFIG)
    scoped = platform.get_output(names.OUT_TEAM_KUBECONFIGS)

    def pick(values: list[Any]) -> str | None:
        team, kubeconfig = values
        if isinstance(team, dict) and team.get(namespace):
            return str(team[namespace])
        # "" means "the ambient kubeconfig/context" (kubeconfig mode without explicit settings)
        return str(kubeconfig) if kubeconfig else None

    kubeconfig = pulumi.Output.all(scoped, admin).apply(pick)
    # A context name is no credential: shown in plans although it is chosen by a secret output.
    context = pulumi.Output.unsecret(
        pulumi.Output.all(scoped, platform.get_output(names.OUT_KUBE_CONTEXT)).apply(
            lambda v: None if isinstance(v[0], dict) and v[0].get(namespace) else (v[1] or None)
        )
    )
    secret: pulumi.Output[str | None] = pulumi.Output.secret(kubeconfig)
    return k8s.Provider("k8s", kubeconfig=secret, context=context)


def _register_support(
    manifests: Sequence[Mapping[str, Any]], base: pulumi.ResourceOptions
) -> list[pulumi.CustomResource]:
    """Everything beside the job. Objects with fixed names (ConfigMaps, Services, RBAC) are
    deleted before they are replaced: a new one of the same name cannot exist beside the old.

    PersistentVolumes and their claims are named after their immutable content
    (trainstack.render.storage), so they are never replaced: a changed binding is a new pair,
    created before the job, and the old pair, gone from the program, is deleted after every
    create and update, in reverse dependency order (Pulumi's deletes of removed resources): the
    claim (which depends on its PV) first, then the PV, which ``kubernetes.io/pv-protection``
    holds only while a claim is bound to it. ``delete_before_replace`` on the pair would delete
    them while the job that mounts them still runs."""
    replaced = pulumi.ResourceOptions.merge(
        base, pulumi.ResourceOptions(delete_before_replace=True)
    )
    volumes = {
        str(m["metadata"]["name"]): register(m, base)
        for m in manifests
        if (m.get("apiVersion"), m.get("kind")) == ("v1", "PersistentVolume")
    }
    support = list(volumes.values())
    for m in manifests:
        if (m.get("apiVersion"), m.get("kind")) == ("v1", "PersistentVolume"):
            continue
        if (m.get("apiVersion"), m.get("kind")) == ("v1", "PersistentVolumeClaim"):
            own = volumes.get(str((m.get("spec") or {}).get("volumeName", "")))
            opts = pulumi.ResourceOptions.merge(
                base, pulumi.ResourceOptions(depends_on=[own] if own else [])
            )
            support.append(register(m, opts))
        else:
            support.append(register(m, replaced))
    return support


def build_run(
    run: RunLike, manifests: Sequence[Mapping[str, Any]], platform_stack: str, rerun: str = ""
) -> dict[str, Any]:
    """Register the rendered objects of ``run`` on the platform's cluster; return the outputs.

    Decision (docs/deploy.md): a deploy whose rendered objects changed *recreates* the job —
    KubeDL ignores spec changes to a running or finished job, so an in-place patch would report
    success and do nothing. The job carries a digest of all the run's objects as an annotation
    and is replaced (deleted, then created: its name is fixed) whenever any of them changes; an
    unchanged deploy leaves the job alone, and ``--rerun`` submits it again on purpose.
    """
    job = _job(manifests)
    meta = job["metadata"]
    namespace = str(meta.get("namespace", "default"))
    digest = manifest_hash(manifests, rerun)
    annotations = {**(meta.get("annotations") or {}), names.SPEC_HASH_ANNOTATION: digest}
    if not is_kubedl_job(job):
        annotations[SKIP_AWAIT_ANNOTATION] = "true"
    job = {**job, "metadata": {**meta, "annotations": annotations}}
    provider = cluster_provider(platform_stack, namespace)
    support = _register_support(
        [m for m in manifests if m["kind"] != job["kind"] or m["metadata"]["name"] != meta["name"]],
        pulumi.ResourceOptions(provider=provider),
    )
    # The job's pods mount its ConfigMaps and claims at start: create those first. Any change
    # replaces it; its name is fixed, so the old one is deleted before the new one is created.
    register(
        job,
        pulumi.ResourceOptions(
            provider=provider,
            delete_before_replace=True,
            depends_on=support,
            replace_on_changes=["*"],
        ),
    )
    return {
        "run": run.name,
        "jobName": meta["name"],
        "namespace": namespace,
        "kind": job["kind"],
        "apiVersion": job["apiVersion"],
        "specHash": digest,
        "resources": [f"{m['kind']}/{m['metadata']['name']}" for m in manifests],
    }

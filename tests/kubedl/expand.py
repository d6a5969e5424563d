"""What the operator would make of rendered manifests: the pods, Services and ConfigMaps KubeDL
v0.5.0 (or Kubernetes' Job controller, for `custom`) creates, read from the job-kind model.

It works from the manifests alone (never from the run or the contract), so tests can hold the
renderer and the contract against it: every volume's source exists, every mounted key exists, no
rendered object collides with an operator-made one, and every replica's final environment is the
one the contract promises. Values the operator computes are computed here from the manifest, the
way its controllers do (the files are cited in trainstack.kubedl.kinds and .pods).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainstack.kubedl.kinds import KINDS
from trainstack.kubedl.pods import (
    COMPLETION_INDEX_ANNOTATION,
    MPI_CONFIG_DIR,
    MPI_HOSTFILE,
    MPI_KUBEXEC,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    mpi_hostfile,
    pod_name,
)
from trainstack.kubedl.record import EnvScheme, JobKind

# KubeDL v0.5.0 controllers/mpi/mpi_config.go
MPI_CONFIG_VOLUME = "mpi-config-volume"
KUBECTL_VOLUME = "kubectl-volume"
KUBECTL_DIR = "/opt/kube"
_FIELD = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


# Pod fields known only once the pod runs (spec.torchElastic reads its IP).
_RUNTIME_FIELDS = frozenset({"status.podIP"})


@dataclass
class PodSketch:
    """One pod as the operator would create it (only what the checks need)."""

    name: str
    role: str
    index: int
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: dict[str, Any]

    def env(self, container: str) -> dict[str, str | dict[str, Any]]:
        """The container's env as the process sees it: later entries win (the operator appends),
        `$$` unescaped, fieldRefs resolved; secretKeyRefs stay references."""
        out: dict[str, str | dict[str, Any]] = {}
        for c in self.spec["containers"]:
            if c["name"] != container:
                continue
            for e in c.get("env", []):
                if "value" in e:
                    out[e["name"]] = _kubelet_unescape(e["value"])
                else:
                    out[e["name"]] = self._resolve(e["valueFrom"])
        return out

    def _resolve(self, source: dict[str, Any]) -> str | dict[str, Any]:
        ref = source.get("fieldRef")
        if ref is None or ref["fieldPath"] in _RUNTIME_FIELDS:
            return source  # resolved only when the pod runs
        m = _FIELD.fullmatch(ref["fieldPath"])
        if m is None:
            raise ValueError(f"pod {self.name}: unsupported fieldPath {ref['fieldPath']!r}")
        where = self.labels if m.group(1) == "labels" else self.annotations
        return where[m.group(2)]


@dataclass
class Expansion:
    job: dict[str, Any]
    kind: JobKind
    pods: list[PodSketch] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)
    config_maps: list[dict[str, Any]] = field(default_factory=list)
    # Warning events the operator would record (e.g. a template restartPolicy it overwrites).
    warnings: list[str] = field(default_factory=list)
    # Replica types it would never create pods for, and roles it holds back (annotation gate).
    withheld: list[str] = field(default_factory=list)

    def pod(self, role: str, index: int) -> PodSketch:
        return next(p for p in self.pods if p.role == role and p.index == index)


def kind_of(job: Mapping[str, Any]) -> JobKind:
    for k in KINDS.values():
        if (k.api_version, k.kind) == (job.get("apiVersion"), job.get("kind")):
            return k
    raise ValueError(f"not a job kind trainstack knows: {job.get('apiVersion')} {job.get('kind')}")


def find_job(manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    pairs = {(k.api_version, k.kind) for k in KINDS.values()}
    jobs = [m for m in manifests if (m.get("apiVersion"), m.get("kind")) in pairs]
    if len(jobs) != 1:
        raise ValueError(f"expected one job among the manifests, found {len(jobs)}")
    return dict(jobs[0])


def expand(manifests: Sequence[Mapping[str, Any]]) -> Expansion:
    job = find_job(manifests)
    kind = kind_of(job)
    out = Expansion(job=job, kind=kind)
    if kind.by_kubedl:
        _expand_kubedl(job, kind, out)
    else:
        _expand_indexed_job(job, kind, out)
    return out


# --- KubeDL -------------------------------------------------------------------------------------


def _replica_specs(job: Mapping[str, Any], kind: JobKind) -> dict[str, Any]:
    assert kind.replicas_key is not None
    specs: dict[str, Any] = job["spec"][kind.replicas_key]
    return specs


def _role_of(kind: JobKind, replica_type: str) -> str:
    for r in kind.roles:
        if r.replica_type == replica_type:
            return r.name
    raise ValueError(f"a {kind.kind} has no replica type {replica_type!r}")


def _port(spec: Mapping[str, Any], kind: JobKind) -> int:
    """The default container's default port: what KubeDL reads for Services and MASTER_PORT.
    KubeDL v0.5.0 pkg/job_controller/service.go (GetPortFromJob)"""
    for c in spec["template"]["spec"]["containers"]:
        if c["name"] == kind.container:
            for p in c.get("ports", []):
                if p.get("name") == kind.port_name:
                    return int(p["containerPort"])
    raise ValueError(f"no {kind.port_name} port on a {kind.container} container")


def _expand_kubedl(job: dict[str, Any], kind: JobKind, out: Expansion) -> None:
    name, ns = job["metadata"]["name"], job["metadata"].get("namespace", "default")
    specs = _replica_specs(job, kind)
    gate = kind.readiness_annotation
    ready = gate is None or job["metadata"].get("annotations", {}).get(gate[0]) == gate[1]
    if kind.operator_config_map_suffix is not None:
        workers = int(specs.get("Worker", {}).get("replicas", 0))
        out.config_maps.append(
            {
                "metadata": {"name": kind.operator_config_map(name), "namespace": ns},
                "data": {
                    MPI_KUBEXEC: "#!/bin/sh\n...",
                    MPI_HOSTFILE: mpi_hostfile(name, workers, job["spec"].get("slotsPerWorker")),
                },
            }
        )
    for rtype, spec in specs.items():
        role = _role_of(kind, rtype)
        model = kind.role(role)
        if not model.gets_pod:
            out.withheld.append(rtype)
            continue
        if not ready and role != "aimaster":
            out.withheld.append(rtype)
            continue
        template = spec["template"]
        if kind.overwrites_template_restart_policy and "restartPolicy" in template["spec"]:
            out.warnings.append(
                f"{rtype}: SettedPodTemplateRestartPolicy (Restart policy in "
                "pod template will be overwritten by restart policy in replica "
                "spec)"
            )
        for i in range(int(spec["replicas"])):
            pod_spec = json.loads(json.dumps(template["spec"]))
            # KubeDL v0.5.0 pkg/job_controller/pod.go (createNewPod, setRestartPolicy)
            pod_spec["restartPolicy"] = (
                "Never" if spec["restartPolicy"] == "ExitCode" else spec["restartPolicy"]
            )
            labels = {
                **template.get("metadata", {}).get("labels", {}),
                REPLICA_TYPE_LABEL: role,
                REPLICA_INDEX_LABEL: str(i),
            }
            pod = PodSketch(
                pod_name(name, role, i),
                role,
                i,
                labels,
                dict(template.get("metadata", {}).get("annotations", {})),
                pod_spec,
            )
            _inject(job, kind, specs, pod, ns)
            out.pods.append(pod)
            if model.gets_service:
                out.services.append(
                    {
                        "metadata": {"name": pod.name, "namespace": ns},
                        "spec": {
                            "clusterIP": "None",
                            "ports": [{"name": kind.port_name, "port": _port(spec, kind)}],
                        },
                    }
                )


def _append_env(
    pod: PodSketch, kind: JobKind, items: Mapping[str, str], *, default_only: bool
) -> None:
    for c in pod.spec["containers"]:
        if default_only and c["name"] != kind.container:
            continue
        c.setdefault("env", []).extend(
            {"name": k, "value": _kubelet_escape(v)} for k, v in items.items()
        )
        if default_only:
            break


def _inject(
    job: Mapping[str, Any], kind: JobKind, specs: Mapping[str, Any], pod: PodSketch, ns: str
) -> None:
    name = job["metadata"]["name"]
    total = sum(int(s["replicas"]) for s in specs.values())
    scheme = kind.env_scheme
    if scheme is EnvScheme.TF_CONFIG and total != 1:
        cluster: dict[str, list[str]] = {}
        for rtype, spec in specs.items():
            role = _role_of(kind, rtype)
            if kind.role(role).addressable:
                svc_port = _port(spec, kind)
                cluster[role] = [
                    f"{pod_name(name, role, i)}.{ns}.svc:{svc_port}"
                    for i in range(int(spec["replicas"]))
                ]
        cfg = {
            "cluster": dict(sorted(cluster.items())),
            "task": {"type": pod.role, "index": pod.index},
            "environment": "cloud",
        }
        _append_env(
            pod, kind, {"TF_CONFIG": json.dumps(cfg, separators=(",", ":"))}, default_only=True
        )
    elif scheme in (EnvScheme.TORCH, EnvScheme.XGBOOST):
        master = pod_name(name, "master", 0)
        port = str(_port(specs["Master"], kind))
        env: dict[str, str]
        if scheme is EnvScheme.TORCH:
            is_master = pod.role == "master"
            env = {
                "MASTER_PORT": port,
                "MASTER_ADDR": "localhost" if is_master else master,
                "RANK": str(pod.index if is_master else pod.index + 1),
                "PYTHONUNBUFFERED": "0",
                "WORLD_SIZE": str(total),
            }
        else:
            env = {
                "MASTER_PORT": port,
                "MASTER_ADDR": master,
                "WORLD_SIZE": str(total),
                "RANK": str(pod.index),
                "PYTHONUNBUFFERED": "0",
            }
        _append_env(pod, kind, env, default_only=False)
    elif scheme is EnvScheme.ELASTICBATCH:
        if pod.role == "aimaster":
            # Defaulting appends these to the AIMaster template's elasticbatch container.
            _append_env(
                pod,
                kind,
                {"JOB_NAME": name, "NAMESPACE": ns, "JOB_TYPE": "ELASTICBATCH"},
                default_only=True,
            )
        else:
            cfg = {"task": {"type": pod.role, "index": pod.index}, "environment": "cloud"}
            _append_env(
                pod,
                kind,
                {"ElASTICBATCH_CONFIG": json.dumps(cfg, separators=(",", ":"))},
                default_only=True,
            )
    elif scheme is EnvScheme.MPI:
        _mpi(kind, name, pod)


def _mpi(kind: JobKind, job: str, pod: PodSketch) -> None:
    """KubeDL v0.5.0 controllers/mpi/mpijob_controller.go (setupMPIWorker, setupMPILauncher)."""
    cm = kind.operator_config_map(job)
    volumes = pod.spec.setdefault("volumes", [])
    mount = {"name": MPI_CONFIG_VOLUME, "mountPath": MPI_CONFIG_DIR}
    if pod.role == "worker":
        volumes.append(
            {
                "name": MPI_CONFIG_VOLUME,
                "configMap": {"name": cm, "items": [{"key": MPI_KUBEXEC, "path": MPI_KUBEXEC}]},
            }
        )
        for c in pod.spec["containers"]:
            c.setdefault("volumeMounts", []).append(dict(mount))
        return
    pod.spec.setdefault("initContainers", []).append(
        {
            "name": "kubectl-delivery",
            "volumeMounts": [{"name": KUBECTL_VOLUME, "mountPath": KUBECTL_DIR}, dict(mount)],
        }
    )
    _append_env(
        pod,
        kind,
        {
            "OMPI_MCA_plm_rsh_agent": f"{MPI_CONFIG_DIR}/{MPI_KUBEXEC}",
            "OMPI_MCA_orte_default_hostfile": f"{MPI_CONFIG_DIR}/{MPI_HOSTFILE}",
        },
        default_only=False,
    )
    for c in pod.spec["containers"]:
        c.setdefault("volumeMounts", []).extend(
            [{"name": KUBECTL_VOLUME, "mountPath": KUBECTL_DIR}, dict(mount)]
        )
    volumes += [
        {"name": KUBECTL_VOLUME, "emptyDir": {}},
        {
            "name": MPI_CONFIG_VOLUME,
            "configMap": {
                "name": cm,
                "items": [
                    {"key": MPI_KUBEXEC, "path": MPI_KUBEXEC},
                    {"key": MPI_HOSTFILE, "path": MPI_HOSTFILE},
                ],
            },
        },
    ]


# --- Kubernetes Indexed Job ----------------------------------------------------------------------


def _expand_indexed_job(job: dict[str, Any], kind: JobKind, out: Expansion) -> None:
    name = job["metadata"]["name"]
    template = job["spec"]["template"]
    role = kind.primary_role
    for i in range(int(job["spec"]["completions"])):
        pod_spec = json.loads(json.dumps(template["spec"]))
        annotations = {
            **template.get("metadata", {}).get("annotations", {}),
            COMPLETION_INDEX_ANNOTATION: str(i),
        }
        # The real name ends in a random suffix; `<job>-<index>` stands in for it.
        pod = PodSketch(
            f"{name}-{i}",
            role,
            i,
            dict(template["metadata"].get("labels", {})),
            annotations,
            pod_spec,
        )
        _append_env(pod, kind, {"JOB_COMPLETION_INDEX": str(i)}, default_only=False)
        out.pods.append(pod)


# --- checks ---------------------------------------------------------------------------------------


def problems(
    manifests: Sequence[Mapping[str, Any]],
    expansion: Expansion,
    *,
    external: Mapping[str, set[str]] | None = None,
) -> list[str]:
    """Everything that would go wrong on a cluster: a volume whose ConfigMap, Secret or claim is
    neither rendered, operator-made nor `external[kind]` (objects the platform or the user own),
    a mounted key a ConfigMap lacks, a rendered object the operator would also create, an object
    a pod's ServiceAccount name does not resolve to, duplicate volume names or mount paths."""
    ext = {k: set(v) for k, v in (external or {}).items()}
    rendered: dict[tuple[str, str], Mapping[str, Any]] = {
        (str(m["kind"]), str(m["metadata"]["name"])): m for m in manifests
    }
    out: list[str] = []
    made = [("ConfigMap", cm["metadata"]["name"]) for cm in expansion.config_maps]
    made += [("Service", s["metadata"]["name"]) for s in expansion.services]
    made += [("Pod", p.name) for p in expansion.pods]
    for key in made:
        if key in rendered:
            out.append(f"{key[0]} {key[1]} is rendered and also created by the operator")
    config_maps: dict[str, Mapping[str, Any]] = {
        cm["metadata"]["name"]: cm for cm in expansion.config_maps
    }
    config_maps.update({n: m for (k, n), m in rendered.items() if k == "ConfigMap"})
    for pod in expansion.pods:
        volumes = pod.spec.get("volumes", [])
        names = [v["name"] for v in volumes]
        if len(set(names)) != len(names):
            out.append(f"pod {pod.name}: duplicate volume names {sorted(names)}")
        for v in volumes:
            out += _volume_problems(pod, v, config_maps, rendered, ext)
        for c in [*pod.spec.get("initContainers", []), *pod.spec["containers"]]:
            paths = [m["mountPath"] for m in c.get("volumeMounts", [])]
            if len(set(paths)) != len(paths):
                out.append(f"pod {pod.name} container {c['name']}: a path is mounted twice")
            for m in c.get("volumeMounts", []):
                if m["name"] not in names:
                    out.append(f"pod {pod.name}: mount of unknown volume {m['name']}")
        refs = [s["name"] for s in pod.spec.get("imagePullSecrets", [])]
        refs += [
            e["valueFrom"]["secretKeyRef"]["name"]
            for c in pod.spec["containers"]
            for e in c.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})
        ]
        for ref in refs:
            if ("Secret", ref) not in rendered and ref not in ext.get("Secret", set()):
                out.append(f"pod {pod.name}: Secret {ref} does not exist")
        account = pod.spec.get("serviceAccountName")
        if (
            account
            and ("ServiceAccount", account) not in rendered
            and account not in ext.get("ServiceAccount", set())
        ):
            out.append(f"pod {pod.name}: ServiceAccount {account} does not exist")
    return out


def _volume_problems(
    pod: PodSketch,
    volume: Mapping[str, Any],
    config_maps: Mapping[str, Mapping[str, Any]],
    rendered: Mapping[tuple[str, str], Mapping[str, Any]],
    ext: Mapping[str, set[str]],
) -> list[str]:
    out: list[str] = []
    if "configMap" in volume:
        ref = volume["configMap"]["name"]
        cm = config_maps.get(ref)
        if cm is None:
            if ref not in ext.get("ConfigMap", set()):
                out.append(f"pod {pod.name}: ConfigMap {ref} does not exist")
            return out
        keys = set(cm.get("data") or {}) | set(cm.get("binaryData") or {})
        for item in volume["configMap"].get("items", []):
            if item["key"] not in keys:
                out.append(f"pod {pod.name}: ConfigMap {ref} has no key {item['key']}")
    elif "secret" in volume:
        ref = volume["secret"]["secretName"]
        if ("Secret", ref) not in rendered and ref not in ext.get("Secret", set()):
            out.append(f"pod {pod.name}: Secret {ref} does not exist")
    elif "persistentVolumeClaim" in volume:
        ref = volume["persistentVolumeClaim"]["claimName"]
        if ("PersistentVolumeClaim", ref) not in rendered and ref not in ext.get(
            "PersistentVolumeClaim", set()
        ):
            out.append(f"pod {pod.name}: PersistentVolumeClaim {ref} does not exist")
    return out


def _kubelet_unescape(text: str) -> str:
    return text.replace("$$", "$")


def _kubelet_escape(text: str) -> str:
    return text.replace("$", "$$")

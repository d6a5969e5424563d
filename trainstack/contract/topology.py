"""Where every replica of a run listens: the input to the framework variables.

On a cluster the addresses are KubeDL's per-replica Services, `<job>-<role>-<i>.<ns>.svc:<port>`
(Alibaba PAI Designer custom components: `TF_CONFIG`). A local run either gives every replica
127.0.0.1 and a port the runner picked (one shared network namespace), or the cluster's own names
and ports, each replica a host of its own (trainstack.local.podns).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trainstack.k8snames import job_name as k8s_job_name
from trainstack.kubedl import job_kind
from trainstack.spec.model import FrozenMap, Run

DEFAULT_NAMESPACE = "default"
# Ports handed out for `advanced.customPortNumPerWorker` (PAI DLC picks them at random;
# a pod has its own network namespace, so a fixed range is as good and stays deterministic).
CUSTOM_PORT_BASE = 20000
LOCALHOST = "127.0.0.1"


def custom_ports(run: Run) -> tuple[int, ...]:
    """The extra ports each replica may listen on (`CUSTOM_PORTS`), for a cluster."""
    adv = run.advanced
    if adv.custom_ports:
        return adv.custom_ports
    if adv.custom_port_num_per_worker:
        return tuple(range(CUSTOM_PORT_BASE, CUSTOM_PORT_BASE + adv.custom_port_num_per_worker))
    return ()


@dataclass(frozen=True)
class Topology:
    job_name: str
    # role -> one "host:port" (or "host" where the kind has no port) per replica index
    addresses: FrozenMap[str, tuple[str, ...]]
    is_local: bool = False
    # role -> per replica, the ports in CUSTOM_PORTS; empty means `custom_ports(run)`
    custom_ports: FrozenMap[str, tuple[tuple[int, ...], ...]] = field(default_factory=FrozenMap)
    namespace: str = DEFAULT_NAMESPACE  # the job's (KubeDL gives it to an AIMaster as NAMESPACE)

    @classmethod
    def cluster(cls, run: Run, namespace: str, job_name: str | None = None) -> Topology:
        name = job_name or k8s_job_name(run.name)
        port = job_kind(run.job_type).port
        addrs = {
            role: tuple(
                _join(f"{name}-{role}-{i}.{namespace}.svc", port) for i in range(res.replicas)
            )
            for role, res in run.resources.items()
        }
        return cls(job_name=name, addresses=FrozenMap(addrs), namespace=namespace)

    @classmethod
    def pods(cls, run: Run, job_name: str | None = None) -> Topology:
        """A local run whose replicas are hosts of their own (trainstack.local.podns): the
        cluster's names and the kind's port, in the run's namespace, resolved on this machine."""
        cluster = cls.cluster(run, run.namespace or DEFAULT_NAMESPACE, job_name)
        return cls(
            job_name=cluster.job_name,
            addresses=cluster.addresses,
            is_local=True,
            namespace=cluster.namespace,
        )

    @classmethod
    def local(
        cls,
        run: Run,
        ports: Mapping[str, Sequence[int]],
        *,
        job_name: str | None = None,
        custom_ports: Mapping[str, Sequence[Sequence[int]]] | None = None,
    ) -> Topology:
        """`ports[role][i]` is the free port replica i listens on; roles of kinds without a
        framework port (mpi, custom) may be left out."""
        addrs: dict[str, tuple[str, ...]] = {}
        for role, res in run.resources.items():
            given = list(ports.get(role, ()))
            if job_kind(run.job_type).port is not None and len(given) != res.replicas:
                raise ValueError(
                    f"role {role!r} has {res.replicas} replica(s) but "
                    f"{len(given)} port(s) were given"
                )
            addrs[role] = tuple(
                _join(LOCALHOST, given[i] if given else None) for i in range(res.replicas)
            )
        extra = {role: tuple(tuple(p) for p in per) for role, per in (custom_ports or {}).items()}
        return cls(
            job_name=job_name or k8s_job_name(run.name),
            addresses=FrozenMap(addrs),
            is_local=True,
            custom_ports=FrozenMap(extra),
            namespace=run.namespace or DEFAULT_NAMESPACE,
        )

    def addressable(self, run: Run) -> dict[str, tuple[str, ...]]:
        """The addresses of replicas that can be reached by name: on a cluster only those KubeDL
        gives a Service (trainstack.kubedl `Role.gets_service`)."""
        kind = job_kind(run.job_type)
        return {
            role: addrs
            for role, addrs in self.addresses.items()
            if kind.has_role(role) and kind.role(role).addressable
        }

    def address(self, role: str, index: int) -> str:
        return self.addresses[role][index]

    def host(self, role: str, index: int) -> str:
        return self.address(role, index).rpartition(":")[0] or self.address(role, index)

    def port(self, role: str, index: int) -> int | None:
        _head, sep, tail = self.address(role, index).rpartition(":")
        return int(tail) if sep else None

    def service_name(self, role: str, index: int) -> str:
        """What KubeDL puts in MASTER_ADDR: the bare Service name (it resolves inside the
        namespace); a local run's shared loopback address as it is."""
        host = self.host(role, index)
        return host if _is_ip(host) else host.split(".", 1)[0]

    def ports_of(self, run: Run, role: str, index: int) -> tuple[int, ...]:
        per = self.custom_ports.get(role)
        if per is not None and index < len(per):
            return per[index]
        return custom_ports(run)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _join(host: str, port: int | None) -> str:
    return host if port is None else f"{host}:{port}"

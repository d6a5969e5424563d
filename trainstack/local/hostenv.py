"""What a local replica takes from the shell that started `trainstack run --local`.

A pod's process sees its image's environment, the contract's variables and what the kubelet adds;
nothing of the shell that ran `kubectl apply` or `trainstack deploy`. Locally this machine stands
in for the image, so its variables that say where programs, libraries, locales and certificates
are (`MACHINE_NAMES`, `MACHINE_PREFIXES`) reach the replicas, and nothing else does unless the user
names it (`--pass-env NAME`): a variable exported for another purpose (an earlier experiment's
`WORKER_ADDRS`, a `MASTER_PORT`) would otherwise let a script pass locally that fails on the
cluster with a `KeyError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from trainstack.errors import UserError
from trainstack.kubedl import CONTRACT_NAMES, CONTRACT_PREFIXES, KINDS, operator_env

# Where this machine's programs and libraries are (an image sets the same in its ENV), its
# locale and time zone, its certificates, and how it reaches the network.
MACHINE_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "VIRTUAL_ENV",
        "CUDA_HOME",
        "CUDA_PATH",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
    }
)
MACHINE_PREFIXES = ("LC_", "CONDA_")
PASS_ENV_OPTION = "--pass-env"
# What the contract, the operator or the runtime sets in a replica: never taken from the shell.
RESERVED_PREFIXES = (*CONTRACT_PREFIXES, "MODEL_")
RESERVED_NAMES = frozenset(
    {
        *CONTRACT_NAMES,
        *(n for t in KINDS for n in operator_env(t)),
        "CUDA_VISIBLE_DEVICES",
        "HOSTNAME",
    }
)


def reserved(name: str) -> bool:
    return name in RESERVED_NAMES or name.startswith(RESERVED_PREFIXES)


def machine_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `environ` that stand in for an image's environment."""
    return {
        k: v
        for k, v in environ.items()
        if (k in MACHINE_NAMES or k.startswith(MACHINE_PREFIXES)) and not reserved(k)
    }


def passed_env(names: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the user passes by name: each must be set, and none may be one the
    contract or the operator sets (it would be overwritten on the cluster, and locally it
    would hide the contract's own value)."""
    wanted = list(dict.fromkeys(names))
    refused = [n for n in wanted if reserved(n)]
    if refused:
        raise UserError(
            f"{PASS_ENV_OPTION} {', '.join(refused)}: set by the contract, the operator or the "
            "container runtime in a replica",
            hint="set a value of your own in the run's spec.env under another name",
        )
    missing = [n for n in wanted if n not in environ]
    if missing:
        raise UserError(
            f"{PASS_ENV_OPTION} {', '.join(missing)}: not set in this shell",
            hint=f"export {missing[0]}=... first, or drop {PASS_ENV_OPTION} {missing[0]}",
        )
    return {n: environ[n] for n in wanted}

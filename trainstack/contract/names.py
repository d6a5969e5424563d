"""Kubernetes names derived from user names, shared by the contract (`JOB_NAME`) and the renderer.

Run and channel names allow upper case and '_'; Kubernetes object names do not. KubeDL also
creates a Service `<job>-<role>-<i>` per replica, which must be a DNS-1035 label (≤ 63, starts
with a letter), so job names are capped well below 63 and always start with a letter.
"""

from __future__ import annotations

import hashlib
import re

_INVALID = re.compile(r"[^a-z0-9-]+")
_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
# Room for KubeDL's "-evaluator-9999" suffix inside a 63-character Service name.
MAX_JOB_NAME = 47


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def dns_label(text: str, *, max_len: int = 63, prefix: str = "") -> str:
    """A DNS-1035 label for `text`: lower-case, '_' and other invalid characters → '-'.

    When that mapping had to do more than lower-case and '_' → '-' (or truncate), a short digest
    of the original keeps distinct inputs distinct."""
    lowered = text.lower().replace("_", "-")
    name = prefix + _INVALID.sub("-", lowered).strip("-")
    lossy = name != prefix + lowered
    if not _LABEL.fullmatch(name):
        name = "x-" + name if name and not name[0].isalpha() else name or "x"
        lossy = True
    if lossy or len(name) > max_len:
        name = name[: max_len - 9].rstrip("-") + "-" + _digest(text)
    return name


def job_name(run_name: str) -> str:
    """The KubeDL job (and ConfigMap, PVC prefix) name of a run; also `JOB_NAME` in the contract."""
    return dns_label(run_name, max_len=MAX_JOB_NAME)

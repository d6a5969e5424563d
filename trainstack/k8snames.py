"""Kubernetes' own name rules (DNS-1123), the one source for every check of a name the API
server will judge: a label (namespaces, claims, Services: at most 63 characters) and a subdomain
(Secrets, most objects: at most 253). The spec schema, the CLI's options and the platform's
config check names with these; the renderer shortens to MAX_LABEL.

`dns_label` and `job_name` derive Kubernetes names from user names, shared by the contract
(`JOB_NAME`), the renderer and the spec's run-name rule (a run's name must already be its job's
name, so two runs never share one). KubeDL creates a Service `<job>-<role>-<i>` per replica,
which must be a DNS-1035 label (at most 63, starts with a letter), so job names are capped well
below 63 and always start with a letter.
"""

from __future__ import annotations

import hashlib
import re

MAX_LABEL = 63
MAX_SUBDOMAIN = 253
_ALNUM = "[a-z0-9]"
# Without a length: the caller bounds it (a lookahead, or a length check beside the match).
LABEL = rf"{_ALNUM}([-a-z0-9]*{_ALNUM})?"
SUBDOMAIN = rf"{LABEL}(\.{LABEL})*"


def label_pattern(limit: int) -> str:
    """A label of at most `limit` characters, the length built in (for schemas and config
    readers that take one pattern; cloud names that follow the label rules with a limit of
    their own, such as an ACK node pool's 32)."""
    return rf"{_ALNUM}([-a-z0-9]{{0,{limit - 2}}}{_ALNUM})?"


LABEL_63 = label_pattern(MAX_LABEL)
# An object name without dots (most trainstack names): a subdomain's length, a label's shape.
NAME_253 = label_pattern(MAX_SUBDOMAIN)

LABEL_RE = re.compile(LABEL)
SUBDOMAIN_RE = re.compile(SUBDOMAIN)

_INVALID = re.compile(r"[^a-z0-9-]+")
_LABEL_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
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
    if not _LABEL_1035.fullmatch(name):
        name = "x-" + name if name and not name[0].isalpha() else name or "x"
        lossy = True
    if lossy or len(name) > max_len:
        name = name[: max_len - 9].rstrip("-") + "-" + _digest(text)
    return name


def job_name(run_name: str) -> str:
    """The KubeDL job (and ConfigMap, PVC prefix) name of a run; also `JOB_NAME` in the contract."""
    return dns_label(run_name, max_len=MAX_JOB_NAME)

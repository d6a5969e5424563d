"""Kubernetes' own name rules (DNS-1123), the one source for every check of a name the API
server will judge: a label (namespaces, claims, Services: at most 63 characters) and a subdomain
(Secrets, most objects: at most 253). The spec schema, the CLI's options and the platform's
config check names with these; the renderer shortens to MAX_LABEL."""

from __future__ import annotations

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

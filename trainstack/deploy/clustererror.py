"""The error of a cluster that could not be reached or refused a request: a module of its own,
so the client (kube) and the reader of its answers (apijson) both raise it without importing
each other."""

from __future__ import annotations

from trainstack.errors import UserError


class ClusterError(UserError):
    """The cluster could not be reached or refused the request."""

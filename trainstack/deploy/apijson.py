"""Reading the Kubernetes API's JSON defensively: each field the job's state is read from is
checked for the type the API defines, so an odd answer (a proxy's page, a broken or hostile
server) is one clear ``AnswerError`` naming the field, never a traceback, and nothing odd reaches
the registry (a 2**70 restart count would not even fit SQLite's INTEGER).

Types are the API's: ``exitCode`` and ``restartCount`` are int32 (core/v1 ContainerStateTerminated,
ContainerStatus; restartCount is never negative), label and annotation values are strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainstack.deploy.clustererror import ClusterError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class AnswerError(ClusterError):
    """The cluster answered, but not in the shape the Kubernetes API returns."""


def kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else "a value"


class Reader:
    """Typed access to one answer; ``what`` says which request it answered."""

    def __init__(self, what: str) -> None:
        self.what = what

    def error(self, path: str, problem: str) -> AnswerError:
        where = f"{path}: " if path else ""
        return AnswerError(
            f"{self.what}: the cluster's answer is not what the Kubernetes API returns: "
            f"{where}{problem}",
            hint="something other than the API server may be answering at the cluster's "
            "address (a proxy, a load balancer's page); check the kubeconfig's server",
        )

    def obj(self, value: object, path: str) -> Mapping[str, Any]:
        """An object; absent (null) reads as empty, as the API omits empty fields."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(path, f"expected an object, found {kind_of(value)}")
        return value

    def items(self, value: object, path: str) -> Sequence[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(path, f"expected a list, found {kind_of(value)}")
        return value

    def text(self, value: object, path: str) -> str | None:
        if value is None or isinstance(value, str):
            return value
        raise self.error(path, f"expected a string, found {kind_of(value)}")

    def int32(self, value: object, path: str, *, minimum: int = INT32_MIN) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"expected an integer, found {kind_of(value)}")
        if not minimum <= value <= INT32_MAX:
            raise self.error(path, f"expected an integer from {minimum} to {INT32_MAX}")
        return value

    def index(self, value: object, path: str) -> int:
        """A replica index as KubeDL's label or the Indexed Job's annotation carries it: the
        decimal digits of a non-negative int32."""
        text = self.text(value, path)
        if text is None or not (text.isascii() and text.isdigit()) or int(text) > INT32_MAX:
            raise self.error(path, f"expected a replica index (0, 1, ...), found {text!r}")
        return int(text)

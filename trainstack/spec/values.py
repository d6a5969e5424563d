"""Parsers for the small value languages inside specs: quantities, durations, port lists,
storage URIs and contract env-var names. Each raises ValueError with a message for the user."""

from __future__ import annotations

import math
import re
from fractions import Fraction

from trainstack.secretnames import looks_secret
from trainstack.spec import schemes as storage
from trainstack.spec.model import Binding, BindingMode, Quantity, Scheme

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "binding",
    "duration_seconds",
    "env_name",
    "looks_secret",
    "port_list",
    "quantity",
]

_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}
# Kubernetes' limits on what a spec turns into:
# - resource.Quantity: "No matter which of the three exponent forms is used, no quantity may
#   represent a number greater than 2^63-1 in magnitude" (k8s.io/apimachinery
#   pkg/api/resource/quantity.go); a larger one is capped, so it would not be what was written.
# - activeDeadlineSeconds is an int64 (batch/v1 JobSpec; KubeDL v0.5.0 RunPolicy);
#   ttlSecondsAfterFinished an int32 (the same two types).
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
# Every parameter value reaches each replica in one environment string, PAI_USER_ARGS (shell
# quoted) and again in PAI_HPS (JSON); Linux refuses a single argv or environment string longer
# than MAX_ARG_STRLEN, 32 pages = 128 KiB (execve(2), "Limits on size of arguments and
# environment"), as "Argument list too long". Half of it leaves room for the variable's name
# and quoting; the run's ConfigMap (hyperparameters.json, training_job.json: a few copies) then
# stays far below Kubernetes' 1 MiB for a ConfigMap's data.
MAX_PARAMETER_TEXT = 64 * 1024
_EXACT = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    **{k: Fraction(10) ** (3 * (i + 1)) for i, k in enumerate("kMGTPE")},
    **{
        k: Fraction(2) ** (10 * (i + 1)) for i, k in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))
    },
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$")
_DURATION = re.compile(r"([0-9]+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
RESERVED_PORT = 23456  # PyTorchJob's master port; DLC forbids it in customPortList
MAX_CUSTOM_PORTS = 1024
SCHEMES = tuple(s.value for s in Scheme)


def quantity(value: int | float | str) -> Quantity:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a quantity such as 4, 500m, 16Gi, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number: a Kubernetes quantity has no NaN or infinity")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("must not be negative")
        if value > INT64_MAX:
            raise _past_int64()
        text = str(int(value)) if float(value).is_integer() else repr(float(value))
        return Quantity(text, float(value))
    match = _QUANTITY.match(value.strip())
    if not match:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ValueError(f"{shown!r} is not a quantity such as 4, 500m, 16Gi")
    number, suffix = match.group(1), match.group(2) or ""
    if Fraction(number) * _EXACT[suffix] > INT64_MAX:
        raise _past_int64()
    return Quantity(number + suffix, float(number) * _SUFFIX[suffix])


def parameter_text_bytes(params: dict[str, object]) -> int:
    """The longer of PAI_USER_ARGS and PAI_HPS that `params` make (UTF-8 bytes), as
    trainstack.contract.hyper writes them: `--name value` shell-quoted, and JSON."""
    import json
    import shlex

    args = " ".join(
        f"--{shlex.quote(str(k))} {shlex.quote(v if isinstance(v, str) else json.dumps(v))}"
        for k, v in params.items()
    )
    hps = json.dumps(params, ensure_ascii=False, default=str)
    return max(len(args.encode("utf-8", "replace")), len(hps.encode("utf-8", "replace")))


def _past_int64() -> ValueError:
    return ValueError(
        "is past the largest quantity Kubernetes keeps, 2^63-1 "
        "(k8s.io/apimachinery resource.Quantity caps larger ones)"
    )


def duration_seconds(value: int | str, maximum: int = INT64_MAX, field: str = "int64") -> int:
    """Seconds in `value`; `maximum` is what the Kubernetes field it becomes can hold."""
    if isinstance(value, int) and not isinstance(value, bool):
        total = value
    else:
        text = str(value).strip()
        if not text or _DURATION.sub("", text):
            shown = text if len(text) <= 40 else text[:40] + "…"
            raise ValueError(f"{shown!r} is not a duration such as 90m, 24h, 1h30m, 2d")
        total = sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION.findall(text))
    if total < 1:
        raise ValueError("must be at least 1 second")
    if total > maximum:
        raise ValueError(
            f"is past {maximum:,} seconds, the most the Kubernetes field it becomes holds "
            f"(an {field})"
        )
    return total


def port_list(text: str) -> tuple[int, ...]:
    """`10000;10001-10010` → (10000, 10001, …, 10010); sorted, unique."""
    ports: set[int] = set()
    for part in text.split(";"):
        part = part.strip()
        if not part:
            raise ValueError("empty entry between ';'")
        lo_text, _, hi_text = part.partition("-")
        if not lo_text.isdigit() or (hi_text and not hi_text.isdigit()):
            raise ValueError(f"{part!r} is not a port or a range such as 10001-10010")
        lo, hi = int(lo_text), int(hi_text or lo_text)
        if not (1 <= lo <= 65535 and 1 <= hi <= 65535):
            raise ValueError(f"{part!r}: ports are 1-65535")
        if hi < lo:
            raise ValueError(f"{part!r}: the range ends before it starts")
        ports.update(range(lo, hi + 1))
        if len(ports) > MAX_CUSTOM_PORTS:
            raise ValueError(f"more than {MAX_CUSTOM_PORTS} ports")
    if RESERVED_PORT in ports:
        raise ValueError(
            f"must not include {RESERVED_PORT}, the PyTorch master port that is always exposed"
        )
    return tuple(sorted(ports))


def env_name(name: str) -> str:
    """The contract's env-var form of a channel/parameter name: upper-case, [^A-Za-z0-9_] → _."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name).upper()


_FILE_EXT = re.compile(r"\.[A-Za-z0-9]{1,16}$")


def binding(
    uri: str, *, kind: str | None = None, mode: BindingMode | str = BindingMode.MOUNT
) -> Binding:
    """Parse `scheme://location/path`. A trailing '/' names a directory; a last segment with a
    file extension names a file; `kind` ("file" | "directory") overrides the guess."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise ValueError(
            f"{uri!r} is not a URI; expected scheme://… with scheme one of " + ", ".join(SCHEMES)
        )
    if scheme not in SCHEMES:
        raise ValueError(
            f"unsupported scheme {scheme + '://'!r}; expected one of "
            + ", ".join(s + "://" for s in SCHEMES)
        )
    if scheme == "file":
        location, path = "", rest
        if not path:
            raise ValueError("file:// needs a path, e.g. file:///data/train/ or file://./data/")
    else:
        location, _, path = rest.partition("/")
        path = "/" + path
        record = storage.SCHEMES[Scheme(scheme)]
        if not location:
            raise ValueError(
                f"{uri!r} has no {record.location}: expected {scheme}://"
                f"{record.location.replace(' ', '-')}/path"
            )
        problem = record.location_problem(location)
        if problem is not None:
            raise ValueError(problem)
    if ".." in path.split("/"):
        raise ValueError(f"{uri!r} must not contain '..'")
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if kind is None:
        is_file = not path.endswith("/") and bool(_FILE_EXT.search(last))
    else:
        is_file = kind == "file"
    if is_file and path.endswith("/"):
        raise ValueError(f"{uri!r} ends with '/' but is declared a file")
    return Binding(
        uri=uri,
        scheme=Scheme(scheme),
        location=location,
        path=path,
        is_file=is_file,
        mode=BindingMode(mode),
    )

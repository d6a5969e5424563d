"""Run a Pulumi program offline under Pulumi's mocks and record what ``pulumi up`` would do.

The mocks stand in for the engine and the cloud only: the program is the real one. It runs as a
*preview* (``preview=True``), so values only the cloud can know (ids, endpoints) stay unknown and
show as ``(known after apply)`` instead of made-up strings, exactly as ``pulumi preview`` would
show them. Secret values never leave this module: they are replaced by ``[secret]``.

Pulumi's runtime is process-global; ``run_program`` resets it on every call, so plans can run
one after another in one process (tests, benchmarks), never concurrently.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

from trainstack.platformnames import PLAN_UNKNOWN
from trainstack.secretnames import looks_secret

if TYPE_CHECKING:
    from trainstack.render.overrides import Overrides

SECRET = "[secret]"
UNKNOWN = PLAN_UNKNOWN


@dataclass(frozen=True)
class PlannedResource:
    op: str  # "create" (registered) or "read" (an existing resource, e.g. a StackReference)
    type: str
    name: str
    parent: str | None  # "type::name" of the parent, None for top-level resources
    provider: str | None  # name of the explicit provider instance, if any
    custom: bool
    inputs: dict[str, Any]
    # The resource options a reviewer checks: what Pulumi will refuse to delete or replace
    # (protect), leave behind on delete (retainOnDelete) and create first (dependsOn, as
    # "type::name" like parent), and how a replacement goes (deleteBeforeReplace: the old one
    # first; replaceOnChanges: which changed inputs replace instead of updating).
    protect: bool = False
    retain_on_delete: bool = False
    depends_on: tuple[str, ...] = ()
    delete_before_replace: bool = False
    replace_on_changes: tuple[str, ...] = ()

    @property
    def options(self) -> dict[str, Any]:
        return {
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
            "parent": self.parent,
            "dependsOn": list(self.depends_on),
            "deleteBeforeReplace": self.delete_before_replace,
            "replaceOnChanges": list(self.replace_on_changes),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "provider": self.provider,
            "custom": self.custom,
            "inputs": self.inputs,
            "options": self.options,
        }


@dataclass
class Plan:
    project: str
    stack: str
    resources: list[PlannedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    # Set-up steps `pulumi up` still needs (an offline plan of a new environment).
    pending: list[str] = field(default_factory=list)
    # A run's plan: the platform project's templates its manifests were rendered with.
    templates: Overrides | None = None
    # A run's plan: its identity (infra/run/identity.py), to compare with a deployed one's.
    identity: str | None = None
    # A run's plan: what the environment's operator does otherwise than the run asks.
    notes: list[str] = field(default_factory=list)
    # A run's plan: its component's name (the budget check's typical duration).
    component: str | None = None


# Outputs the cloud computes that the program builds documents from: given their shape, with every
# leaf "(known after apply)", so the plan shows the document (e.g. the jobs role's trust policy,
# its oidc:sub condition included) with only the cloud's values unknown, not just "unknown".
_COMPUTED_SHAPES: dict[str, dict[str, Any]] = {
    "alicloud:cs/managedKubernetes:ManagedKubernetes": {
        "rrsaMetadata": {
            "enabled": True,
            "ramOidcProviderArn": UNKNOWN,
            "rrsaOidcIssuerUrl": UNKNOWN,
        }
    },
}


def mask(value: Any) -> Any:
    """A JSON-able copy with secrets as ``[secret]`` and unknowns as ``(known after apply)``."""
    if rpc.is_rpc_secret(value):
        return SECRET
    if isinstance(value, pulumi.output.Unknown):
        return UNKNOWN
    if isinstance(value, dict):
        return {str(k): mask(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [mask(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the engine sends every number as a float; show 3, not 3.0
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _short_urn(urn: str) -> str | None:
    """``type::name`` of a URN; None for the stack itself (its children are top-level)."""
    parts = urn.split("::")
    if len(parts) < 4:
        return None
    type_ = parts[2].split("$")[-1]
    return None if type_ == "pulumi:pulumi:Stack" else f"{type_}::{parts[3]}"


def _provider_name(ref: str) -> str | None:
    # A provider reference is "<urn>::<id>"; the URN's last part is the provider's name.
    parts = ref.split("::")
    return parts[-2] if len(parts) >= 5 else None


# A provider's credential inputs: a kubeconfig (a path, or a whole admin config with its
# tokens) given as plain stack config still must not print.
_PROVIDER_CREDENTIALS = frozenset({"kubeconfig"})


def _mask_credentials(type_: str, inputs: dict[str, Any]) -> dict[str, Any]:
    if not type_.startswith("pulumi:providers:"):
        return inputs
    return {
        k: SECRET
        if v not in (None, "", UNKNOWN) and (k in _PROVIDER_CREDENTIALS or looks_secret(k))
        else v
        for k, v in inputs.items()
    }


class _Mocks(pmocks.Mocks):
    """Echo inputs as outputs; answer reads and invokes from canned values."""

    def __init__(
        self, reads: Mapping[str, dict[str, Any]], invokes: Mapping[str, dict[str, Any]]
    ) -> None:
        self._reads = reads
        self._invokes = invokes
        # Per registration being answered (innermost last: answering one runs the event loop,
        # which may register another), a place for its inputs as the monitor deserialized them.
        self._frames = threading.local()

    @contextmanager
    def answering(self) -> Iterator[list[Any]]:
        frames: list[list[Any]] = self._frames.__dict__.setdefault("stack", [])
        frame: list[Any] = []
        frames.append(frame)
        try:
            yield frame
        finally:
            frames.pop()

    def new_resource(self, args: pmocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        frames = self._frames.__dict__.get("stack")
        if frames:
            frames[-1].append(args.inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            stack = str(args.inputs.get("name", args.name))  # the referenced stack, not our name
            return stack, self._reads.get(stack, {"name": stack, "outputs": {}})
        # Under preview, an empty id means "unknown until created", like a real preview.
        return "", {**_COMPUTED_SHAPES.get(args.typ, {}), **dict(args.inputs)}

    def call(self, args: pmocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return dict(self._invokes.get(args.token, {})), []


class _RecordingMonitor(pmocks.MockMonitor):
    """The mock monitor, plus a record of every registration with its parent and provider."""

    def __init__(self, mocks: _Mocks) -> None:
        super().__init__(mocks)
        self._mocks = mocks
        self._records: list[PlannedResource | None] = []
        self._lock = threading.Lock()  # in case registrations arrive on worker threads

    @property
    def records(self) -> list[PlannedResource]:
        return [r for r in self._records if r is not None]

    def _recorded(self, op: str, request: Any, answer: Callable[[Any], Any]) -> Any:
        """``answer(request)``, recorded in the order registrations arrive (a slot taken before
        answering, which may register others) with the inputs the mock monitor deserialized
        for ``new_resource`` (deserializing them here again was a tenth of a run's plan)."""
        with self._lock:
            slot = len(self._records)
            self._records.append(None)
        with self._mocks.answering() as inputs:
            response = answer(request)
        self._records[slot] = _record(op, request, inputs[0] if inputs else None)
        return response

    # gRPC method names.
    def RegisterResource(self, request: Any) -> Any:
        if request.type == "pulumi:pulumi:Stack":
            return super().RegisterResource(request)  # type: ignore[no-untyped-call]
        return self._recorded("create", request, super().RegisterResource)

    def ReadResource(self, request: Any) -> Any:
        return self._recorded("read", request, super().ReadResource)


def _record(op: str, request: Any, inputs: Any) -> PlannedResource:
    return PlannedResource(
        op=op,
        type=request.type,
        name=request.name,
        parent=_short_urn(request.parent) if request.parent else None,
        provider=_provider_name(request.provider) if request.provider else None,
        custom=bool(getattr(request, "custom", True)),
        inputs=_mask_credentials(request.type, mask(inputs)) if isinstance(inputs, dict) else {},
        protect=bool(getattr(request, "protect", False)),
        retain_on_delete=bool(getattr(request, "retainOnDelete", False)),
        depends_on=tuple(
            sorted(
                short
                for short in (_short_urn(u) for u in getattr(request, "dependencies", ()))
                if short is not None
            )
        ),
        delete_before_replace=bool(getattr(request, "deleteBeforeReplace", False)),
        replace_on_changes=tuple(getattr(request, "replaceOnChanges", ())),
    )


_P = ParamSpec("_P")
_T = TypeVar("_T")


class _Inline(ThreadPoolExecutor):
    """An executor that runs what it is given at once, on the calling thread. The SDK sends
    every registration to the monitor through the event loop's default executor (a thread per
    call, for a real engine's blocking gRPC); the mock monitor answers at once, so the thread
    hops only cost time: a third of a run's plan, mostly handing the interpreter lock back and
    forth (benchmarks/bench_plan.py)."""

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        future: Future[_T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:  # handed to the awaiting coroutine, as a thread would
            future.set_exception(err)
        return future


@contextmanager
def _inline_executor() -> Iterator[None]:
    """The event loop's default executor inline while a program runs, the one it had after."""
    loop = _ensure_event_loop()  # type: ignore[no-untyped-call]
    before = getattr(loop, "_default_executor", None)
    loop.set_default_executor(_Inline(max_workers=1))
    try:
        yield
    finally:
        loop._default_executor = before  # set_default_executor refuses None


@contextmanager
def _no_stack_traces() -> Iterator[None]:
    """Registrations without the SDK's stack trace while a program runs here. At every resource
    it walks the whole Python stack (traceback.extract_stack, then a file: URI per frame) to
    tell a real engine where in the program the resource was declared: a quarter of a plan's
    time. The mock monitor never reads it, nor does a plan record it; each registration gets
    the empty trace the SDK itself sends when it finds no constructor on the stack."""
    from pulumi.runtime import resource as sdk_resource
    from pulumi.runtime.proto import source_pb2

    before = sdk_resource._get_stack_trace
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        sdk_resource._get_stack_trace = before


@contextmanager
def mock_registrations() -> Iterator[None]:
    """While a program runs under Pulumi's mocks: each registration answered on the calling
    thread, without the SDK's stack trace (`_inline_executor`, `_no_stack_traces`). What the
    program registers, and in what order, is the same; it costs half the time."""
    with _inline_executor(), _no_stack_traces():
        yield


async def _resolve(outputs: Mapping[str, Any]) -> dict[str, Any]:
    resolved: dict[str, Any] = {}
    for key, value in outputs.items():
        out = pulumi.Output.from_input(value)
        if await out.is_secret():
            resolved[key] = SECRET
        elif not await out.is_known():
            resolved[key] = UNKNOWN
        else:
            resolved[key] = mask(await out.future(with_unknowns=True))
    return resolved


def run_program(
    program: Callable[[], Mapping[str, Any]],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: frozenset[str],
    reads: Mapping[str, dict[str, Any]] | None = None,
    invokes: Mapping[str, dict[str, Any]] | None = None,
) -> Plan:
    """Run ``program`` (which returns its stack outputs) as a preview and record the result.

    ``reads`` answers StackReferences by stack name (``{"outputs": ..., "secretOutputNames":
    ...}``); ``invokes`` answers provider functions by token. Exceptions from the program (a
    ``ConfigError``, say) propagate unchanged.
    """
    mocks = _Mocks(reads or {}, invokes or {})
    monitor = _RecordingMonitor(mocks)
    settings.ROOT.set(None)  # a fresh root stack resource named for this project and stack
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=True, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config), sorted(secret_keys))
    settings.SETTINGS.rpc_manager.clear()
    settings.SETTINGS.outputs.clear()
    plan = Plan(project=project, stack=stack)

    async def body() -> None:
        plan.outputs = await _resolve(program())

    with mock_registrations():
        _sync_await(run_pulumi_func(body))
    plan.resources = sorted(monitor.records, key=lambda r: (r.type, r.name))
    return plan

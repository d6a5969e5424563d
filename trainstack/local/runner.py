"""`trainstack run --local`: one run, start to end, on this machine.

load → localize bindings → record (registry) → sandbox → requirements → plan (contract) →
supervise (with live view and usage sampling) → commit outputs → record the end. Outputs are
committed however the run ends; the registry says how it ended.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType, MappingProxyType
from typing import TextIO

from trainstack.contract.layout import OUTPUT
from trainstack.errors import UserError
from trainstack.local import (
    drills,
    hostenv,
    jobplan,
    leftovers,
    logcap,
    podns,
    pyenv,
    sandbox,
    trainerjob,
)
from trainstack.local.bindings import bind_unbound_outputs, localize
from trainstack.local.console import LiveView
from trainstack.local.deadman import DeadmanSwitch
from trainstack.local.gpus import machine_gpus
from trainstack.local.memlimit import MemoryWatch
from trainstack.local.progress import ProgressLog
from trainstack.local.runrecord import RESERVE_BYTES, Observer, Reserve
from trainstack.local.sandbox import Committed, Layout
from trainstack.local.sandboxmode import DEFAULT as DEFAULT_SANDBOX
from trainstack.local.sandboxmode import Choice, SandboxMode, choose
from trainstack.local.supervisor import Outcome, Supervisor
from trainstack.local.usage import Sampler
from trainstack.local.usage import interval_from_env as usage_interval_from_env
from trainstack.registry import (
    NewRun,
    Registry,
    RegistryError,
    ReplicaExit,
    RunRecord,
    RunStatus,
    current_runner,
)
from trainstack.registry.home import venvs_root
from trainstack.spec import load_run
from trainstack.spec.model import Run
from trainstack.spec.overrides import Overrides
from trainstack.stopsignals import stop_on_signals
from trainstack.trainer import Operator


@dataclass(frozen=True)
class LocalRunRequest:
    spec: Path
    home: Path
    inputs: Mapping[str, Path] = field(default_factory=lambda: MappingProxyType({}))
    outputs: Mapping[str, Path] = field(default_factory=lambda: MappingProxyType({}))
    models: Mapping[str, Path] = field(default_factory=lambda: MappingProxyType({}))
    resume: str | None = None
    install: bool = True
    grace_seconds: float = 10.0
    usage_interval: float | None = None  # None: $TRAINSTACK_USAGE_SECONDS, else 1 s
    stream: TextIO | None = None  # where the live view writes; stdout by default
    preempt: tuple[drills.Preemption, ...] = ()  # --preempt: pods deleted during the run
    pass_env: tuple[str, ...] = ()  # --pass-env: the shell's variables the replicas also get
    # --sandbox: each replica a host of its own, or not; None: the default (sandboxmode.DEFAULT)
    sandbox: SandboxMode | None = None
    # --env: whose semantics the run follows (trainstack.local.trainerjob for Trainer's)
    operator: Operator = Operator.KUBEDL
    # -p NAME=VALUE: parameters set over the run file's (trainstack.spec.overrides)
    params: Overrides = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class LocalRunResult:
    record: RunRecord
    layout: Layout
    committed: tuple[Committed, ...]
    component_dir: Path | None = None  # where its README is (the summary's install hints)
    sandbox: Choice | None = None  # how the replicas were isolated, and why


def run_local(req: LocalRunRequest) -> LocalRunResult:
    with _terminate_as_interrupt():
        # The dead man's switch starts first, so that its interpreter starts while the run is
        # loaded, recorded and set up, and is up by the time replicas start (it is armed once
        # the run has an id); the supervisor disarms it when it is done, and we do if we fail
        # before handing it over.
        deadman = DeadmanSwitch(None, req.grace_seconds)
        try:
            return _run_local(req, deadman)
        finally:
            deadman.disarm()


def _run_local(req: LocalRunRequest, deadman: DeadmanSwitch) -> LocalRunResult:
    run = localize(load_run(req.spec, params=req.params), req.inputs, req.outputs, req.models)
    drills.check(req.preempt, trainerjob.replica_keys(run, req.operator))
    # Before anything is recorded or started; the values only ever reach the replicas' env.
    secrets = jobplan.secret_env_values(run)
    hostenv.passed_env(req.pass_env, os.environ)
    choice = choose(req.sandbox)
    with Registry.open(req.home) as reg:
        leftovers.reap(reg)
        resume, resumed_from = _resume_layout(reg, req.resume, run)
        record = reg.create(
            replace(_new_run(run, req.spec), resumed_from=resumed_from), current_runner()
        )
        assert record.run_dir is not None
        layout = Layout(record.run_dir)
        run = bind_unbound_outputs(run, layout.output_dir)
        try:
            deadman.arm(record.id, req.home, record.id, layout.root)
            outcome_record = _supervise(
                req, reg, record, run, layout, resume, deadman, secrets, choice
            )
        except BaseException as err:
            # Setup failed or the runner was interrupted before supervision: still commit what
            # exists and record the end, then let the error speak for itself.
            status = RunStatus.CANCELLED if isinstance(err, KeyboardInterrupt) else RunStatus.FAILED
            with contextlib.suppress(Exception):
                sandbox.commit_outputs(layout, run)
            full = logcap.disk_full(err)
            reason = _disk_full_reason(layout.root, err) if full else _reason(err)
            Reserve(layout.root).release()
            try:
                reg.finish(record.id, status, reason=reason)
            except RegistryError:
                if not full:
                    raise
            if full:
                raise UserError(
                    f"run {record.id} failed: {reason}",
                    hint=f"free space on the disk holding {req.home}",
                ) from None
            if isinstance(err, OSError):  # the run directory could not be made (a file in the way)
                from trainstack.outfile import why_not_written

                where = Path(err.filename) if isinstance(err.filename, str) else layout.root
                raise UserError(
                    f"run {record.id} failed before it started: {where}: "
                    f"{why_not_written(where, err)}",
                    hint=f"check that {layout.root} can be created, or point --home elsewhere",
                ) from None
            raise
        return outcome_record


def _supervise(
    req: LocalRunRequest,
    reg: Registry,
    record: RunRecord,
    run: Run,
    layout: Layout,
    resume: Layout | None,
    deadman: DeadmanSwitch,
    secrets: Mapping[str, str],
    choice: Choice,
) -> LocalRunResult:
    choice, pods = _job_namespaces(choice, req.sandbox, layout)
    try:
        return _supervise_in(req, reg, record, run, layout, resume, deadman, secrets, choice, pods)
    finally:
        if pods is not None:
            pods.close()


def _job_namespaces(
    choice: Choice, requested: SandboxMode | None, layout: Layout
) -> tuple[Choice, podns.JobNamespaces | None]:
    """The job's namespaces when the run is to have them. The probe cannot try everything the
    job's holder does (a tmpfs, a new root): where that fails, `auto` still falls back."""
    if choice.mode is not SandboxMode.NAMESPACES:
        return choice, None
    try:
        return choice, podns.JobNamespaces(layout)
    except OSError as err:
        if (requested or DEFAULT_SANDBOX) is not SandboxMode.AUTO:
            raise UserError(
                f"--sandbox namespaces: {err}", hint="run with --sandbox processes"
            ) from None
        return Choice(SandboxMode.PROCESSES, f"namespaces unavailable: {err}", fallback=True), None


def _supervise_in(
    req: LocalRunRequest,
    reg: Registry,
    record: RunRecord,
    run: Run,
    layout: Layout,
    resume: Layout | None,
    deadman: DeadmanSwitch,
    secrets: Mapping[str, str],
    choice: Choice,
    pods: podns.JobNamespaces | None,
) -> LocalRunResult:
    limits = logcap.LogLimits.from_env()
    interval = req.usage_interval or usage_interval_from_env()
    reserve = Reserve(layout.root)
    plan = _prepare(req, record.id, run, layout, resume, deadman, secrets, reserve, pods)
    clock = ProgressLog(layout, [launch.log_path for launch in plan.launches])
    sampler = Sampler(layout.usage, plan.gpus.by_replica, interval=interval, tick=clock.tick)
    view = LiveView(
        {launch.key: launch.log_path for launch in plan.launches},
        stream=req.stream,
        usage=sampler.latest,
    )
    observer = Observer(
        reg,
        record.id,
        view,
        sampler,
        [(launch.role, launch.index) for launch in plan.launches],
        plan.policy.max_restarts,
        reserve,
    )
    rotator = logcap.Rotator(
        [launch.log_path for launch in plan.launches], limits, view.event, root=layout.root
    )
    supervisor = Supervisor(
        plan.launches,
        plan.policy,
        observer,
        deadman=deadman,
        tag=record.id,
        memory=MemoryWatch(plan.limits),
    )
    _announce(view, record.id, run, plan, layout, req.preempt)
    if choice.fallback:
        view.event(f"sandbox: {choice.describe()}")
    reg.mark_running(
        record.id, [ReplicaExit(launch.role, launch.index, None) for launch in plan.launches]
    )
    outcome = _watch(supervisor, drills.Drill(supervisor, req.preempt), sampler, rotator, view)
    committed, status, reason = _commit(layout, run, outcome.status, outcome.reason)
    if status is RunStatus.FAILED and (observer.disk_full or _nearly_full(layout.root)):
        reason = "; ".join(x for x in (reason, _disk_full_reason(layout.root, None)) if x)
    reserve.release()
    _summarize(layout.root)
    final = _record_end(
        reg,
        record.id,
        status,
        exits=outcome.exits,
        # every restart, counted against maxRestarts or not (the recovery history lists them)
        restarts=max(outcome.restarts, len(supervisor.history)),
        reason=reason or None,
    )
    _registry_changes(reg, view)
    source = run.component.source
    return LocalRunResult(final, layout, committed, source.parent if source else None, choice)


def _prepare(
    req: LocalRunRequest,
    run_id: str,
    run: Run,
    layout: Layout,
    resume: Layout | None,
    deadman: DeadmanSwitch,
    secrets: Mapping[str, str],
    reserve: Reserve,
    pods: podns.JobNamespaces | None,
) -> jobplan.JobPlan:
    """The run directory (the reserve taken in it), the requirements' venv, and the job's plan
    with its config files written."""
    sandbox.prepare(layout, run, resume_from=resume)
    reserve.take()
    sandbox.save_commit_targets(layout, run)
    deadman.commit_targets(sandbox.commit_targets(run))
    venv = None
    requirements = pyenv.requirements_file(layout.usercode) if req.install else None
    if requirements is not None:
        venv = pyenv.ensure_env(requirements, venvs_root(req.home), layout.logs / "install.log")
    plan = jobplan.plan_job(
        run,
        layout,
        run_id=run_id,
        venv=venv,
        grace_seconds=req.grace_seconds,
        available_gpus=machine_gpus() if run.uses_gpu else (),
        secret_env=secrets,
        passed_env=hostenv.passed_env(req.pass_env, os.environ),
        pods=pods,
        operator=req.operator,
    )
    for name, content in plan.config.items():
        (layout.config / name).write_text(content, encoding="utf-8")
    if plan.hosts is not None:
        layout.hosts.write_text(plan.hosts, encoding="utf-8")
    if plan.resolv is not None:
        layout.resolv.write_text(plan.resolv, encoding="utf-8")
    return plan


def _announce(
    view: LiveView,
    run_id: str,
    run: Run,
    plan: jobplan.JobPlan,
    layout: Layout,
    preempt: Sequence[drills.Preemption],
) -> None:
    keys = [launch.key for launch in plan.launches]
    view.event(
        f"run {run_id}: {run.component.ref} ({run.job_type}), "
        f"{len(keys)} replica(s): {', '.join(keys)}"
    )
    view.event(f"run directory {layout.root}")
    if plan.gpus.note:
        view.event(plan.gpus.note)
    for p in preempt:
        view.event(f"preemption drill: {p.key}'s pod is deleted {p.seconds:g}s after the start")


def _watch(
    supervisor: Supervisor,
    drill: drills.Drill,
    sampler: Sampler,
    rotator: logcap.Rotator,
    view: LiveView,
) -> Outcome:
    """The replicas supervised to their end, with the threads that watch them (usage samples,
    log rotation, the terminal, a preemption drill) running meanwhile and always stopped."""
    sampler.start()
    rotator.start()
    view.start()
    drill.start()
    try:
        with stop_on_signals(supervisor.request_stop):
            return supervisor.run()
    finally:
        drill.stop()
        sampler.stop()
        rotator.stop()
        view.stop()


def _summarize(root: Path) -> None:
    """Keep the ended run's metric summary (trainstack.metrics.summary) beside it: listings
    read it instead of every point. A run whose metrics cannot be read simply has none; the
    readers compute it then, and say what is wrong with the files."""
    from trainstack.contract.rundir import RunDir

    metrics = RunDir(root).metrics
    try:
        wrote = any(p.is_file() for p in metrics.rglob("*"))
    except OSError:
        return
    if not wrote:  # nothing to summarize: and a run without metrics never imports numpy
        return
    from trainstack.metrics import summary

    with contextlib.suppress(OSError, ValueError, UserError):
        summary.write(root)


def _commit(
    layout: Layout, run: Run, status: RunStatus, reason: str
) -> tuple[tuple[Committed, ...], RunStatus, str]:
    """The outputs committed to their targets; a run whose outputs could not be committed
    failed, and its reason says why and where they still are."""
    try:
        return tuple(sandbox.commit_outputs(layout, run)), status, reason
    except OSError as err:
        # A full disk, or a target that cannot be written (a read-only or missing place, a file
        # where a folder belongs): the run ended, its outputs are still in the run directory.
        if logcap.disk_full(err):
            why = str(err)
        else:
            where = f"{err.filename}: " if err.filename else ""
            why = f"{where}{err.strerror or err}; they are in {layout.root / OUTPUT}"
        return (
            (),
            RunStatus.FAILED,
            "; ".join(x for x in (reason, f"outputs not committed: {why}") if x),
        )


def _registry_changes(reg: Registry, view: LiveView) -> None:
    """What happened to the registry file while the run went on, said at its end."""
    if reg.damage is not None:
        view.event(
            f"{reg.damage}: something replaced it during the run, and trainstack writes "
            "nothing into that. This run's end was recorded in the registry file the run had "
            "opened (moved aside, it is still there)"
        )
    if reg.recreated:
        view.event(
            f"the run registry {reg.path} was deleted during the run: recreated it and "
            "recorded this run in it again (earlier runs' records are gone)"
        )


def _record_end(
    reg: Registry,
    run_id: str,
    status: RunStatus,
    *,
    exits: Iterable[ReplicaExit],
    restarts: int,
    reason: str | None,
) -> RunRecord:
    try:
        return reg.finish(run_id, status, exits=exits, restarts=restarts, reason=reason)
    except RegistryError as err:
        raise UserError(
            f"run {run_id} ended ({status}: {reason or 'no reason'}) but could not "
            f"be recorded: {err.message}",
            hint=err.hint,
        ) from None


def _nearly_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path).free < RESERVE_BYTES
    except OSError:
        return False


def _disk_full_reason(path: Path, err: BaseException | None) -> str:
    told = f" ({err})" if err is not None else ""
    return f"the disk holding {path} ran out of space{told}"


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Before and after supervision, SIGTERM ends the runner the way Ctrl-C does, so the run is
    still recorded (as cancelled) rather than left for the dead-runner check."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _resume_layout(reg: Registry, ref: str | None, run: Run) -> tuple[Layout | None, str | None]:
    """The run directory `--resume` takes checkpoints from, and that run's id (the lineage the
    new run records); a run of another component is refused: its checkpoints are another
    model's."""
    if ref is None:
        return None, None
    earlier = reg.resolve(ref)
    if earlier.component != run.component.name:
        raise UserError(
            f"--resume {ref}: run {earlier.id} is of component {earlier.component!r}, this run of "
            f"{run.component.name!r}: its checkpoints are another model's",
            hint=f"resume from a run of {run.component.name} (`trainstack runs list` shows "
            "each run's component)",
        )
    if earlier.run_dir is None:
        raise UserError(
            f"run {earlier.id} ran on a cluster; --resume takes a local run",
            hint="bind the checkpoint output to a local copy with --output instead",
        )
    if not earlier.run_dir.is_dir():
        # Resuming from nothing would silently start over: the user asked for its checkpoints.
        raise UserError(
            f"--resume {ref}: the run directory of run {earlier.id} ({earlier.run_dir}) no "
            "longer exists, so there is nothing to resume from",
            hint="run without --resume to start over",
        )
    return Layout(earlier.run_dir), earlier.id


def _new_run(run: Run, spec: Path) -> NewRun:
    return NewRun(
        name=run.name,
        component=run.component.name,
        component_version=run.component.version,
        job_type=run.job_type.value,
        experiment=run.experiment,
        tags=MappingProxyType(dict(run.tags)),
        spec_path=str(spec.resolve()),
        # where each bound output is committed (unbound ones stay in the run directory)
        outputs={
            name: f"file://{b.path}" if b.scheme == "file" else b.uri
            for name, b in run.outputs.items()
        },
        parameters=MappingProxyType(dict(run.parameters)),
    )


def _reason(err: BaseException) -> str:
    if isinstance(err, KeyboardInterrupt):
        return "interrupted before the replicas started"
    if isinstance(err, UserError):
        return err.message
    if isinstance(err, OSError) and err.strerror:
        return f"{err.filename}: {err.strerror}" if err.filename else err.strerror
    return f"{type(err).__name__}: {err}"

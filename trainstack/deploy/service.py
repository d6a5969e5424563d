"""``trainstack deploy | status | wait | logs | destroy``: one Pulumi stack per run.

deploy: select (or init) the run's stack, ``up --refresh`` the run program with this deploy's
config, tag the stack from its newest update (deploy/stacktags.py), record the run (run registry
+ stack index). status: the stack's last update and outputs, and (``live``) the job on the
cluster. wait/logs: the job's end, its pods' logs. destroy: ``destroy --run-program`` the stack,
remove it, drop it from the index. Pulumi is imported only in here and in the modules it calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack import platformnames as names
from trainstack.deploy import backendindex
from trainstack.deploy.clierrors import DeployFailedError as DeployFailedError
from trainstack.deploy.clierrors import cli_errors
from trainstack.deploy.earlier import finished_and_gone, previous_entry, refuse_other_team
from trainstack.deploy.index import RUN_FILE_KEY, TAG, RunIndex, StackEntry, run_tags
from trainstack.deploy.jobstate import JobState

# Re-exported: the verbs reach a deployed run through this service.
from trainstack.deploy.lookup import Located as Located
from trainstack.deploy.lookup import deployed as deployed
from trainstack.deploy.lookup import locate as locate
from trainstack.deploy.records import (
    record_end,
    record_log_place,
    record_pending,
    record_running,
)
from trainstack.deploy.settings import (
    DeploySettings,
    legacy_run_stack_name,
    load_settings,
    platform_stack_name,
    run_stack_name,
)
from trainstack.deploy.stacktags import config_file, deploy_config, name_tags, settle_tags
from trainstack.deploy.upgrades import held_back
from trainstack.errors import NotFoundError
from trainstack.spec.overrides import Overrides

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.spec.model import Run

OnOutput = Callable[[str], None]


@dataclass(frozen=True)
class StackStatus:
    entry: StackEntry
    last_kind: str | None
    last_result: str | None
    last_end: str | None
    outputs: dict[str, Any]  # secret outputs shown as "[secret]"


def deploy(
    run_file: Path,
    env: str,
    *,
    command: auto.PulumiCommand | None = None,
    home: Path | None = None,
    backend: str | None = None,
    on_output: OnOutput | None = None,
    rerun: bool = False,
    project: Path | None = None,
    upgrade: bool = False,
    on_notice: OnOutput | None = None,
    look_for_moved: bool = True,
    params: Overrides | None = None,
) -> StackEntry:
    """Render ``run_file`` for the platform of ``env`` and bring its stack up to date.
    ``project``: where the platform project is looked for (envfile.find_project); deploy reads
    the platform's live outputs, so it may run without one (no template overrides, the
    policies' default settings). ``on_notice`` gets what the user must read even when the
    progress is not streamed: the stacks this run left under another name or team
    (``deploy.moved``; not looked for when not ``look_for_moved``: a sweep's trials, each a run
    of its own by design)."""
    from trainstack.deploy.platform import read_source_outputs
    from trainstack.deploy.workspace import find_pulumi
    from trainstack.infra.run.rendered import placed
    from trainstack.render.overrides import for_project
    from trainstack.spec import load_run

    cli = command or find_pulumi()  # before anything else: without the CLI nothing can happen
    run = load_run(run_file, params=params or {})
    settings = load_settings(home, backend)
    # The team's secrets scope when published (deploy/scope.py), else the platform stack.
    platform, source = read_source_outputs(settings, env, run.tags.get(names.TEAM_TAG), cli)
    root = _project_root(project)
    templates = for_project(root) if root is not None else None
    if templates is not None and on_output is not None:
        on_output(templates.summary())
    completed, manifests, logs = placed(run, platform, env, templates)
    from trainstack.infra.run.options import PlatformOutputs
    from trainstack.render.trainjob import not_carried

    for note in not_carried(PlatformOutputs.read(platform, env).operator, completed):
        (on_notice or on_output or _no_output)(f"note: {note}")
    from functools import partial

    from trainstack.deploy.podrecords import stored
    from trainstack.policy.check import check_manifests, enforce
    from trainstack.policy.report import text

    # the team's spending counts its deployed runs priced from the stores OSS credentials reach
    stores = partial(stored, mount=None)
    report = check_manifests(manifests, env, str(run_file), platform, project, stores)
    enforce(report)  # a mandatory violation: stop before any stack or resource exists
    if report.violations and on_output is not None:
        on_output("policy: " + text([report]))
    from trainstack.deploy import moved

    origin = moved.file_tag(run_file, root)
    namespace = str(_job_coordinates(manifests)["namespace"])
    left = moved.look(settings, cli, completed, env, namespace, origin) if look_for_moved else []
    entry = deploy_run(
        completed,
        manifests,
        env,
        command=cli,
        home=home,
        backend=backend,
        on_output=on_output,
        rerun=rerun,
        source=source,
        logs=logs,
        upgrade=upgrade,
        run_file=origin,
        on_notice=on_notice,
    )
    for line in left:  # once this run is deployed: the old stack is what it replaced
        (on_notice or on_output or _no_output)(line)
    return entry


def _project_root(start: Path | None) -> Path | None:
    """The platform project's folder, as plan finds it; None when none is named and none is
    found (deploy runs from the platform's outputs alone, as the policies' settings do:
    policy/check.py). A project named (`--project`, $TRAINSTACK_PROJECT) must exist."""
    from trainstack.envfile import find_project

    try:
        return find_project(start).root
    except NotFoundError:
        if start is not None:
            raise
        return None


SOURCE_OUTPUT = "platformStack"


def deploy_run(
    run: Run,
    manifests: Sequence[Mapping[str, Any]],
    env: str,
    *,
    command: auto.PulumiCommand,
    home: Path | None = None,
    backend: str | None = None,
    on_output: OnOutput | None = None,
    rerun: bool = False,
    source: str | None = None,
    logs: Mapping[str, str] | None = None,
    upgrade: bool = False,
    run_file: str | None = None,
    on_notice: OnOutput | None = None,
) -> StackEntry:
    """Bring the run's stack up to date: refresh (what the cluster really has), then update.
    ``source`` is the stack its StackReference reads (the team's scope or the platform stack;
    default the platform stack); ``run_file``: the stack's tag ``file`` (``deploy.moved``).

    The job is resubmitted only when the run's identity changed (what its user wrote:
    ``infra.run.identity``), or on ``rerun``; then the run gets a new registry record and the
    previous one ends as superseded. An unchanged run keeps its job and its record; when only
    what trainstack renders for it changed (its metadata, or trainstack itself), nothing is
    deployed unless ``upgrade`` (``deploy.earlier.held_back``).
    """
    import secrets

    from trainstack.infra.run.identity import run_identity
    from trainstack.infra.run.program import build_run, manifest_hash

    settings = load_settings(home, backend)
    platform = source or platform_stack_name(env)
    token = secrets.token_hex(4) if rerun else ""
    digest = manifest_hash(manifests, token)

    def program() -> None:
        import pulumi

        for key, value in {**build_run(run, manifests, platform, token), **(logs or {})}.items():
            pulumi.export(key, value)

    coordinates = {**_job_coordinates(manifests), **(logs or {}), SOURCE_OUTPUT: platform}
    coordinates.update({RUN_FILE_KEY: run_file} if run_file else {})
    namespace = str(coordinates["namespace"])
    identity = run_identity(run, namespace, token)
    stack_name = run_stack_name(env, namespace, run.name)
    with cli_errors(f"deploying {run.name} ({stack_name})", settings, stack_name):
        stack = _team_stack(settings, env, namespace, run.name, program, command, on_output)
        stack_name = stack.name
        previous = previous_entry(settings, stack)
        refuse_other_team(stack_name, previous, namespace, run.tags.get("team"))
        again = f"trainstack deploy {run.source or run.name} --env {env} --upgrade"
        held = held_back(previous, identity, digest, upgrade=upgrade, command=again)
        if held is not None and previous is not None:
            (on_notice or on_output or _no_output)(held)
            RunIndex(settings.home).put(previous)
            return previous
        same_job = previous is not None and previous.spec_hash == digest
        if same_job and previous is not None:
            kept = replace(previous, env=env, outputs={**previous.outputs, **coordinates})
            gone = finished_and_gone(settings, kept, command)
            if gone is not None:
                (on_notice or on_output or _no_output)(gone)
                RunIndex(settings.home).put(kept)
                return kept
        tags = run_tags(run, env, {**coordinates, "specHash": digest, "identity": identity})
        if previous is None:
            _tag(stack, name_tags(tags))
        registry_id = (
            previous.registry_id
            if same_job and previous is not None
            else record_pending(settings, run, stack_name)
        )
        # The config travels with this deploy's own update, and the tags are written only after
        # it, from the newest update's: a deploy racing this one cannot mix its values in (and
        # a failed up leaves the digest as it was, so the same run is retried as new).
        with config_file(stack, deploy_config(tags, platform)) as config:
            result = _up(
                stack, settings, registry_id, config, same_job=same_job, on_output=on_output
            )
        settle_tags(stack)
        tags = dict(stack.workspace.list_tags(stack.name))
    backendindex.publish(settings, command, stack_name, tags, on_output)
    outputs = {k: "[secret]" if v.secret else v.value for k, v in result.outputs.items()}
    if not same_job and registry_id is not None:
        record_running(settings, registry_id)
    record_log_place(settings, registry_id, outputs)
    # what this deploy rendered wins; and the stack its StackReference reads, so that status,
    # logs and destroy read the same one (the team's scope or the platform)
    entry = replace(
        _entry(run, env, stack_name, settings, registry_id, {**outputs, **coordinates}, digest),
        identity=identity,
    )
    if previous is not None and not same_job:  # the job was replaced: its record ends here
        record_end(
            settings, previous.registry_id, failed=False, reason="superseded by a new deploy"
        )
    RunIndex(settings.home).put(entry)
    return entry


def _job_coordinates(manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Where the run's job is on the cluster, as the stack's outputs name it."""
    job = next(m for m in manifests if str(m.get("kind", "")).endswith("Job"))
    return {
        "jobName": job["metadata"]["name"],
        "kind": job["kind"],
        "apiVersion": job["apiVersion"],
        "namespace": job["metadata"].get("namespace", "default"),
    }


def _up(
    stack: auto.Stack,
    settings: DeploySettings,
    registry_id: str | None,
    config: str,
    *,
    same_job: bool,
    on_output: OnOutput | None,
) -> auto.UpResult:
    """`pulumi up`, refreshing first (the job may have finished or been deleted since the last
    deploy); a new job whose up failed ends its registry record as failed."""
    try:
        result = stack.up(on_output=on_output, show_secrets=False, refresh=True, config_file=config)
    except Exception:
        if not same_job:
            record_end(settings, registry_id, failed=True, reason="pulumi up failed")
        raise
    if same_job and on_output is not None:
        on_output("the run is unchanged: its job was left as it is (--rerun submits it again)")
    return result


def _entry(
    run: Run,
    env: str,
    stack_name: str,
    settings: DeploySettings,
    registry_id: str | None,
    outputs: dict[str, Any],
    digest: str,
) -> StackEntry:
    return StackEntry(
        run=run.name,
        env=env,
        stack=stack_name,
        project=names.RUNS_PROJECT,
        backend=settings.backend_url,
        component=run.component.name,
        version=run.component.version,
        experiment=run.experiment,
        spec_path=str(run.source) if run.source else None,
        registry_id=registry_id,
        updated_at=time.time(),
        outputs=outputs,
        spec_hash=digest,
        team=run.tags.get("team"),
    )


def _team_stack(
    settings: DeploySettings,
    env: str,
    namespace: str,
    run: str,
    program: Callable[[], None],
    command: auto.PulumiCommand,
    on_output: OnOutput | None,
) -> auto.Stack:
    """The run's stack ``<env>.<namespace>.<run>``; else one named the old way (``<env>.<run>``)
    whose tags say it holds this namespace's run (it keeps its name: renaming a stack another
    user's index or CI still names would lose it); else a new one."""
    name = run_stack_name(env, namespace, run)
    with suppress(NotFoundError):
        return _open(settings, name, program, command, create=False)
    legacy = legacy_run_stack_name(env, run)
    try:
        old = _open(settings, legacy, program, command, create=False)
    except NotFoundError:
        old = None
    if old is not None and old.workspace.list_tags(legacy).get(f"{TAG}namespace") == namespace:
        if on_output is not None:
            on_output(
                f"deploying onto stack {legacy}, named before stacks carried the team "
                f"(new runs get {name}; docs/deploy.md)"
            )
        return old
    return _open(settings, name, program, command, create=True, new=True)


def _no_output(line: str) -> None:
    """Where a deploy's notices go when no one listens (``--quiet``)."""


def status(
    run: str,
    env: str | None = None,
    *,
    team: str | None = None,
    command: auto.PulumiCommand | None = None,
    home: Path | None = None,
    backend: str | None = None,
) -> StackStatus:
    return stack_status(locate(run, env, team=team, command=command, home=home, backend=backend))


def stack_status(found: Located) -> StackStatus:
    """The run stack's last update and outputs (secret outputs masked)."""
    entry, settings = found.entry, found.settings
    with cli_errors(f"reading the stack of {entry.run} ({entry.stack})", settings, entry.stack):
        stack = _open(settings, entry.stack, _no_program, found.command, create=False)
        info = stack.info(show_secrets=False)
        outputs = {k: "[secret]" if v.secret else v.value for k, v in stack.outputs().items()}
    return StackStatus(
        entry=entry,
        last_kind=info.kind if info else None,
        last_result=info.result if info else None,
        last_end=info.end_time.isoformat() if info and info.end_time else None,
        outputs=outputs,
    )


def live(found: Located, *, record: bool = True) -> JobState:
    """The job's state on the cluster now; recorded in the registry unless not `record` (the
    console only reads)."""
    from trainstack.deploy import watch

    with cli_errors(f"reading the platform of {found.entry.env}", found.settings, ""):
        cluster = watch.connect(found.entry, found.settings, found.command)
    state = watch.read_state(cluster, watch.JobRef.of(found.entry))
    if record:
        watch.record(found.settings, found.entry, state)
    return state


def wait(
    found: Located,
    *,
    timeout: float | None,
    interval: float = 10.0,
    on_change: Callable[[JobState], None] | None = None,
    on_poll: Callable[[JobState], None] | None = None,
) -> JobState:
    """Block until the job ends; the registry gets its outcome."""
    from trainstack.deploy import watch

    with cli_errors(f"reading the platform of {found.entry.env}", found.settings, ""):
        cluster = watch.connect(found.entry, found.settings, found.command)
    state = watch.wait(
        cluster,
        watch.JobRef.of(found.entry),
        timeout=timeout,
        interval=interval,
        on_change=on_change,
        on_poll=on_poll,
    )
    watch.record(found.settings, found.entry, state)
    return state


def destroy(
    run: str,
    env: str | None = None,
    *,
    team: str | None = None,
    command: auto.PulumiCommand | None = None,
    home: Path | None = None,
    backend: str | None = None,
    on_output: OnOutput | None = None,
) -> StackEntry:
    """Delete everything the run's stack created, then the stack, then its index entry.

    The program runs (``--run-program``) and builds only the Kubernetes provider from the
    platform stack's *current* outputs, so a destroy after the cluster's credentials were
    rotated deletes with the new ones, not with those stored in the run stack's state.
    """
    found = locate(run, env, team=team, command=command, home=home, backend=backend)
    entry, settings = found.entry, found.settings
    from trainstack.deploy.platform import checked_source

    platform = checked_source(settings, entry, found.command)
    namespace = str(entry.outputs.get("namespace") or "default")

    def provider_only() -> None:
        from trainstack.infra.run.program import cluster_provider

        cluster_provider(platform, namespace)

    with cli_errors(f"destroying {run} ({entry.stack})", settings, entry.stack):
        try:
            stack = _open(settings, entry.stack, provider_only, found.command, create=False)
        except NotFoundError as gone:  # e.g. a teammate destroyed it: forget it here too
            record_end(settings, entry.registry_id, failed=False, reason="stack removed")
            RunIndex(settings.home).remove(entry)
            backendindex.publish(settings, found.command, entry.stack, None, on_output)
            raise NotFoundError(gone.message, hint="it is no longer listed here") from None
        stack.destroy(on_output=on_output, show_secrets=False, remove=True, run_program=True)
    backendindex.publish(settings, found.command, entry.stack, None, on_output)
    # The index entry goes; the record keeps where the logs are (a run deployed before records
    # held it gets it here).
    record_log_place(settings, entry.registry_id, entry.outputs)
    record_end(settings, entry.registry_id, failed=False, reason="destroyed")
    RunIndex(settings.home).remove(entry)
    return entry


def _no_program() -> None:
    """destroy and status never run the program; the Automation API still wants one."""


def _open(
    settings: DeploySettings,
    stack_name: str,
    program: Callable[[], None],
    command: auto.PulumiCommand,
    *,
    create: bool,
    new: bool = False,
) -> auto.Stack:
    from pulumi.automation.errors import StackNotFoundError

    from trainstack.deploy.workspace import open_stack

    try:
        return open_stack(settings, stack_name, program, command, create=create, new=new)
    except StackNotFoundError:
        raise NotFoundError(
            f"stack {stack_name!r} does not exist in {settings.backend_url}",
            hint="it was removed outside trainstack; deploy the run again",
        ) from None


def _tag(stack: auto.Stack, tags: Mapping[str, str]) -> None:
    for key, value in tags.items():
        stack.workspace.set_tag(stack.name, key, value)

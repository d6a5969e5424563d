"""``trainstack plan``: the platform program or a run program, run offline under mocks.

Pulumi is imported inside these functions so that verbs which never plan do not pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack.envfile import SECRET_PLACEHOLDER, Project, find_project, read_env

if TYPE_CHECKING:
    from trainstack.plan.engine import Plan
    from trainstack.spec.model import Run
    from trainstack.spec.overrides import Overrides
    from trainstack.trainer.backend import Operator


def plan_platform(env: str, start: Path | None = None) -> Plan:
    """What ``pulumi up --stack ENV`` of the platform project would create."""
    from trainstack.infra.platform.program import build, load_stack_config
    from trainstack.plan.engine import run_program

    project = find_project(start)
    config = read_env(project, env)

    pending: list[str] = []

    def program() -> dict[str, Any]:
        # offline: a new environment's set-up steps (secrets to set, CRDs to mirror, ...) are
        # listed in the plan instead of failing it; `pulumi up` refuses until they are done.
        cfg = load_stack_config(offline=True, root=project.root)
        pending.extend(cfg.pending)
        return build(cfg)

    plan = run_program(
        program,
        project=project.name,
        stack=env,
        config=config.values,
        secret_keys=config.secret_keys,
    )
    plan.pending = pending
    return plan


def plan_run(
    run_file: Path, env: str, start: Path | None = None, *, params: Overrides | None = None
) -> Plan:
    """What ``trainstack deploy RUN_FILE --env ENV`` would create: the run's own stack.

    The platform stack is answered by the platform's own offline plan for ENV, so the run is
    planned against the namespaces, classes and secrets that environment would really have.
    """
    from trainstack import platformnames as names
    from trainstack.infra.run.identity import run_identity
    from trainstack.infra.run.program import build_run, is_job
    from trainstack.infra.run.rendered import for_platform
    from trainstack.plan.engine import run_program
    from trainstack.platformnames import platform_stack_name, run_stack_name
    from trainstack.render.overrides import for_project
    from trainstack.spec import load_run

    project = find_project(start)
    run = load_run(run_file, params=params or {})
    ref = platform_stack_name(env)
    outputs, secret = platform_outputs(project, env)
    notes = check_operator(project, env, run, outputs)
    templates = for_project(project.root)
    completed, manifests = for_platform(run, outputs, env, templates)
    job: dict[str, Any] = next((m for m in manifests if is_job(m)), {"metadata": {}})
    namespace = str(job["metadata"].get("namespace") or "default")
    ns = names.RUNS_PROJECT
    config = {f"{ns}:env": env, f"{ns}:run": run.name, f"{ns}:platformStack": ref}

    def program() -> dict[str, Any]:
        return build_run(run, manifests, ref)

    plan = run_program(
        program,
        project=names.RUNS_PROJECT,
        stack=run_stack_name(env, namespace, run.name),
        config=config,
        secret_keys=frozenset(),
        reads={ref: {"name": ref, "outputs": outputs, "secretOutputNames": secret}},
    )
    plan.templates = templates
    plan.identity = run_identity(completed, namespace)
    plan.notes = notes
    plan.component = run.component.name
    return plan


def platform_outputs(project: Project, env: str) -> tuple[dict[str, Any], list[str]]:
    """The platform's outputs for ENV as a StackReference would return them (secret ones as the
    placeholder) and the names of the secret ones: from the platform's offline plan, kept in
    this process and across processes while its inputs stay the same (``platformcache``)."""
    from trainstack.plan import platformcache

    def plan() -> platformcache.Planned:
        from trainstack.plan.engine import SECRET

        with platformcache.logged_records() as logged:
            planned = plan_platform(env, project.root).outputs
        secret = sorted(k for k, v in planned.items() if v == SECRET)
        outputs = {k: SECRET_PLACEHOLDER if k in secret else v for k, v in planned.items()}
        return platformcache.Planned(outputs, secret, logged)

    found = platformcache.platform_outputs(project, env, plan)
    return found.outputs, found.secret


def check_operator(project: Project, env: str, run: Run, outputs: dict[str, Any]) -> list[str]:
    """Refuse a run whose job type the environment's operator cannot run (a TensorFlow job on
    Kubeflow Trainer), naming the project's environments that can; else what the operator does
    otherwise than the run asks (trainstack.render.trainjob.not_carried). What a TrainJob cannot
    say of a run Trainer can run is the renderer's refusal (render/trainjob.py)."""
    from trainstack.infra.run.options import PlatformOutputs
    from trainstack.render.trainjob import not_carried
    from trainstack.trainer.backend import Operator, check_runs, runs

    operator = PlatformOutputs.read(outputs, env).operator
    job_type = run.component.job_type
    if not runs(operator, job_type):
        check_runs(operator, job_type, env, environments_of(project, Operator.KUBEDL))
    return not_carried(operator, run)


def environment_operator(project: Project, env: str) -> Operator:
    """The operator an environment's `Pulumi.<env>.yaml` names (`trainstack:operator`, KubeDL
    when unset); a bad value is one ConfigError naming the file, the key and the values."""
    from trainstack import platformnames as names
    from trainstack.trainer.backend import OPERATOR_KEY, parse_operator

    config = read_env(project, env)
    key = f"{names.PLATFORM_PROJECT}:{OPERATOR_KEY}"
    return parse_operator(config.values.get(key), source=config.source, key=key)


def environments_of(project: Project, operator: object) -> list[str]:
    """The project's environments whose `trainstack:operator` is `operator`; one whose file
    cannot be read is left out (its own plan says what is wrong with it)."""
    from trainstack.errors import UserError

    found = []
    for env in project.environments():
        try:
            chosen = environment_operator(project, env)
        except UserError:
            continue
        if chosen == operator:
            found.append(env)
    return found

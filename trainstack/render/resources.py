"""Render a run's resources to Kubernetes objects (dicts), in `kubectl apply` order."""

from __future__ import annotations

from typing import Any

from trainstack.render.context import Resources, build
from trainstack.render.engine import render
from trainstack.render.options import RenderOptions
from trainstack.render.overrides import Overrides
from trainstack.spec.model import Run


def render_resources(res: Resources, templates: Overrides | None = None) -> list[dict[str, Any]]:
    def one(template: str, **context: Any) -> dict[str, Any]:
        return render(template, context, templates)

    docs = [one("persistentvolume.yaml.j2", pv=pv) for pv in res.volumes]
    docs += [one("persistentvolumeclaim.yaml.j2", claim=c) for c in res.claims]
    docs += [one("configmap.yaml.j2", cm=cm) for cm in res.config_maps]
    for access in res.access:
        if access.account_meta is not None:
            docs.append(one("serviceaccount.yaml.j2", access=access))
        docs += [one("role.yaml.j2", access=access), one("rolebinding.yaml.j2", access=access)]
    if res.runtime is not None:  # the TrainJob names it: created first
        docs.append(one(res.runtime.template, rt=res.runtime))
    docs.append(one(res.job.template, job=res.job))
    return docs


def render_run(
    run: Run, *, options: RenderOptions | None = None, templates: Overrides | None = None
) -> list[dict[str, Any]]:
    """The run's manifests: PersistentVolumes, claims, ConfigMaps, RBAC, then the job.
    Deterministic: the same run, options and templates give equal objects, in the same order.
    `templates`: a platform project's overrides (render/overrides.py), found before the
    packaged templates."""
    return render_resources(build(run, options or RenderOptions()), templates)

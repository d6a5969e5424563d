"""Render a run's resources to Kubernetes objects (dicts), in `kubectl apply` order."""

from __future__ import annotations

from typing import Any

from trainstack.render.context import Resources, build
from trainstack.render.engine import render
from trainstack.render.options import RenderOptions
from trainstack.spec.model import Run


def render_resources(res: Resources) -> list[dict[str, Any]]:
    docs = [render("persistentvolume.yaml.j2", pv=pv) for pv in res.volumes]
    docs += [render("persistentvolumeclaim.yaml.j2", claim=c) for c in res.claims]
    docs += [render("configmap.yaml.j2", cm=cm) for cm in res.config_maps]
    for access in res.access:
        if access.account_meta is not None:
            docs.append(render("serviceaccount.yaml.j2", access=access))
        docs += [
            render("role.yaml.j2", access=access),
            render("rolebinding.yaml.j2", access=access),
        ]
    docs.append(render(res.job.kind.template, job=res.job))
    return docs


def render_run(run: Run, *, options: RenderOptions | None = None) -> list[dict[str, Any]]:
    """The run's manifests: PersistentVolumes, claims, ConfigMaps, RBAC, then the job.
    Deterministic: the same run and options give equal objects, in the same order."""
    return render_resources(build(run, options or RenderOptions()))

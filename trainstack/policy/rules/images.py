"""allowed-registries: images only from the platform's registry (or listed ones), never Docker
Hub, never a moving ``:latest`` tag."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.policy.model import Context, Finding, Level, Resource, Rule
from trainstack.policy.pods import containers, pod_templates

DOCKER_HUB = ("docker.io", "index.docker.io", "registry-1.docker.io")


def image_host(image: str) -> str:
    """The registry host of an image reference; Docker Hub's when the reference names none."""
    first, sep, _ = image.partition("/")
    if not sep or ("." not in first and ":" not in first and first != "localhost"):
        return "docker.io"
    return first


def _tag(image: str) -> str | None:
    if "@" in image:
        return None  # pinned by digest
    last = image.rsplit("/", 1)[-1]
    return last.partition(":")[2] or "latest"


def _within(image: str, allowed: str) -> bool:
    """`allowed` names a registry or a path in one (everything under it), or, with a path, one
    repository (its tags and digests): `docker.io/library/python` admits `python:3.13` and
    nothing else of Docker Hub's."""
    if image == allowed or image.startswith(allowed + "/"):
        return True
    return "/" in allowed and image.startswith((allowed + ":", allowed + "@"))


def check(resource: Resource, ctx: Context, config: Mapping[str, Any]) -> Iterator[Finding]:
    """One finding per distinct image and problem: a job's master, workers and init containers
    often share one image, and four copies of one violation read as four problems."""
    found: dict[tuple[str, str], list[str]] = {}
    hints: dict[tuple[str, str], str] = {}
    for path, image, problem, hint in _problems(resource, ctx, config):
        found.setdefault((image, problem), []).append(path)
        hints[(image, problem)] = hint
    for (image, problem), paths in found.items():
        more = len(paths) - 1
        also = f" (and {more} more container{'s' if more > 1 else ''})" if more else ""
        yield Finding(paths[0], problem + also, hints[(image, problem)])


def _problems(
    resource: Resource, ctx: Context, config: Mapping[str, Any]
) -> Iterator[tuple[str, str, str, str]]:
    allowed = [r.rstrip("/") for r in config.get("registries") or ()]
    if ctx.registry and config.get("platformRegistry", True):
        allowed.append(ctx.registry.rstrip("/"))
    for pod in pod_templates(resource.props):
        for where, c in containers(pod.spec):
            image = str(c.get("image", ""))
            path = f"{pod.path}.{where}.image"
            host = image_host(image)
            listed = any(_within(image, a) for a in allowed)
            if host in DOCKER_HUB and not listed:
                yield (
                    path,
                    image,
                    f"{image!r} is pulled from Docker Hub",
                    "push the image to the platform's registry"
                    + (f" ({ctx.registry})" if ctx.registry else "")
                    + " and reference it there",
                )
            elif allowed and not listed:
                yield (
                    path,
                    image,
                    f"{image!r} is not in an allowed registry ({', '.join(sorted(set(allowed)))})",
                    "use the platform's registry, or add the registry to "
                    "policy:rules.allowed-registries.registries for this environment",
                )
            if not config.get("allowLatest", False) and _tag(image) == "latest":
                yield (
                    path,
                    image,
                    f"{image!r} uses the moving tag latest",
                    "pin a version tag or a digest (image@sha256:...)",
                )


RULE = Rule(
    id="allowed-registries",
    description="Images come only from the platform's registry (or configured ones); no Docker "
    "Hub; no :latest.",
    level=Level.MANDATORY,
    defaults={"registries": [], "platformRegistry": True, "allowLatest": False},
    check=check,
    types=("kubernetes:",),
)

"""Runs → Kubernetes manifests: KubeDL jobs (or a batch/v1 Job for `custom`), their config,
volumes and code delivery. Templates live in the repository's `templates/` (the package
`trainstack.templates`); a platform project's own are found first (`overrides`).

Public API: `render_run(run, options=RenderOptions(...), templates=None) -> list[dict]` and
`dump_yaml(docs)`.
"""

from trainstack.render.code import code_uri
from trainstack.render.codepack import archive
from trainstack.render.dump import dump_yaml, to_yaml, write_directory
from trainstack.render.options import RenderError, RenderOptions
from trainstack.render.resources import render_run

__all__ = [
    "RenderError",
    "RenderOptions",
    "archive",
    "code_uri",
    "dump_yaml",
    "render_run",
    "to_yaml",
    "write_directory",
]

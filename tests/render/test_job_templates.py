"""Job templates: one per shape of job, not one per KubeDL kind."""

from __future__ import annotations

import re

from trainstack.kubedl import KINDS, RunPolicyPlace
from trainstack.render.overrides import packaged, packaged_names

_COMMENT = re.compile(r"\{#.*?#\}\n?", re.DOTALL)


def _job_templates() -> dict[str, str]:
    return {
        name: text
        for name in packaged_names()
        if name.endswith(".yaml.j2") and "job" in name and (text := packaged(name)) is not None
    }


def _shape(text: str) -> str:
    """A template's text without comments, with every kind's replica key made one placeholder:
    two templates with the same shape are copies of each other."""
    text = _COMMENT.sub("", text)
    for kind in KINDS.values():
        if kind.replicas_key:
            text = text.replace(kind.replicas_key, "<replicas>")
    return text


def test_no_two_job_templates_are_copies() -> None:
    shapes: dict[str, list[str]] = {}
    for name, text in sorted(_job_templates().items()):
        shapes.setdefault(_shape(text), []).append(name)
    copies = [names for names in shapes.values() if len(names) > 1]
    assert not copies, f"job templates that differ only in the replica key: {copies}"


def test_kinds_with_inline_run_policy_share_one_template() -> None:
    inline = {k.template for k in KINDS.values() if k.run_policy is RunPolicyPlace.INLINE}
    assert len([k for k in KINDS.values() if k.run_policy is RunPolicyPlace.INLINE]) == 4
    assert inline == {"kubedljob.yaml.j2"}
    templates = _job_templates()
    for kind in KINDS.values():
        assert kind.template in templates, kind.template

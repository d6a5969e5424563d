"""A platform project's own templates: `templates/` beside its Pulumi.yaml,
found before the packaged ones, changing every kind the renderer produces; the packaged set at
the repository's top level; bad overrides as one clear error; determinism kept."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from tests.clirunner import Cli
from tests.render.conftest import CASES, GOLDEN, SPECS
from trainstack.kubedl import KINDS
from trainstack.policy.pods import pod_templates
from trainstack.render import dump_yaml, render_run
from trainstack.render.engine import environment, tojson
from trainstack.render.mpiruntime import RUNTIME_TEMPLATE
from trainstack.render.mpiruntime import TRAINJOB_TEMPLATE as MPI_TEMPLATE
from trainstack.render.overrides import (
    MAX_BYTES,
    TemplateError,
    for_project,
    load,
    packaged,
    packaged_names,
)
from trainstack.render.trainjob import TEMPLATE as TRAINJOB_TEMPLATE
from trainstack.trainer import TRAINJOB_KIND
from trainstack.trainer.mpi import TRAINING_RUNTIME_KIND

ROOT = Path(__file__).resolve().parents[2]
LABEL = ("platform.example.com/owner", "ml-platform")
POD_LABEL = ("platform.example.com/tier", "batch")
TOLERATION = {"key": "platform.example.com/batch", "operator": "Exists", "effect": "NoSchedule"}
SIDECAR = "log-agent"


def _replace(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"the packaged partial changed: {old!r}"
    return text.replace(old, new)


def _packaged(name: str) -> str:
    text = packaged(name)
    assert text is not None, name
    return text


def metadata_override() -> str:
    """`_metadata.yaml.j2` as a platform team writes it: the packaged one, plus its label."""
    return _replace(
        _packaged("_metadata.yaml.j2"),
        "labels: {{ meta.labels | tojson }}",
        "labels: {{ dict(meta.labels, **" + json.dumps(dict([LABEL])) + ") | tojson }}",
    )


def pod_override() -> str:
    """`_pod.yaml.j2` plus a pod label, a toleration added to trainstack's own, and a sidecar
    from a partial of the platform's own (`_sidecar.yaml.j2`)."""
    text = _replace(
        _packaged("_pod.yaml.j2"),
        "  labels: {{ pod.labels | tojson }}",
        "  labels: {{ dict(pod.labels, **" + json.dumps(dict([POD_LABEL])) + ") | tojson }}",
    )
    text = _replace(
        text,
        "  tolerations: {{ pod.tolerations | tojson }}",
        # added to trainstack's own (the GPU taint's), as docs/templates.md shows
        "  tolerations: {{ ((pod.tolerations or []) + ["
        + json.dumps(TOLERATION)
        + "]) | tojson }}",
    )
    return _replace(
        text,
        "  volumes: {{ pod.volumes | tojson }}",
        '{% include "_sidecar.yaml.j2" %}\n  volumes: {{ pod.volumes | tojson }}',
    )


SIDECAR_PARTIAL = f"""\
{{# The platform's log agent, beside every replica's container. #}}
  - name: "{SIDECAR}"
    image: "registry.example.com/platform/log-agent:1.2"
    resources: {{"limits": {{"cpu": "100m", "memory": "64Mi"}}}}
"""


def project(where: Path, **templates: str) -> Path:
    """A platform project: Pulumi.yaml and a templates/ folder holding `templates`."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "Pulumi.yaml").write_text("name: acme-platform\nruntime: python\n")
    folder = where / "templates"
    folder.mkdir(exist_ok=True)
    for name, text in templates.items():
        (folder / name).write_text(text)
    return where


def full_project(where: Path, **templates: str) -> Path:
    """A platform project that plans: this repository's Pulumi files and KubeDL lock."""
    project(where, **templates)
    for name in ("Pulumi.yaml", "Pulumi.local.yaml"):
        shutil.copy(ROOT / name, where / name)
    shutil.copytree(ROOT / "platform", where / "platform")
    return where


def rendered_kinds() -> set[str]:
    """Every kind the renderer produces, from its own records: each job kind's (trainstack.kubedl),
    the TrainJob and an MPI run's own TrainingRuntime (trainstack.trainer) and the literal kind of
    every other object template trainstack ships."""
    job_templates = {kind.template for kind in KINDS.values()}
    job_templates |= {TRAINJOB_TEMPLATE, MPI_TEMPLATE, RUNTIME_TEMPLATE}
    kinds = {kind.kind for kind in KINDS.values()} | {TRAINJOB_KIND, TRAINING_RUNTIME_KIND}
    for name in packaged_names():
        if name.startswith("_") or name in job_templates:
            continue
        found = re.search(r'^kind: "(\w+)"$', _packaged(name), re.MULTILINE)
        assert found, f"{name}: no literal kind"
        kinds.add(found.group(1))
    return kinds


def every_case(templates: Any) -> Iterator[dict[str, Any]]:
    for case in CASES:
        yield from render_run(case.run(), options=case.options, templates=templates)


def test_the_packaged_templates_are_the_repository_s_top_level_folder() -> None:
    # The repository's layout: templates/ beside trainstack/, shipped as trainstack.templates.
    names = packaged_names()
    assert "_pod.yaml.j2" in names and "kubedljob.yaml.j2" in names
    assert not (ROOT / "trainstack" / "templates").exists()
    assert sorted(p.name for p in (ROOT / "templates").glob("*.j2")) == list(names)
    for name in names:
        assert packaged(name) == (ROOT / "templates" / name).read_text(encoding="utf-8")
    # This repository is itself a platform project whose templates/ is the packaged set: no
    # override, so plan and deploy from a checkout render exactly the goldens.
    assert for_project(ROOT) is None


def test_an_override_changes_every_rendered_kind(tmp_path: Path) -> None:
    templates = load(
        project(
            tmp_path / "p",
            **{
                "_metadata.yaml.j2": metadata_override(),
                "_pod.yaml.j2": pod_override(),
                "_sidecar.yaml.j2": SIDECAR_PARTIAL,
            },
        )
        / "templates"
    )
    assert templates is not None
    assert templates.replaced == ("_metadata.yaml.j2", "_pod.yaml.j2")
    assert templates.added == ("_sidecar.yaml.j2",)
    plain = list(every_case(None))
    docs = list(every_case(templates))
    # the cases render every kind there is, so "every object" below is "every kind"
    assert {d["kind"] for d in docs} == rendered_kinds()
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        (d["kind"], d["metadata"]["name"]) for d in plain
    ]
    job_kinds = {kind.kind for kind in KINDS.values()}
    for doc, before in zip(docs, plain, strict=True):
        assert doc != before, doc["kind"]
        labels = doc["metadata"]["labels"]
        assert labels == {**before["metadata"]["labels"], LABEL[0]: LABEL[1]}, doc["kind"]
        if doc["kind"] not in job_kinds:
            continue
        pods = list(pod_templates(doc))
        assert pods, doc["kind"]
        for pod, was in zip(pods, pod_templates(before), strict=True):
            # added to trainstack's own tolerations (the GPU taint's), never instead of them
            assert pod.spec["tolerations"] == [*(was.spec.get("tolerations") or []), TOLERATION]
            names = [c["name"] for c in pod.spec["containers"]]
            assert names == [*(c["name"] for c in was.spec["containers"]), SIDECAR]
        for key in ("tfReplicaSpecs", "pytorchReplicaSpecs", "xgbReplicaSpecs", "mpiReplicaSpecs"):
            for replica in (doc["spec"].get(key) or {}).values():
                assert replica["template"]["metadata"]["labels"][POD_LABEL[0]] == POD_LABEL[1]


def test_the_cli_renders_with_the_named_project_s_templates(tmp_path: Path) -> None:
    where = project(tmp_path / "p", **{"_metadata.yaml.j2": metadata_override()})
    run = str(SPECS / "mpi.run.yaml")
    done = Cli()("render", run, "--project", str(where))
    assert done.code == 0, done.err
    docs = list(yaml.safe_load_all(done.out))
    assert docs and all(d["metadata"]["labels"][LABEL[0]] == LABEL[1] for d in docs)
    # stderr says where the templates came from; stdout stays the manifests alone
    assert "_metadata.yaml.j2 (replaces the packaged one)" in done.err
    # without --env, a project is used only when named: the current directory does not count
    plain = Cli()("render", run, cwd=where)
    assert plain.code == 0, plain.err
    assert LABEL[0] not in plain.out and plain.err == ""


def test_copies_of_the_packaged_templates_render_the_goldens(tmp_path: Path) -> None:
    where = project(tmp_path / "p", **{n: _packaged(n) for n in packaged_names()})
    (where / "templates" / "README.md").write_text("not a template\n")
    (where / "templates" / ".gitkeep").write_text("")
    assert for_project(where) is None
    for case in CASES:
        text = dump_yaml(render_run(case.run(), options=case.options, templates=None))
        assert text == (GOLDEN / f"{case.name}.yaml").read_text(encoding="utf-8"), case.name


def test_overrides_are_deterministic_and_record_nothing_of_this_machine(tmp_path: Path) -> None:
    where = project(
        tmp_path / "p",
        **{"_pod.yaml.j2": pod_override(), "_sidecar.yaml.j2": SIDECAR_PARTIAL},
    )
    first = dump_yaml(list(every_case(for_project(where))))
    assert dump_yaml(list(every_case(for_project(where)))) == first
    assert str(tmp_path) not in first and str(where) not in first
    run = str(SPECS / "tf.run.yaml")
    outs = {
        seed: Cli()(
            "render", run, "--project", str(where), env={"PYTHONHASHSEED": seed}, subprocess=True
        )
        for seed in ("1", "2")
    }
    assert outs["1"].code == 0, outs["1"].err
    assert outs["1"].out == outs["2"].out


def test_an_edited_override_or_another_project_s_is_never_served_stale(tmp_path: Path) -> None:
    run = next(c for c in CASES if c.name == "kind-pytorch").run()

    def label(where: Path) -> str:
        docs = render_run(run, templates=for_project(where))
        return str(docs[-1]["metadata"]["labels"].get("who"))

    def who(value: str) -> str:
        return _replace(
            _packaged("_metadata.yaml.j2"),
            "labels: {{ meta.labels | tojson }}",
            'labels: {{ dict(meta.labels, who="' + value + '") | tojson }}',
        )

    a = project(tmp_path / "a", **{"_metadata.yaml.j2": who("a")})
    b = project(tmp_path / "b", **{"_metadata.yaml.j2": who("b")})
    assert (label(a), label(b), label(a)) == ("a", "b", "a")
    (a / "templates" / "_metadata.yaml.j2").write_text(who("a2"))
    assert label(a) == "a2"
    (a / "templates" / "_metadata.yaml.j2").unlink()
    assert label(a) == "None"


def _pod_with(old: str, new: str) -> str:
    return _replace(_packaged("_pod.yaml.j2"), old, new)


BAD: dict[str, tuple[dict[str, str], str]] = {
    "syntax": (
        {"_pod.yaml.j2": "spec:\n{% for c in %}\n"},
        r"_pod\.yaml\.j2:2: Expected an expression",
    ),
    "undefined": (
        {
            "_pod.yaml.j2": _pod_with(
                "  tolerations:", "  runtimeClassName: {{ pod.runtime | tojson }}\n  tolerations:"
            )
        },
        r"_pod\.yaml\.j2:12: .*has no attribute 'runtime'",
    ),
    "undefined name": (
        {"_metadata.yaml.j2": "metadata: {{ platform_labels | tojson }}\n"},
        r"_metadata\.yaml\.j2:1: 'platform_labels' is undefined",
    ),
    "path name": (
        {"_pod.yaml.j2": _pod_with("  volumes:", '{% include "../secrets.j2" %}\n  volumes:')},
        r"_pod\.yaml\.j2:\d+: '\.\./secrets\.j2': templates are one flat folder",
    ),
    "absent partial": (
        {"_pod.yaml.j2": _pod_with("  volumes:", '{% include "_sidecar.yaml.j2" %}\n  volumes:')},
        r"_pod\.yaml\.j2:\d+: no template '_sidecar\.yaml\.j2' in .*templates or trainstack's own",
    ),
    "private attribute": (
        {
            "_pod.yaml.j2": _pod_with(
                "  volumes:", "  x: {{ pod.__class__.__mro__ | tojson }}\n  volumes:"
            )
        },
        r"_pod\.yaml\.j2:\d+: access to attribute '__class__' of 'Pod' object is unsafe",
    ),
    "mutation": (
        {
            "_pod.yaml.j2": _pod_with(
                "  volumes:", '  x: {{ pod.labels.update(a="b") | tojson }}\n  volumes:'
            )
        },
        r"_pod\.yaml\.j2:\d+: access to attribute 'update' of 'dict' object is unsafe",
    ),
    "random": (
        {"_pod.yaml.j2": _pod_with("  volumes:", "  x: {{ lipsum(1) | tojson }}\n  volumes:")},
        r"_pod\.yaml\.j2:\d+: 'lipsum' is undefined",
    ),
    "key twice": (
        {"_pod.yaml.j2": _pod_with("  volumes:", "  tolerations: []\n  volumes:")},
        r"is not YAML: the key 'tolerations' twice in one mapping",
    ),
    "not yaml": (
        {"_pod.yaml.j2": _pod_with("  volumes:", " volumes: [\n  volumes:")},
        r"rendered with the templates in .*, is not YAML",
    ),
    "renamed": (
        {
            "_metadata.yaml.j2": _replace(
                _packaged("_metadata.yaml.j2"), "meta.name | tojson", '"x" | tojson'
            )
        },
        r"metadata\.name is 'x', not '.*'",
    ),
    "labels dropped": (
        {
            "_metadata.yaml.j2": _replace(
                _packaged("_metadata.yaml.j2"), "meta.labels | tojson", "{} | tojson"
            )
        },
        r"metadata\.labels lost trainstack's ",
    ),
    "not utf-8": ({"_pod.yaml.j2": "spec: \udcff\n"}, r"_pod\.yaml\.j2: not UTF-8 text"),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_a_bad_override_is_one_clear_error(what: str, tmp_path: Path, cli: Cli) -> None:
    files, message = BAD[what]
    where = project(tmp_path / "p")
    for name, text in files.items():
        (where / "templates" / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    done = cli("render", str(SPECS / "mpi.run.yaml"), "--project", str(where))
    assert done.code == 2, (done.out, done.err)
    assert done.out == "" and "Traceback" not in done.err
    assert done.err.startswith("error: "), done.err
    assert re.search(message, done.err), done.err


def _link_out(folder: Path) -> None:
    secret = folder.parent / "elsewhere.j2"
    secret.write_text("metadata: {}\n")
    (folder / "_metadata.yaml.j2").symlink_to(secret)


def _fifo(folder: Path) -> None:
    os.mkfifo(folder / "_pod.yaml.j2")


def _huge(folder: Path) -> None:
    (folder / "_pod.yaml.j2").write_text("# " + "x" * MAX_BYTES + "\n")


def _directory(folder: Path) -> None:
    (folder / "_pod.yaml.j2").mkdir()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_link_out, r"_metadata\.yaml\.j2: a link to a place outside .*templates: not followed"),
        (_fifo, r"_pod\.yaml\.j2: cannot be read: a FIFO, not a file"),
        (_huge, r"_pod\.yaml\.j2: over 256 KiB"),
        (_directory, r"_pod\.yaml\.j2: cannot be read: a directory, not a file"),
    ],
    ids=["link out", "fifo", "huge", "directory"],
)
def test_an_override_that_is_no_regular_file_in_the_folder_is_refused(
    make: Any, message: str, tmp_path: Path, cli: Cli
) -> None:
    where = project(tmp_path / "p")
    make(where / "templates")
    done = cli("render", str(SPECS / "mpi.run.yaml"), "--project", str(where), timeout=30)
    assert done.code == 2, (done.out, done.err)
    assert "Traceback" not in done.err and done.out == ""
    assert re.search(message, done.err), done.err


def test_a_link_that_stays_in_the_folder_is_followed(tmp_path: Path) -> None:
    where = project(tmp_path / "p", **{"platform-metadata.j2": metadata_override()})
    (where / "templates" / "_metadata.yaml.j2").symlink_to("platform-metadata.j2")
    templates = for_project(where)
    assert templates is not None and "_metadata.yaml.j2" in templates.replaced
    docs = render_run(next(iter(CASES)).run(), templates=templates)
    assert all(d["metadata"]["labels"][LABEL[0]] == LABEL[1] for d in docs)


def test_templates_that_is_not_a_folder_is_one_error(tmp_path: Path) -> None:
    where = project(tmp_path / "p")
    shutil.rmtree(where / "templates")
    (where / "templates").write_text("")
    with pytest.raises(TemplateError, match="not a folder"):
        for_project(where)


def test_an_undefined_value_through_tojson_names_the_variable() -> None:
    # A misspelled field reached `tojson` as an Undefined it could not serialise: a TypeError
    # about JSON, not the UndefinedError naming the field, even in trainstack's own templates.
    env = environment(None)
    template = env.from_string("x: {{ pod.nope | tojson }}\ny: {{ [pod.also] | tojson }}")
    with pytest.raises(jinja2.UndefinedError, match="'pod' is undefined"):
        template.render()
    with pytest.raises(jinja2.UndefinedError, match="has no attribute 'nope'"):
        template.render(pod={})
    with pytest.raises(TypeError):
        tojson(object())


def team_run(tmp_path: Path) -> Path:
    """bindings-pvc.run.yaml, for the team vision."""
    run = tmp_path / "team.run.yaml"
    run.write_text(
        (SPECS / "bindings-pvc.run.yaml")
        .read_text()
        .replace("{name: bindings-pvc}", "{name: bindings-pvc, tags: {team: vision}}")
        .replace("./bindings.component.yaml", str(SPECS / "bindings.component.yaml"))
    )
    return run


def test_plan_renders_with_the_project_s_templates_and_says_so(tmp_path: Path, cli: Cli) -> None:
    where = full_project(tmp_path / "p", **{"_metadata.yaml.j2": metadata_override()})
    run = team_run(tmp_path)
    done = cli("plan", str(run), "--env", "local", "--project", str(where), "--json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["templates"] == {"replaced": ["_metadata.yaml.j2"], "added": []}
    objects = [r["inputs"] for r in doc["resources"] if "metadata" in r["inputs"]]
    assert objects and all(o["metadata"]["labels"][LABEL[0]] == LABEL[1] for o in objects)
    text = cli("plan", str(run), "--env", "local", "--project", str(where))
    assert text.code == 0, text.err
    assert "_metadata.yaml.j2 (replaces the packaged one)" in text.out
    # the platform's own plan renders no run: nothing to say about templates
    platform = cli("plan", "--env", "local", "--project", str(where), "--json")
    assert json.loads(platform.out)["templates"] == {"replaced": [], "added": []}


def test_a_partial_without_its_final_newline_is_named_as_such(tmp_path: Path, cli: Cli) -> None:
    """The line after the include joins the partial's last line: the hint says the newline is
    missing, not that the partial is indented wrong."""
    where = project(tmp_path / "p", **{"_metadata.yaml.j2": metadata_override().rstrip("\n")})
    done = cli("render", str(SPECS / "mpi.run.yaml"), "--project", str(where))
    assert done.code == 2 and "Traceback" not in done.err, done.err
    assert "is not YAML" in done.err
    assert "_metadata.yaml.j2 in " in done.err and "does not end with a newline" in done.err
    assert "indent" not in done.err

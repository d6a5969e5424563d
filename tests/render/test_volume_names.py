"""A static PV's source is immutable after creation ("spec.persistentvolumesource
is immutable after creation"), so a PV and its claim are named after what is immutable about the
binding: a changed oss:// or nas:// binding renders a new pair instead of an update the API
server refuses. Every PV is pre-bound to its claim, and its name starts with
``<namespace>.`` (a namespace cannot contain a dot, so no team's prefix is another team's)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from trainstack.platformnames import PV_NAMESPACE_SEPARATOR, pv_name
from trainstack.render import RenderOptions, render_run
from trainstack.render.storage import label_value, volume_names
from trainstack.spec import load_run

COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {name: vols, version: 1.0.0}
spec:
  jobType: custom
  image: registry.example.com/x:1
  command: python main.py
  inputs: [{name: train}]
  outputs: [{name: model}]
"""
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def render(tmp: Path, inputs: str, outputs: str = "{}", name: str = "vols", **opts: Any) -> list:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "component.yaml").write_text(COMPONENT)
    run = tmp / "run.yaml"
    run.write_text(
        f"apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {{name: {name}}}\nspec:\n"
        f"  component: ./component.yaml\n  inputs: {inputs}\n  outputs: {outputs}\n"
    )
    return render_run(load_run(run), options=RenderOptions(namespace="nlp", **opts))


def pair(docs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    (pv,) = [d for d in docs if d["kind"] == "PersistentVolume"]
    (claim,) = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    return pv, claim


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("oss://acme-data/ds/v1/", "oss://acme-data/ds/v2/"),  # path
        ("oss://acme-data/ds/", "oss://acme-other/ds/"),  # bucket
        ("oss://acme-data/ds/", "oss://acme-data.oss-cn-beijing-internal.aliyuncs.com/ds/"),
        ("nas://nas.example.com/ds/v1/", "nas://nas.example.com/ds/v2/"),  # path
        ("nas://nas.example.com/ds/", "nas://nas2.example.com/ds/"),  # server
    ],
)
def test_a_changed_binding_renders_a_new_pv_and_claim(
    tmp_path: Path, before: str, after: str
) -> None:
    old_pv, old_claim = pair(render(tmp_path / "a", f"{{train: '{before}'}}"))
    new_pv, new_claim = pair(render(tmp_path / "b", f"{{train: '{after}'}}"))
    assert old_pv["metadata"]["name"] != new_pv["metadata"]["name"]
    assert old_claim["metadata"]["name"] != new_claim["metadata"]["name"]
    # and the same binding renders the same names again (deterministic, so a redeploy is a no-op)
    again_pv, again_claim = pair(render(tmp_path / "c", f"{{train: '{before}'}}"))
    assert again_pv == old_pv and again_claim == old_claim


def test_changed_credentials_render_a_new_pair(tmp_path: Path) -> None:
    # authType/roleName and nodePublishSecretRef are part of the immutable CSI source
    uri = "{train: 'oss://acme-data/ds/'}"
    by_secret, _ = pair(render(tmp_path / "a", uri))
    by_role, _ = pair(render(tmp_path / "b", uri, oss_ram_role="jobs"))
    other_secret, _ = pair(render(tmp_path / "c", uri, oss_secret="other"))
    names = {p["metadata"]["name"] for p in (by_secret, by_role, other_secret)}
    assert len(names) == 3


def test_a_writable_binding_of_the_same_uri_is_another_volume(tmp_path: Path) -> None:
    docs = render(tmp_path, "{train: 'oss://acme-data/x/'}", "{model: 'oss://acme-data/x/'}")
    pvs = [d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolume"]
    assert len(set(pvs)) == 2


@pytest.mark.parametrize("uri", ["oss://acme-data/ds/", "nas://nas.example.com/ds/"])
def test_each_pv_is_pre_bound_to_its_claim_and_named_after_its_namespace(
    tmp_path: Path, uri: str
) -> None:
    pv, claim = pair(render(tmp_path, f"{{train: '{uri}'}}"))
    name, claim_name = pv["metadata"]["name"], claim["metadata"]["name"]
    assert PV_NAMESPACE_SEPARATOR == "."
    assert name == pv_name("nlp", claim_name) == f"nlp.{claim_name}"
    assert re.fullmatch(r"vols-in-train-[0-9a-f]{8}", claim_name)
    assert pv["spec"]["claimRef"] == {"namespace": "nlp", "name": claim_name}
    assert claim["spec"]["volumeName"] == name
    assert claim["metadata"]["namespace"] == "nlp"
    if uri.startswith("oss://"):
        # the OSS CSI driver needs a volumeHandle unique per PV
        assert pv["spec"]["csi"]["volumeHandle"] == name
        assert pv["metadata"]["labels"]["alicloud-pvname"] == name


def test_long_names_stay_within_kubernetes_limits_and_distinct(tmp_path: Path) -> None:
    long_ns = "team-" + "n" * 58  # a 63-character namespace
    channel = "c" * 60
    seen = set()
    for i, job in enumerate(["j" * 47, "j" * 46 + "k"]):
        for vol in (f"in-{channel}a", f"in-{channel}b"):
            pv, claim = volume_names(long_ns, job, vol, f"{i:08x}")
            assert DNS_LABEL.fullmatch(claim) and len(claim) <= 63, claim
            assert len(pv) <= 253 and pv.split(".") == [long_ns, claim]
            assert claim.endswith(f"-{i:08x}")
            label = label_value(pv)
            assert len(label) <= 63 and LABEL_VALUE.fullmatch(label), label
            seen.update({pv, claim, label})
    assert len(seen) == 12
    # rendered end to end: the longest run name, a long channel name
    component = COMPONENT.replace("[{name: train}]", f"[{{name: {channel}}}]")
    (tmp_path / "component.yaml").write_text(component)
    run = tmp_path / "run.yaml"
    run.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: " + "r" * 47 + "}\nspec:\n"
        f"  component: ./component.yaml\n  inputs: {{{channel}: 'oss://acme-data/x/'}}\n"
    )
    pv, claim = pair(render_run(load_run(run), options=RenderOptions(namespace=long_ns)))
    assert len(claim["metadata"]["name"]) <= 63
    assert pv["metadata"]["name"] == f"{long_ns}.{claim['metadata']['name']}"
    assert len(pv["metadata"]["labels"]["alicloud-pvname"]) <= 63
    assert pv["spec"]["claimRef"]["name"] == claim["metadata"]["name"]


def test_pv_name_refuses_what_is_not_a_dns_label() -> None:
    for namespace, rest in (("a.b", "x"), ("", "x"), ("n", "x" * 64), ("n", "")):
        with pytest.raises(ValueError, match="not a DNS label"):
            pv_name(namespace, rest)

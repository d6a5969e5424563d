"""One record per storage scheme: spec/schemes.py says what each scheme's
location is, whether a local run reaches it, whether it may be an artifact store and expire
logs, and its CSI driver; the parser, the local runner, the artifact store and the renderer read
it. Before, those facts were spelled in 6-10 modules. Each shipped binding fixture is rendered
here, so a scheme whose record and renderer disagree fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainstack.render import RenderOptions, render_run
from trainstack.spec import load_run
from trainstack.spec.model import Scheme
from trainstack.spec.schemes import SCHEMES, STORE_SCHEMES, storage_scheme
from trainstack.spec.values import binding

SPECS = Path(__file__).resolve().parents[1] / "render" / "specs"


def test_every_scheme_has_its_record() -> None:
    assert set(SCHEMES) == set(Scheme)
    assert STORE_SCHEMES == ("oss", "nas", "pvc")
    assert [s.scheme for s in SCHEMES.values() if s.local] == [Scheme.FILE]
    assert [s.scheme for s in SCHEMES.values() if s.expires] == [Scheme.OSS]
    for record in SCHEMES.values():
        assert binding(record.example).scheme is record.scheme  # its own example parses
        assert storage_scheme(record.example) is record


@pytest.mark.parametrize("scheme", list(Scheme), ids=str)
def test_the_renderer_builds_each_schemes_volume_as_its_record_says(scheme: Scheme) -> None:
    run = load_run(SPECS / f"bindings-{scheme.value}.run.yaml")
    docs = render_run(run, options=RenderOptions(local_cluster=scheme is Scheme.FILE))
    volumes = [d for d in docs if d["kind"] == "PersistentVolume"]
    job = docs[-1]
    record = SCHEMES[scheme]
    if record.csi_driver is not None:
        assert volumes and {v["spec"]["csi"]["driver"] for v in volumes} == {record.csi_driver}
    pods = _pod_volumes(job)
    assert pods, f"no volume rendered for {scheme.value}://"


def test_a_location_is_checked_by_its_schemes_record() -> None:
    with pytest.raises(ValueError, match="not a valid OSS bucket"):
        binding("oss://Bad_Bucket/x/")
    with pytest.raises(ValueError, match="not a valid PersistentVolumeClaim name"):
        binding("pvc://Claim/x/")
    with pytest.raises(ValueError, match="has no NAS server or file system"):
        binding("nas:///x/")


def _pod_volumes(job: dict[str, Any]) -> list[dict[str, Any]]:
    key = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
    return [
        v
        for spec in job["spec"][key].values()
        for v in spec["template"]["spec"].get("volumes", [])
        if v["name"] not in ("code", "config")
    ]

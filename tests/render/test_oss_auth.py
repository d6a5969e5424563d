"""OSS volumes authenticate the one way the options say: a RAM role through RRSA, or a Secret."""

from __future__ import annotations

from typing import Any

import pytest

from tests.render.conftest import SPECS
from trainstack import platformnames as names
from trainstack.render import RenderError, RenderOptions, render_run
from trainstack.spec import load_run

RUN = "bindings-oss.run.yaml"


def oss_volumes(options: RenderOptions) -> list[dict[str, Any]]:
    docs = render_run(load_run(SPECS / RUN), options=options)
    volumes = [d for d in docs if d["kind"] == "PersistentVolume"]
    assert volumes and all(
        v["spec"]["csi"]["driver"] == "ossplugin.csi.alibabacloud.com" for v in volumes
    )
    return volumes


def test_a_role_is_assumed_through_rrsa_and_no_secret_is_named() -> None:
    # The role wins over the (default) Secret: ack platforms have no trainstack-oss Secret.
    for volume in oss_volumes(RenderOptions(oss_ram_role="trainstack-ack-dev-jobs")):
        csi = volume["spec"]["csi"]
        assert csi["volumeAttributes"]["authType"] == "rrsa"
        assert csi["volumeAttributes"]["roleName"] == "trainstack-ack-dev-jobs"
        assert "nodePublishSecretRef" not in csi


def test_a_secret_is_named_in_the_run_namespace_never_its_content() -> None:
    for volume in oss_volumes(RenderOptions(namespace="vision", oss_secret="trainstack-oss")):
        csi = volume["spec"]["csi"]
        assert csi["nodePublishSecretRef"] == {"name": "trainstack-oss", "namespace": "vision"}
        assert "authType" not in csi["volumeAttributes"]
        assert "roleName" not in csi["volumeAttributes"]


def test_without_credentials_the_platform_hint_is_the_error_hint() -> None:
    hint = "environment 'local' has no OSS credentials; ..."
    with pytest.raises(RenderError) as caught:
        oss_volumes(RenderOptions(oss_secret=None, oss_credentials_hint=hint))
    assert "needs OSS credentials for the CSI driver" in caught.value.message
    assert caught.value.hint == hint
    with pytest.raises(RenderError) as caught:
        oss_volumes(RenderOptions(oss_secret=None))
    assert "--oss-secret" in (caught.value.hint or "") and "RRSA" in (caught.value.hint or "")


def test_the_default_secret_is_the_one_the_platform_creates() -> None:
    assert RenderOptions().oss_secret == names.OSS_SECRET_NAME

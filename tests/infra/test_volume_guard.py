"""PersistentVolumes are cluster-scoped, so every team's runner holds one cluster-wide right
(teamaccess.py). A ValidatingAdmissionPolicy per team narrows it (volumeguard.py, volumepolicy.py):
the runner may manage only PVs named `<namespace>.…`, pre-bound to a claim of its namespace,
whose source has exactly the shape the renderer writes, on its team's own folder of the
platform's storage.

The shape is an allow-list because of how the Alibaba Cloud CSI driver reads an OSS PV
(kubernetes-sigs/alibaba-cloud-csi-driver at 8aacf90, paths under that repository):

- pkg/oss/utils.go:176-181 (parseOptions) and :355-360 (parseVolumeAsOptions): every
  `volumeAttributes` key is trimmed and lower-cased (`strings.TrimSpace(strings.ToLower(k))`),
  every value trimmed, and an empty value skipped, so `Path`, `PATH` or ` path` set the path;
  with two of them, Go's random map order picks. A PV with no path mounts `/` (utils.go:352).
- utils.go:205: `ramRole` is read as `roleName`; utils.go:233 `credentialProviderName` as
  `sandboxCredProviderName`.
- utils.go:207-210 and pkg/mounter/fuse_pod_manager/oss/utils.go:59 and :80 (CheckRRSAParams,
  GetRRSAConfig): `roleArn` with `oidcProviderArn` are used as they are, in place of `roleName`.
- utils.go:191-196: `url`, `otherOpts` and `secretRef` are taken as given; `otherOpts` and the PV's
  `mountOptions` become the fuse pod's ossfs options (utils.go:662-672), `fsType` its fuse type
  (utils.go:281).
- pkg/oss/controllerserver.go:168 and pkg/oss/nodeserver.go:131: credentials come from
  `req.GetSecrets()`, the Secret any `*SecretRef` of the PV names (the CSI sidecars and kubelet
  read it in whatever namespace the ref says); with no auth type, Secret or key the driver mounts
  with its own AccessKey (utils.go:310-318).

`driver_reads` below models that folding, and the tests show every hostile variant refused both
by the policy's CEL (evaluated with cel-python on requests shaped as the API server sends them,
with the team's parameter ConfigMap as `params`: tests/infra/admission.py) and by `pv_problem`
(the `platform-storage` rule), and every PV every shipped run renders on every shipped
environment admitted, the driver reading nothing outside the team's folder from it.
"""

from __future__ import annotations

import copy
import json
import posixpath
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.infra.admission import Evaluator, Request
from tests.infra.conftest import team_oss_keys
from tests.infra.test_team_access import build
from trainstack import platformnames as names
from trainstack.errors import ConfigError, UserError
from trainstack.infra.platform.teamaccess import guard_match
from trainstack.infra.platform.volumeguard import (
    CSI_NOT_RENDERED,
    SPEC_NOT_RENDERED,
    GuardShape,
    TeamVolumes,
    oss_keys,
    pv_problem,
)
from trainstack.render.storage import OSS_ATTRIBUTES, OSS_OTHER_OPTS, OSS_RRSA_ATTRIBUTES

REPO = Path(__file__).resolve().parents[2]
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
RUNNER = "system:serviceaccount:{}:trainstack-runner"
NAS = "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com"  # what the mocks give the mount target
ENDPOINT = "oss-cn-hangzhou-internal.aliyuncs.com"  # ack-dev's region, internal
ROLE = "trainstack-test-jobs-nlp"  # the mocks' stack is "test": cluster trainstack-test
DATA = "acme-trainstack-dev-data"
NAME = "nlp.census-in-train-1a2b3c4d"
# kubeconfig mode with an AccessKey per team: Pulumi.local.yaml's comments say how they are set
LOCAL_OSS = team_oss_keys("vision", "nlp")


def use(mocks: Any, env: str) -> dict[str, Any]:
    """Build a shipped environment; ``local+oss`` is local with an OSS AccessKey per team."""
    if env != "local+oss":
        return build(mocks, env)  # type: ignore[no-any-return]
    mocks.use_team_keys("local", "vision", "nlp")
    return mocks.build()  # type: ignore[no-any-return]


def guard(mocks: Any, namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the team's policy spec, its parameter ConfigMap) as the platform registered them."""
    name = f"trainstack-team-volumes-{namespace}"
    (policy,) = [
        r.inputs["spec"] for r in mocks.of_type(POLICY) if r.inputs["metadata"]["name"] == name
    ]
    (params,) = [
        r.inputs for r in mocks.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == name
    ]
    return policy, {"metadata": params["metadata"], "data": mocks.resolve(params["data"])[0]}


def ack_dev_nlp_guard(mocks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """nlp's guard on ack-dev (read once per module through ``built_once``: tests only read it)."""
    build(mocks, "ack-dev")
    return guard(mocks, "nlp")


def local_oss_nlp_guard(mocks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """nlp's guard in kubeconfig mode with an AccessKey per team (read once per module)."""
    use(mocks, "local+oss")
    return guard(mocks, "nlp")


def refused(
    policy: dict[str, Any], params: dict[str, Any], pv: dict[str, Any], op: str = "CREATE"
) -> list[str] | None:
    namespace = pv["metadata"]["name"].partition(".")[0]
    request = Request(
        operation=op,
        object=None if op == "DELETE" else pv,
        old_object=None if op == "CREATE" else pv,
        username=RUNNER.format(namespace if namespace in ("nlp", "vision") else "nlp"),
        params=params,
    )
    return Evaluator().failures(policy, request)


def oss_pv(ack: bool = True, name: str = NAME, **attrs: str) -> dict[str, Any]:
    """An OSS PV as the renderer writes it for team nlp (read-only), ``attrs`` laid over."""
    values = (DATA, ENDPOINT, "/nlp/census/train", OSS_OTHER_OPTS[1])
    volume_attributes = dict(zip(OSS_ATTRIBUTES, values, strict=True))
    csi: dict[str, Any] = {
        "driver": "ossplugin.csi.alibabacloud.com",
        "volumeHandle": name,
        "volumeAttributes": volume_attributes,
    }
    if ack:
        volume_attributes |= dict(zip(OSS_RRSA_ATTRIBUTES, ("rrsa", ROLE), strict=True))
    else:
        volume_attributes["url"] = LOCAL_OSS["trainstack:ossEndpoint"]
        csi["nodePublishSecretRef"] = {"name": names.OSS_SECRET_NAME, "namespace": "nlp"}
    volume_attributes |= attrs
    return _pv(name, csi=csi)


def nfs_pv(path: str = "/nlp/shared/x", server: str = NAS, **spec: Any) -> dict[str, Any]:
    nfs = {"server": server, "path": path, "readOnly": True}
    return _pv(NAME, nfs=nfs, mountOptions=["nolock", "tcp", "noresvport", "vers=3"], **spec)


def _pv(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "20Gi"},
            "accessModes": ["ReadOnlyMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "volumeMode": "Filesystem",  # the API server's default, set before admission
            "claimRef": {"namespace": "nlp", "name": "census-in-train-1a2b3c4d"},
            **spec,
        },
    }


def with_csi(pv: dict[str, Any], **fields: Any) -> dict[str, Any]:
    out = copy.deepcopy(pv)
    out["spec"]["csi"] |= fields
    return out


def with_spec(pv: dict[str, Any], **fields: Any) -> dict[str, Any]:
    out = copy.deepcopy(pv)
    out["spec"] |= fields
    return out


def without(pv: dict[str, Any], *path: str) -> dict[str, Any]:
    out = copy.deepcopy(pv)
    *parents, last = path
    node = out
    for p in parents:
        node = node[p]
    del node[last]
    return out


# --- the driver's reading of volumeAttributes (see the module docstring) ---------------------

ALIASES = {"ramrole": "rolename", "credentialprovidername": "sandboxcredprovidername"}


def driver_reads(attrs: dict[str, str]) -> dict[str, set[str]]:
    """Each option the driver may take from ``attrs``, with every value it may end up holding:
    keys trimmed, lower-cased and aliases folded, values trimmed, empty values skipped; several
    keys folding into one leave the pick to Go's map order, so each of their values is possible."""
    out: dict[str, set[str]] = {}
    for key, value in attrs.items():
        folded = key.strip().lower()
        if value.strip():
            out.setdefault(ALIASES.get(folded, folded), set()).add(value.strip())
    return out


def driver_stays_in(attrs: dict[str, str], team: str, role: str | None, url: str) -> bool:
    """The driver, reading ``attrs``, mounts only ``/team/`` of a bucket, at ``url``, as the
    team's ``role`` (None: with the referenced Secret), with the renderer's ossfs options."""
    read = driver_reads(attrs)
    paths = read.get("path", {"/"})
    inside = all(
        posixpath.normpath(p) == f"/{team}" or posixpath.normpath(p).startswith(f"/{team}/")
        for p in paths
    )
    arns = "rolearn" in read or "oidcproviderarn" in read
    roles = read.get("rolename", set())
    return (
        inside
        and not arns
        and (roles == {role} if role else not roles)
        and read.get("url") == {url}
        and read.get("otheropts", set()) <= set(OSS_OTHER_OPTS)
        and not read.keys() & {"secretref", "akid", "aksecret", "assumerolearn", "fusetype"}
    )


# --- what the platform registers --------------------------------------------------------------


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_each_team_gets_a_pv_guard_bound_to_deny_with_its_parameters(mocks: Any, env: str) -> None:
    use(mocks, env)
    policies = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]
        for r in mocks.of_type(POLICY)
        if r.inputs["metadata"]["name"].startswith("trainstack-team-volumes-")
    }
    assert sorted(policies) == ["trainstack-team-volumes-nlp", "trainstack-team-volumes-vision"]
    for namespace in ("nlp", "vision"):
        spec = policies[f"trainstack-team-volumes-{namespace}"]
        assert spec["failurePolicy"] == "Fail"
        assert spec["paramKind"] == {"apiVersion": "v1", "kind": "ConfigMap"}
        assert spec["matchConstraints"]["resourceRules"][0]["resources"] == ["persistentvolumes"]
        assert spec["matchConditions"] == [
            {"name": "team-runner", "expression": guard_match(namespace)}
        ]
    bindings = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]
        for r in mocks.of_type(POLICY_BINDING)
        if r.inputs["metadata"]["name"] in policies
    }
    assert bindings == {
        name: {
            "policyName": name,
            "validationActions": ["Deny"],
            "paramRef": {
                "name": name,
                "namespace": names.ADMISSION_NAMESPACE,
                "parameterNotFoundAction": "Deny",
            },
        }
        for name in policies
    }


def test_the_parameters_live_where_no_team_can_write(mocks: Any) -> None:
    """A team's Role may write ConfigMaps in its own namespace: its guard's parameters are in
    the platform's admission namespace, where no team holds any right."""
    build(mocks, "ack-dev")
    params = [
        r.inputs
        for r in mocks.of_type(CONFIG_MAP)
        if "team-volumes" in r.inputs["metadata"]["name"]
    ]
    assert len(params) == 2
    assert {p["metadata"]["namespace"] for p in params} == {names.ADMISSION_NAMESPACE}
    role_homes = {
        r.inputs["metadata"]["namespace"]
        for r in mocks.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")
    }
    assert names.ADMISSION_NAMESPACE not in role_homes
    for cluster_role in mocks.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"):
        if cluster_role.inputs["metadata"]["name"] == "trainstack-runner-volumes":
            assert [r["resources"] for r in cluster_role.inputs["rules"]] == [["persistentvolumes"]]
    teams = '[{"name": "x", "namespace": "%s", "quota": {"cpu": "1", "memory": "1Gi"}}]'
    with pytest.raises(ConfigError, match="not a system one"):
        build(mocks, "local", **{"trainstack:teams": teams % names.ADMISSION_NAMESPACE})


def test_a_missing_parameter_map_refuses_everything(built_once: Any) -> None:
    policy, params = built_once(ack_dev_nlp_guard)
    assert not refused(policy, params, oss_pv())
    assert refused(policy, {"data": {}}, oss_pv())
    assert refused(policy, {"data": {}}, nfs_pv())


# --- names and claims -------------------------------------------------------------------------


def test_a_team_runner_may_manage_only_the_pvs_named_after_its_namespace(built_once: Any) -> None:
    policy, params = built_once(ack_dev_nlp_guard)
    for op in ("CREATE", "UPDATE"):
        assert not refused(policy, params, oss_pv(), op)
        for other in ("vision.mnist-in-train-1a2b3c4d", "nlpx.run-in-train", "nlp-research.x"):
            pv = oss_pv(name=other)
            pv["metadata"]["name"] = other
            request = Request(
                operation=op, object=pv, old_object=pv, username=RUNNER.format("nlp"), params=params
            )
            assert Evaluator().failures(policy, request), other
    for name, allowed in (("nlp.census", True), ("vision.mnist", False), ("nlpx.run", False)):
        pv = _pv(name)
        request = Request(
            operation="DELETE", old_object=pv, username=RUNNER.format("nlp"), params=params
        )
        assert (not Evaluator().failures(policy, request)) is allowed, name


def test_a_pv_must_be_pre_bound_to_a_claim_of_the_team(built_once: Any) -> None:
    policy, params = built_once(ack_dev_nlp_guard)
    other = with_spec(oss_pv(), claimRef={"namespace": "vision", "name": "c"})
    assert refused(policy, params, other)
    assert refused(policy, params, other, "UPDATE")
    # unbound: any namespace could claim it with volumeName
    assert refused(policy, params, without(oss_pv(), "spec", "claimRef"))


def test_the_guard_leaves_other_users_alone(built_once: Any) -> None:
    policy, params = built_once(ack_dev_nlp_guard)
    for user in (
        RUNNER.format("vision"),
        "system:serviceaccount:kube-system:persistent-volume-binder",
        "system:serviceaccount:nlp:default",
        "kubernetes-admin",
    ):
        request = Request(
            operation="CREATE",
            object=_pv("vision.x", hostPath={"path": "/"}),
            username=user,
            params=params,
        )
        assert Evaluator().failures(policy, request) is None, user


# --- hostile shapes ---------------------------------------------------------------------------

OTHER_ROLE = "acs:ram::1234:role/trainstack-test-jobs-vision"
OIDC = "acs:ram::1234:oidc-provider/ack-rrsa-c0ffee"
SECRET_REFS = (
    "nodePublishSecretRef",
    "nodeStageSecretRef",
    "controllerPublishSecretRef",
    "controllerExpandSecretRef",
    "nodeExpandSecretRef",
)
# Attribute variants the driver reads as reaching past the team's folder, role or endpoint.
DRIVER_ESCAPES = {
    "PATH sets the path too": {"PATH": "/"},
    "Path sets the path too": {"Path": "/"},
    "a key with spaces folds onto path": {" path ": "/vision/"},
    "ramRole is roleName": {"ramRole": "trainstack-test-jobs"},
    "RoleName is roleName": {"RoleName": "trainstack-test-jobs-vision"},
    "roleArn and oidcProviderArn replace the role": {
        "roleArn": OTHER_ROLE,
        "oidcProviderArn": OIDC,
    },
    "the value is trimmed after the .. check": {"path": "/nlp/.. "},
    "a url elsewhere": {"url": "oss-cn-hangzhou.attacker.example.com"},
    "otherOpts with options of its own": {
        "otherOpts": f"{OSS_OTHER_OPTS[1]} -o passwd_file=/etc/kubernetes/pki/x"
    },
    "secretRef names a Secret": {"secretRef": "vision-credentials"},
    "the deprecated AccessKey attributes": {"akId": "LTAI", "akSecret": "s"},
    "fuseType": {"fuseType": "ossfs2"},
}
# Attribute variants outside the renderer's shape (refused though the driver might not care).
NOT_RENDERED = {
    "a key not in the set": {"volumeAs": "subpath"},
    "another bucket": {"bucket": "someone-elses"},
    "outside the team's prefix": {"path": "/vision/mnist"},
    "the bucket's root": {"path": "/"},
    "escaping with ..": {"path": "/nlp/../vision/x"},
    "a prefix that only starts like the team's": {"path": "/nlpx/y"},
    "another team's role": {"roleName": "trainstack-test-jobs-vision"},
    "another auth type": {"authType": "sts"},
}


def hostile_ack() -> dict[str, dict[str, Any]]:
    shapes = {what: oss_pv(**attrs) for what, attrs in {**DRIVER_ESCAPES, **NOT_RENDERED}.items()}
    for ref in SECRET_REFS:
        shapes[f"{ref} on ack"] = with_csi(oss_pv(), **{ref: {"name": "s", "namespace": "vision"}})
    shapes |= {
        "no role": without(oss_pv(), "spec", "csi", "volumeAttributes", "roleName"),
        "no path (the driver mounts /)": without(
            oss_pv(), "spec", "csi", "volumeAttributes", "path"
        ),
        "another PV's volumeHandle": with_csi(oss_pv(), volumeHandle="vision.mnist-in-x-00000000"),
        "fsType picks the fuse": with_csi(oss_pv(), fsType="ossfs2"),
        "mountOptions become ossfs options": with_spec(oss_pv(), mountOptions=["allow_other"]),
        "nodeAffinity": with_spec(oss_pv(), nodeAffinity={"required": {"nodeSelectorTerms": []}}),
        "a Block volume": with_spec(oss_pv(), volumeMode="Block"),
        "a hostPath on the node's root": _pv(NAME, hostPath={"path": "/"}),
        "a local volume": _pv(NAME, local={"path": "/mnt/disks/ssd1"}),
        "another CSI driver": _pv(
            NAME, csi={"driver": "hostpath.csi.k8s.io", "volumeHandle": NAME}
        ),
        "OSS without attributes": without(oss_pv(), "spec", "csi", "volumeAttributes"),
        "NAS outside the team's folder": nfs_pv("/vision/data"),
        "NAS at the file system's root": nfs_pv("/"),
        "NAS escaping with ..": nfs_pv("/nlp/../vision"),
        "NAS path trimmed after the check": nfs_pv("/nlp/..\t"),
        "NAS on a server not the platform's": nfs_pv(server="10.0.0.9"),
        "NAS mount options of its own": with_spec(nfs_pv(), mountOptions=["vers=4", "port=2049"]),
    }
    return shapes


HOSTILE_ACK = hostile_ack()


def ack_nlp(built_once: Any) -> tuple[dict[str, Any], dict[str, Any], TeamVolumes]:
    policy, params = built_once(ack_dev_nlp_guard)
    buckets = tuple(
        sorted(
            f"acme-trainstack-dev-{p}"
            for p in ("data", "models", "checkpoints", "code", "artifacts")
        )
    )
    shape = GuardShape.of("nlp", "nlp", True, None)
    return policy, params, TeamVolumes(shape, buckets, (NAS,), ROLE, ENDPOINT)


@pytest.mark.parametrize("what", sorted(DRIVER_ESCAPES))
def test_the_driver_would_read_each_escape_past_the_team(what: str) -> None:
    """The model says why each of these is hostile; the renderer's own shape is not."""
    attrs = oss_pv(**DRIVER_ESCAPES[what])["spec"]["csi"]["volumeAttributes"]
    assert not driver_stays_in(attrs, "nlp", ROLE, ENDPOINT)
    assert driver_stays_in(oss_pv()["spec"]["csi"]["volumeAttributes"], "nlp", ROLE, ENDPOINT)


@pytest.mark.parametrize("what", sorted(HOSTILE_ACK))
def test_the_guard_refuses_every_shape_the_renderer_does_not_write(
    built_once: Any, what: str
) -> None:
    policy, params, volumes = ack_nlp(built_once)
    assert not refused(policy, params, oss_pv()) and not refused(policy, params, nfs_pv())
    assert pv_problem(oss_pv()["spec"], volumes, NAME) is None
    pv = HOSTILE_ACK[what]
    assert refused(policy, params, pv), what
    assert refused(policy, params, pv, "UPDATE"), what
    # the policy rule that checks plans says the same (one source: volumeguard.py)
    assert pv_problem(pv["spec"], volumes, NAME) is not None, what


def hostile_kubeconfig() -> dict[str, dict[str, Any]]:
    own = oss_pv(ack=False)
    ref = "nodePublishSecretRef"
    shapes = {
        "no secret (the driver's own AccessKey)": without(own, "spec", "csi", ref),
        "another Secret of the team": with_csi(
            own, **{ref: {"name": names.PULL_SECRET_NAME, "namespace": "nlp"}}
        ),
        "the Secret of another team": with_csi(
            own, **{ref: {"name": names.OSS_SECRET_NAME, "namespace": "vision"}}
        ),
        "a RAM role": oss_pv(ack=False, authType="rrsa", roleName="trainstack-test-jobs"),
        "a url elsewhere": oss_pv(ack=False, url="attacker.example.com"),
        "Path": oss_pv(ack=False, Path="/"),
    }
    for other in SECRET_REFS[1:]:
        shapes[other] = with_csi(
            own, **{other: {"name": names.OSS_SECRET_NAME, "namespace": "vision"}}
        )
    return shapes


HOSTILE_KUBECONFIG = hostile_kubeconfig()


@pytest.mark.parametrize("what", sorted(HOSTILE_KUBECONFIG))
def test_kubeconfig_mode_admits_oss_only_with_the_teams_own_secret(
    built_once: Any, what: str
) -> None:
    policy, params = built_once(local_oss_nlp_guard)
    volumes = TeamVolumes(
        GuardShape.of("nlp", "nlp", False, names.OSS_SECRET_NAME),
        None,
        None,
        None,
        LOCAL_OSS["trainstack:ossEndpoint"],
    )
    assert not refused(policy, params, oss_pv(ack=False, bucket="anything"))
    assert pv_problem(oss_pv(ack=False)["spec"], volumes, NAME) is None
    assert refused(policy, params, HOSTILE_KUBECONFIG[what]), what
    assert pv_problem(HOSTILE_KUBECONFIG[what]["spec"], volumes, NAME) is not None, what


def test_without_an_access_key_kubeconfig_mode_admits_no_oss_volume(mocks: Any) -> None:
    """The renderer refuses oss:// there; a hand-made PV would mount with the driver's key."""
    build(mocks, "local")
    policy, params = guard(mocks, "nlp")
    assert refused(policy, params, oss_pv(ack=False))
    assert refused(
        policy, params, without(oss_pv(ack=False), "spec", "csi", "nodePublishSecretRef")
    )
    assert not refused(policy, params, nfs_pv(server="nfs.example.com"))


def test_a_team_without_its_own_key_mounts_no_oss_even_with_anothers_secret(mocks: Any) -> None:
    """Only nlp has a key: vision's guard admits no OSS PV, nlp's Secret named or not."""
    mocks.use_team_keys("local", "nlp")
    mocks.build()
    policy, params = guard(mocks, "vision")
    mine = oss_pv(ack=False, name="vision.x", path="/vision/data")
    for ref in (
        {"name": names.OSS_SECRET_NAME, "namespace": "vision"},
        {"name": names.OSS_SECRET_NAME, "namespace": "nlp"},
    ):
        assert refused(policy, params, with_csi(mine, nodePublishSecretRef=ref))


def test_named_buckets_pin_kubeconfig_modes_oss_volumes(mocks: Any) -> None:
    """With trainstack:ossBuckets, a PV on another bucket is refused (its key could not read
    it anyway: teamOssPolicies names only those buckets), one on a named bucket admitted."""
    mocks.use_team_keys("local", "vision", "nlp", **{"trainstack:ossBuckets": json.dumps([DATA])})
    mocks.build()
    policy, params = guard(mocks, "nlp")
    assert not refused(policy, params, oss_pv(ack=False))
    assert refused(policy, params, oss_pv(ack=False, bucket="anything"))


# --- the set itself ---------------------------------------------------------------------------


def test_the_allowed_keys_are_distinct_as_the_driver_folds_them() -> None:
    keys = oss_keys(GuardShape.of("t", "t", True, None))
    assert set(keys) == {*OSS_ATTRIBUTES, *OSS_RRSA_ATTRIBUTES}
    assert len(driver_reads(dict.fromkeys(keys, "v"))) == len(keys)


def _definitions() -> dict[str, Any]:
    folder = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    text = (folder / "v1.30.0-local-strict" / "_definitions.json").read_text()
    return json.loads(text)["$defs"]  # type: ignore[no-any-return]


def test_every_field_the_renderer_does_not_write_is_refused() -> None:
    """Kubernetes' CEL cannot list an object's fields, so the policy names those it refuses:
    with the renderer's, they must be all that Kubernetes 1.30 knows of a CSI source, and what
    is left of a PV's spec is volume sources (each refused by the source check) and
    volumeAttributesClassName (alpha in 1.30, dropped unless its feature gate is on)."""
    definitions = _definitions()
    csi = definitions["io.k8s.api.core.v1.CSIPersistentVolumeSource"]["properties"]
    assert set(csi) == set(oss_pv()["spec"]["csi"]) | set(CSI_NOT_RENDERED)
    spec = definitions["io.k8s.api.core.v1.PersistentVolumeSpec"]["properties"]
    rendered = {*oss_pv()["spec"], *nfs_pv()["spec"]}
    left = set(spec) - rendered - set(SPEC_NOT_RENDERED) - {"volumeAttributesClassName"}
    assert left and all(spec[f]["$ref"].endswith("VolumeSource") for f in left), left


# --- the renderer and the guard agree ---------------------------------------------------------

RUN_FILES = sorted(REPO.glob("components/*/runs/*.yaml"))


def rendered_pvs(outputs: dict[str, Any], mocks: Any, env: str) -> list[dict[str, Any]]:
    from trainstack.infra.run.rendered import for_environment
    from trainstack.render import render_run
    from trainstack.spec import load_run

    settled = {k: mocks.resolve(v)[0] for k, v in outputs.items()}
    pvs: list[dict[str, Any]] = []
    for run_file in RUN_FILES:
        try:
            completed, options = for_environment(settled, load_run(run_file), env)
            docs = render_run(completed, options=options)
        except UserError:
            continue  # a run for another environment (an oss:// binding without credentials)
        pvs += [d for d in docs if d["kind"] == "PersistentVolume"]
    return pvs


@pytest.mark.parametrize(("env", "least"), [("ack-dev", 30), ("local+oss", 15), ("local", 0)])
def test_every_pv_every_shipped_run_renders_is_admitted(mocks: Any, env: str, least: int) -> None:
    """The two halves agree: every PV the renderer makes for a team's run (names, claimRef,
    attributes, endpoint, role or Secret) passes that team's policy as the platform built it,
    and the driver reads nothing outside the team's folder from it."""
    outputs = use(mocks, env)
    pvs = rendered_pvs(outputs, mocks, "local" if env == "local+oss" else env)
    assert len(pvs) >= least
    for pv in pvs:
        namespace = pv["spec"]["claimRef"]["namespace"]
        policy, params = guard(mocks, namespace)
        assert not refused(policy, params, pv), pv["metadata"]["name"]
        attrs = (pv["spec"].get("csi") or {}).get("volumeAttributes")
        if attrs is not None:
            role = attrs.get("roleName")
            assert role in (None, params["data"].get("roleName"))
            assert driver_stays_in(attrs, namespace, role, params["data"]["ossEndpoint"])


def test_a_kubernetes_version_without_admission_policies_is_refused(mocks: Any) -> None:
    with pytest.raises(ConfigError, match=r"kubernetesVersion: expected Kubernetes 1\.30 or later"):
        build(mocks, "ack-dev", **{"trainstack:kubernetesVersion": "1.28.3-aliyun.1"})
    build(mocks, "ack-dev", **{"trainstack:kubernetesVersion": "1.31.1-aliyun.1"})


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_the_plan_shows_every_admission_policy_in_full(
    env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a platform team reviews is what the API server runs: no expression of an admission
    policy is "(known after apply)" in `trainstack plan --format json`."""
    from tests.plan.test_plan import plan_json

    monkeypatch.chdir(REPO)
    doc = plan_json("--env", env)
    policies = [r for r in doc["resources"] if r["type"] == POLICY]
    assert policies
    for policy in policies:
        spec = policy["inputs"]["spec"]
        assert isinstance(spec["validations"], list), policy["name"]
        expressions = [*spec["validations"], *spec.get("variables", [])]
        expressions += spec.get("matchConditions", [])
        for item in expressions:
            assert isinstance(item["expression"], str), (policy["name"], item)
            assert "known after apply" not in json.dumps(item), (policy["name"], item)

"""Seed rules on a Run, most of them against its (already valid) component."""

from __future__ import annotations

from typing import Any

from trainstack import suggest
from trainstack.errors import Diagnostic
from trainstack.kubedl import KINDS, EnvScheme, is_contract_env, job_kind, reserved_env
from trainstack.launcher import MIN_HANG_TIMEOUT_SECONDS
from trainstack.secretnames import credential_in
from trainstack.spec import values
from trainstack.spec.model import Component
from trainstack.spec.rules.component import value_problem
from trainstack.spec.rules.names import run_name
from trainstack.spec.rules.raw import items, section
from trainstack.spec.rules.resources import resources_rules
from trainstack.spec.schema import MAX_DATA_INPUTS, MAX_ENV
from trainstack.spec.values import looks_secret
from trainstack.yamlsource import SourceDoc


def check(doc: SourceDoc) -> list[Diagnostic]:
    """Rules that need only the run document."""
    out: list[Diagnostic] = []
    out += run_name(doc)
    out += _tags(doc)
    out += _env(doc)
    out += _spot(doc)
    out += _timeout(doc)
    out += _ports(doc)
    out += _models(doc)
    return out


def check_against(doc: SourceDoc, comp: Component, raw_params: dict[str, Any]) -> list[Diagnostic]:
    """Rules that relate the run to its component. `raw_params` maps a parameter name to its raw
    declaration (for value checks shared with the component's defaults)."""
    out: list[Diagnostic] = []
    out += _parameters(doc, comp, raw_params)
    out += _channels(doc, comp)
    out += _operator_env(doc, comp)
    out += resources_rules(doc, comp)
    out += _advanced_kind(doc, comp)
    out += _torch_elastic(doc, comp)
    return out


def _tags(doc: SourceDoc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for key, value in section(doc.data, "metadata", "tags").items():
        path = ("metadata", "tags", key)
        low = key.lower()
        if low.startswith(("aliyun", "acs:")):
            out.append(
                doc.diag(
                    path,
                    f"tag key {key!r} must not start with 'aliyun' or 'acs:'",
                    key=True,
                    code="tag",
                )
            )
        elif "http://" in low or "https://" in low:
            out.append(
                doc.diag(
                    path,
                    f"tag key {key!r} must not contain http:// or https://",
                    key=True,
                    code="tag",
                )
            )
        elif (
            not key
            or len(key) > 128
            or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in key)
        ):
            out.append(
                doc.diag(
                    path,
                    f"tag key {key!r} is not valid: expected 1-128 letters, "
                    "digits, '-', '_' and '.'",
                    key=True,
                    code="tag",
                )
            )
        if isinstance(value, str):
            if "http://" in value.lower() or "https://" in value.lower():
                out.append(
                    doc.diag(path, "tag value must not contain http:// or https://", code="tag")
                )
            elif len(value) > 256:
                out.append(
                    doc.diag(
                        path,
                        f"tag value has {len(value)} characters; at most 256",
                        hint="separate several values with commas",
                        code="tag",
                    )
                )
    return out


def _env(doc: SourceDoc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    env = section(doc.data, "spec", "env")
    secret_env = section(doc.data, "spec", "secretEnv")
    for group, names in (("env", env), ("secretEnv", secret_env)):
        for key in names:
            if not isinstance(key, str):
                continue
            path = ("spec", group, key)
            if is_contract_env(key):
                out.append(
                    doc.diag(
                        path,
                        f"{key} is set by trainstack's contract and cannot be overridden",
                        hint="use another name, or set a parameter instead",
                        key=True,
                        code="reserved-env",
                    )
                )
            elif group == "secretEnv":
                continue
            elif key in secret_env:
                out.append(
                    doc.diag(
                        path,
                        f"{key} is in both spec.env and spec.secretEnv",
                        hint="keep it in spec.secretEnv only",
                        key=True,
                        code="duplicate-env",
                    )
                )
            elif looks_secret(key):
                # Points at the name and never shows the value: it may be a live credential.
                out.append(
                    doc.diag(
                        path,
                        f"env {key} looks like a secret; reference a Kubernetes "
                        f"Secret with spec.secretEnv: {{{key}: secret-name/key}}",
                        hint=f"`trainstack run --local` then reads {key} from your own environment",
                        key=True,
                        code="secret-env",
                    )
                )
            elif isinstance(value := env[key], str) and (what := credential_in(value)):
                # Named innocently, yet a credential in clear: the same refusal; the value
                # is never shown.
                out.append(
                    doc.diag(
                        path,
                        f"env {key}'s value holds {what}; keep it in a Kubernetes Secret and "
                        f"reference it with spec.secretEnv: {{{key}: secret-name/key}}",
                        hint=f"`trainstack run --local` then reads {key} from your own environment",
                        key=True,
                        code="secret-env",
                    )
                )
    if len(env) <= MAX_ENV and len(secret_env) <= MAX_ENV and len(env) + len(secret_env) > MAX_ENV:
        out.append(
            doc.diag(
                ("spec", "secretEnv"),
                f"spec.env and spec.secretEnv have "
                f"{len(env) + len(secret_env)} variables together; at most {MAX_ENV}",
                code="limit",
            )
        )
    return out


def _operator_env(doc: SourceDoc, comp: Component) -> list[Diagnostic]:
    """Names the operator appends to a replica's env: its value would silently win over the
    run's. The same set the renderer and `trainstack env` refuse (trainstack.kubedl)."""
    out: list[Diagnostic] = []
    injected = reserved_env(comp.job_type)
    for group in ("env", "secretEnv"):
        for key in section(doc.data, "spec", group):
            if isinstance(key, str) and key in injected and not is_contract_env(key):
                out.append(
                    doc.diag(
                        ("spec", group, key),
                        f"{key} is set by KubeDL for a "
                        f"{comp.job_type} job and cannot be overridden",
                        hint="use another name",
                        key=True,
                        code="reserved-env",
                    )
                )
    return out


def _spot(doc: SourceDoc) -> list[Diagnostic]:
    spot = section(doc.data, "spec").get("spot")
    if isinstance(spot, dict) and "bidDiscount" in spot and "bidPrice" in spot:
        return [
            doc.diag(("spec", "spot"), "give either bidDiscount or bidPrice, not both", code="spot")
        ]
    return []


def _timeout(doc: SourceDoc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    # timeout → activeDeadlineSeconds (int64), keepAfterFinished → ttlSecondsAfterFinished
    # (int32): batch/v1 JobSpec and KubeDL v0.5.0's RunPolicy.
    limits = {
        "timeout": (values.INT64_MAX, "int64"),
        "keepAfterFinished": (values.INT32_MAX, "int32"),
    }
    for key, (maximum, field) in limits.items():
        value = section(doc.data, "spec").get(key)
        if isinstance(value, int) and abs(value) > values.INT64_MAX:
            continue  # the schema's one 64-bit rule says so
        if isinstance(value, int | str) and not isinstance(value, bool):
            try:
                values.duration_seconds(value, maximum, field)
            except ValueError as err:
                out.append(doc.diag(("spec", key), str(err), code="timeout"))
    out += _hang_timeout(doc)
    return out


def _hang_timeout(doc: SourceDoc) -> list[Diagnostic]:
    value = section(doc.data, "spec", "faultTolerance").get("hangTimeout")
    if not isinstance(value, int | str) or isinstance(value, bool):
        return []
    where = ("spec", "faultTolerance", "hangTimeout")
    try:
        seconds = values.duration_seconds(value)
    except ValueError as err:
        return [doc.diag(where, str(err), code="hang-timeout")]
    if seconds < MIN_HANG_TIMEOUT_SECONDS:
        return [
            doc.diag(
                where,
                f"{value!r} is shorter than {MIN_HANG_TIMEOUT_SECONDS}s, the least a replica "
                "may be silent before the launcher calls it hung",
                hint='use a duration such as 30m; see docs/local.md, "Hang detection"',
                code="hang-timeout",
            )
        ]
    return []


def _ports(doc: SourceDoc) -> list[Diagnostic]:
    adv = section(doc.data, "spec", "advanced")
    out: list[Diagnostic] = []
    text = adv.get("customPortList")
    if isinstance(text, str):
        try:
            values.port_list(text)
        except ValueError as err:
            out.append(doc.diag(("spec", "advanced", "customPortList"), str(err), code="ports"))
        if "customPortNumPerWorker" in adv:
            out.append(
                doc.diag(
                    ("spec", "advanced"),
                    "give either customPortList or customPortNumPerWorker, not both",
                    code="ports",
                )
            )
    return out


def _parameters(doc: SourceDoc, comp: Component, raw: dict[str, Any]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    given = section(doc.data, "spec", "parameters")
    for name, value in given.items():
        path = ("spec", "parameters", name)
        if name not in raw:
            out.append(
                doc.diag(
                    path,
                    f"component {comp.ref} has no parameter {name!r}",
                    hint=suggest.hint(name, raw) or "declared: " + (", ".join(raw) or "none"),
                    key=True,
                    code="unknown-parameter",
                )
            )
            continue
        problem = value_problem(raw[name], value)
        if problem:
            out.append(doc.diag(path, problem[0], hint=problem[1], code="parameter"))
    effective: dict[str, object] = {
        p.name: p.default for p in comp.parameters if p.default is not None
    }
    effective.update({k: v for k, v in given.items() if k in raw})
    if (size := values.parameter_text_bytes(effective)) > values.MAX_PARAMETER_TEXT:
        out.append(
            doc.diag(
                ("spec", "parameters"),
                f"the parameter values make {size:,} bytes of PAI_USER_ARGS or PAI_HPS; at most "
                f"{values.MAX_PARAMETER_TEXT:,} fit a replica's environment",
                hint="pass a large value as a file through an input channel; Linux refuses an "
                "environment string over 128 KiB (MAX_ARG_STRLEN, execve(2)) and Kubernetes a "
                "ConfigMap over 1 MiB",
                code="limit",
            )
        )
    for p in comp.parameters:
        if p.required and p.default is None and p.name not in given:
            out.append(
                doc.diag(
                    ("spec", "parameters"),
                    f"required parameter {p.name!r} of {comp.ref} has no value and no default",
                    code="required",
                )
            )
    return out


def _channels(doc: SourceDoc, comp: Component) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    declared = {"inputs": [c.name for c in comp.inputs], "outputs": [c.name for c in comp.outputs]}
    counts = {"mount": 0, "download": 0}
    for group in ("inputs", "outputs"):
        for name, value in section(doc.data, "spec", group).items():
            path = ("spec", group, name)
            if name not in declared[group]:
                out.append(
                    doc.diag(
                        path,
                        f"component {comp.ref} has no {group[:-1]} channel {name!r}",
                        hint=suggest.hint(name, declared[group])
                        or "declared: " + (", ".join(declared[group]) or "none"),
                        key=True,
                        code="unknown-channel",
                    )
                )
                continue
            uri = value.get("uri") if isinstance(value, dict) else value
            kind = value.get("type") if isinstance(value, dict) else None
            mode = value.get("mode", "mount") if isinstance(value, dict) else "mount"
            if not isinstance(uri, str):
                continue
            if group == "outputs" and kind == "file":
                out.append(
                    doc.diag((*path, "type"), "an output channel is a directory", code="binding")
                )
                continue
            try:
                values.binding(uri, kind=kind if isinstance(kind, str) else None)
            except ValueError as err:
                out.append(
                    doc.diag(
                        path if isinstance(value, str) else (*path, "uri"), str(err), code="binding"
                    )
                )
            if group == "inputs" and isinstance(mode, str) and mode in counts:
                counts[mode] += 1
    given_inputs = section(doc.data, "spec", "inputs")
    for c in comp.inputs:
        if c.required and c.name not in given_inputs:
            out.append(
                doc.diag(
                    ("spec", "inputs"),
                    f"required input {c.name!r} of {comp.ref} is not bound",
                    hint=f"add `{c.name}: oss://bucket/path/` under spec.inputs",
                    code="required",
                )
            )
    for mode, n in counts.items():
        if n > MAX_DATA_INPUTS:
            out.append(
                doc.diag(
                    ("spec", "inputs"),
                    f"{n} inputs use mode {mode}; at most {MAX_DATA_INPUTS}",
                    code="limit",
                )
            )
    return out


def _models(doc: SourceDoc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    seen: dict[str, int] = {}
    # Names equal but for case and '-'/'_' share $MODEL_<NAME> and the volume, PersistentVolume
    # and claim names derived from them (base-model, base_model, Base-Model): refused.
    folded: dict[str, tuple[int, str]] = {}
    for i, model in items(doc.data, "spec", "models"):
        name = model.get("name")
        if isinstance(name, str):
            var = values.env_name(name)
            if name in seen:
                out.append(
                    doc.diag(
                        ("spec", "models", i, "name"),
                        f"model name {name!r} is already used by spec.models[{seen[name]}]",
                        hint="each input model needs its own name",
                        code="duplicate-name",
                    )
                )
            elif var in folded:
                first, other = folded[var]
                out.append(
                    doc.diag(
                        ("spec", "models", i, "name"),
                        f"model names {name!r} and "
                        f"{other!r} (spec.models[{first}]) both become $MODEL_{var} "
                        "and the same volume name",
                        hint="rename one of them; names that differ only in case "
                        "or '-'/'_' collide",
                        code="env-collision",
                    )
                )
            else:
                seen[name] = i
                folded[var] = (i, name)
        if isinstance(model.get("uri"), str):
            try:
                values.binding(model["uri"])
            except ValueError as err:
                out.append(doc.diag(("spec", "models", i, "uri"), str(err), code="binding"))
    return out


def _advanced_kind(doc: SourceDoc, comp: Component) -> list[Diagnostic]:
    adv = section(doc.data, "spec", "advanced")
    out: list[Diagnostic] = []
    refused = adv.get("createSvcForAllWorkers") is True
    if refused:
        # DLC's option; KubeDL decides alone which replicas get a Service (trainstack.kubedl).
        out.append(
            doc.diag(
                ("spec", "advanced", "createSvcForAllWorkers"),
                "KubeDL has no "
                "option to create Services for all workers (v0.5.0 gives a "
                "PyTorchJob a Service for its master only), so "
                "createSvcForAllWorkers: true would do nothing",
                hint="remove it; workers reach the master through MASTER_ADDR",
                code="advanced",
            )
        )
    if adv and not job_kind(comp.job_type).custom_ports:
        keys = [
            k
            for k in ("customPortList", "customPortNumPerWorker", "createSvcForAllWorkers")
            if k in adv and not (refused and k == "createSvcForAllWorkers")
        ]
        kinds = " and ".join(t.value for t, k in KINDS.items() if k.custom_ports)
        out += [
            doc.diag(
                ("spec", "advanced", k),
                f"{k} applies only to {kinds} jobs; {comp.ref} is {comp.job_type}",
                key=True,
                code="advanced",
            )
            for k in keys
        ]
    return out


_TORCH_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch")


def _torch_elastic(doc: SourceDoc, comp: Component) -> list[Diagnostic]:
    """torchrun's agents rendezvous on the master through MASTER_ADDR/MASTER_PORT, which only
    the torch env scheme (PyTorchJob) provides."""
    spec = section(doc.data, "spec")
    if "torchElastic" not in spec:
        return []
    if job_kind(comp.job_type).env_scheme is EnvScheme.TORCH:
        if any(launcher in comp.command for launcher in _TORCH_LAUNCHERS):
            return [
                doc.diag(
                    ("spec", "torchElastic"),
                    f"{comp.ref}'s command starts its own "
                    "torch launcher; torchElastic would run it under a second one",
                    key=True,
                    code="torch-elastic",
                    hint="remove torchElastic, or let the command run the script "
                    "directly (python train.py ...)",
                )
            ]
        return []
    kinds = " and ".join(t.value for t, k in KINDS.items() if k.env_scheme is EnvScheme.TORCH)
    return [
        doc.diag(
            ("spec", "torchElastic"),
            f"torchElastic applies only to {kinds} jobs; {comp.ref} is {comp.job_type}",
            key=True,
            code="torch-elastic",
            hint="remove it; faultTolerance recreates a failed replica for any kind",
        )
    ]

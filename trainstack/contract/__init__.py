"""The in-container contract: one source of truth for what a training process sees.

`replica_env` (every variable), `config_files` (what `$PAI_CONFIG_DIR` holds), `launch_command`
(the argv) and `Topology` (where the replicas listen). The renderer and the local runner both use
this package; neither computes any of it on its own. See docs/contract.md.
"""

from trainstack.contract.env import (
    base_env,
    operator_names,
    replica_env,
    run_base_env,
    secret_env_text,
)
from trainstack.contract.errors import ContractError
from trainstack.contract.files import config_files, training_job
from trainstack.contract.framework import framework_env, tf_config
from trainstack.contract.hyper import hps_json, user_args, user_args_text, value_text
from trainstack.contract.layout import DEFAULT_ROOT, Layout
from trainstack.contract.shell import launch_command, rewrite
from trainstack.contract.topology import Topology, custom_ports
from trainstack.k8snames import dns_label, job_name

__all__ = [
    "DEFAULT_ROOT",
    "ContractError",
    "Layout",
    "Topology",
    "base_env",
    "config_files",
    "custom_ports",
    "dns_label",
    "framework_env",
    "hps_json",
    "job_name",
    "launch_command",
    "operator_names",
    "replica_env",
    "rewrite",
    "run_base_env",
    "secret_env_text",
    "tf_config",
    "training_job",
    "user_args",
    "user_args_text",
    "value_text",
]

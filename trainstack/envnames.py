"""The environment variables trainstack reads, named once: the CLI's options (cli/options.py)
and the modules that read them take the names from here, and these are every such variable
(tests/test_one_name.py keeps `TRAINSTACK_` names out of other modules; those of the in-container
contract are in trainstack.contractnames). A module of constants only, so the CLI's start-up
imports nothing for them."""

from __future__ import annotations

HOME_ENV = "TRAINSTACK_HOME"  # the state home (registry, runs, deployed-run index, backend)
BACKEND_ENV = "TRAINSTACK_BACKEND_URL"  # the Pulumi backend run stacks live in
PROJECT_ENV = "TRAINSTACK_PROJECT"  # the platform project (the folder with Pulumi.yaml)
COMPONENTS_ENV = "TRAINSTACK_COMPONENTS"  # where `component: name@version` is looked up
# `off`: `plan` neither reads nor writes its cache of the platform's outputs (docs/platform.md)
PLAN_CACHE_ENV = "TRAINSTACK_PLAN_CACHE"
# Templates of the stack names (platformnames.py): {env}; {env} and {team}
PLATFORM_STACK_ENV = "TRAINSTACK_PLATFORM_STACK"
SCOPE_STACK_ENV = "TRAINSTACK_SCOPE_STACK"
TEAM_PASSPHRASE_ENV = "TRAINSTACK_TEAM_PASSPHRASE"  # a team scope's passphrase (deploy/scope.py)
OSS_ENDPOINT_ENV = "TRAINSTACK_OSS_ENDPOINT"  # where deployed runs' logs are read from
KUBE_TIMEOUT_ENV = "TRAINSTACK_KUBE_TIMEOUT"  # seconds one Kubernetes API call may take
UI_TOKEN_ENV = "TRAINSTACK_UI_TOKEN"  # the console's access token
# When a replica counts as idle (metrics/idle.py)
IDLE_GPU_ENV = "TRAINSTACK_IDLE_GPU_PERCENT"
IDLE_CPU_ENV = "TRAINSTACK_IDLE_CPU_PERCENT"
IDLE_SECONDS_ENV = "TRAINSTACK_IDLE_SECONDS"
# A local run's log rotation (local/logcap.py)
LOG_MAX_BYTES_ENV = "TRAINSTACK_LOG_MAX_BYTES"
LOG_KEEP_ENV = "TRAINSTACK_LOG_KEEP"
# Seconds between a local run's usage samples (local/usage.py)
USAGE_SECONDS_ENV = "TRAINSTACK_USAGE_SECONDS"

# Set by trainstack for the programs it starts:
POLICY_CONTEXT_ENV = "TRAINSTACK_POLICY_CONTEXT"  # the policy pack's platform context
# A local run's processes, which the runner finds again by these (local/proctags.py)
RUN_ID_ENV = "TRAINSTACK_RUN_ID"
PROCESS_TAG_ENV = "TRAINSTACK_PROCESS_TAG"
# Per replica: what a pod's deletion kills is every process of that replica, including those
# that left its process group (torchrun starts its workers in sessions of their own).
REPLICA_TAG_ENV = "TRAINSTACK_REPLICA_TAG"

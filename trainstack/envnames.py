"""The environment variables trainstack reads for its state and inputs, named once: the CLI's
options (cli/options.py) and the modules that read them take the names from here. A module of
constants only, so the CLI's start-up imports nothing for them."""

from __future__ import annotations

HOME_ENV = "TRAINSTACK_HOME"  # the state home (registry, runs, deployed-run index, backend)
BACKEND_ENV = "TRAINSTACK_BACKEND_URL"  # the Pulumi backend run stacks live in
PROJECT_ENV = "TRAINSTACK_PROJECT"  # the platform project (the folder with Pulumi.yaml)
COMPONENTS_ENV = "TRAINSTACK_COMPONENTS"  # where `component: name@version` is looked up
# `off`: `plan` neither reads nor writes its cache of the platform's outputs (docs/platform.md)
PLAN_CACHE_ENV = "TRAINSTACK_PLAN_CACHE"

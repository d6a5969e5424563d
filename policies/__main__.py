"""The CrossGuard entry point: only builds the pack from trainstack's rules (never imported by
tests; tests call the same validate functions through trainstack.policy.crossguard)."""

import os
from pathlib import Path

from trainstack.policy.crossguard import env_values_from, pack

pack(env_values_from(Path(__file__).resolve().parent.parent, os.environ.get("TRAINSTACK_ENV")))

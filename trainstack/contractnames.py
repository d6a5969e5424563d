"""The in-container contract's variable prefixes (docs/contract.md), named once: the code that
sets them (contract/env.py), the spec rules that check a command's references, the command's
rewrite and the reserved-name check read them from here. Constants only, importable from every
layer."""

from __future__ import annotations

PAI_PREFIX = "PAI_"  # every contract variable from PAI's conventions
INPUT_PREFIX = "PAI_INPUT_"  # an input channel's path: PAI_INPUT_<NAME>
OUTPUT_PREFIX = "PAI_OUTPUT_"  # an output channel's directory: PAI_OUTPUT_<NAME>
PARAMETER_PREFIX = "PAI_HPS_"  # one hyperparameter's value: PAI_HPS_<NAME>
TRAINSTACK_PREFIX = "TRAINSTACK_"  # trainstack's own variables, reserved like PAI's
# A replica's role and index (contract/env.py); the launcher, which cannot import this module,
# reads them by the same names.
ROLE_ENV = "TRAINSTACK_ROLE"
INDEX_ENV = "TRAINSTACK_REPLICA_INDEX"
POD_IP_ENV = "TRAINSTACK_POD_IP"  # the pod's IP, for frameworks that bind to it (contract/shell.py)

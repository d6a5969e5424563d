"""Which plain scalars a YAML 1.1 reader takes for something other than a string.

kubectl and the API server read manifests with sigs.k8s.io/yaml, which is go-yaml v2: YAML 1.1
rules plus Go's own number parsing. PyYAML's dumper quotes only what PyYAML itself would
misread, so `y`, `N`, `1e-05`, `0o17`, `08` or `1:20` would go out plain and come back as bools
and numbers. `dump_yaml` quotes every string this module flags.

The patterns are the YAML 1.1 type specs (yaml.org/type/{bool,int,float,null,timestamp,merge,
value}.html), widened by go-yaml v2's resolver (resolve.go: a float form without the required
dot and exponent sign, and `strconv.ParseInt(s, 0, 64)`, which also takes `0o`/`0b` prefixes and
`_` separators). Quoting a string that would have stayed one costs nothing, so the check leans
towards quoting.
"""

from __future__ import annotations

import re

_PATTERNS = (
    # bool
    r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
    # null (the empty string too)
    r"~|null|Null|NULL|",
    # int: base 2, 8, 10, 16 and 60 (sexagesimal), `_` allowed; Go's 0o/0b/0x prefixes
    r"[-+]?0[bB][0-1_]+",
    r"[-+]?0[oO]?[0-7_]+",
    r"[-+]?(0|[1-9][0-9_]*)",
    r"[-+]?0[xX][0-9a-fA-F_]+",
    r"[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+",
    # float: base 10 (YAML 1.1's and go-yaml's forms), base 60, infinities, not-a-number
    r"[-+]?([0-9][0-9_]*)?\.[0-9_.]*([eE][-+]?[0-9_]+)?",
    r"[-+]?[0-9][0-9_]*(\.[0-9_]*)?[eE][-+]?[0-9_]+",
    r"[-+]?[0-9][0-9_]*",  # e.g. 08 or 09: not octal, so go-yaml reads a float
    r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*",
    r"[-+]?\.(inf|Inf|INF)",
    r"\.(nan|NaN|NAN)",
    # timestamp
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?"
    r"([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?",
    # merge key and the value key
    r"<<",
    r"=",
)
_NOT_A_STRING = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))


def needs_quotes(value: str) -> bool:
    """True when `value`, written as a plain scalar, would be read as anything but a string."""
    return _NOT_A_STRING.fullmatch(value) is not None

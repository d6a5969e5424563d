"""One "did you mean" helper: trainstack.suggest finds and words every
suggestion; no other module calls difflib or spells the sentence itself."""

from __future__ import annotations

import re
from pathlib import Path

from trainstack import suggest
from trainstack.infra.configread import did_you_mean as config_hint

PACKAGE = Path(suggest.__file__).resolve().parent  # trainstack/
HELPER = Path(suggest.__file__).resolve()
OWN_WORDING = re.compile(r"get_close_matches|[\"'][^\"'#]*did you mean", re.IGNORECASE)


def test_no_module_but_the_helper_finds_or_words_a_suggestion() -> None:
    found = [
        f"{p.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.resolve() != HELPER
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if OWN_WORDING.search(line)
    ]
    assert not found, "use trainstack.suggest:\n" + "\n".join(found)


def test_every_layer_gets_the_same_suggestion() -> None:
    keys = ["region", "vpcCidr", "kubeconfig"]
    assert suggest.hint("regoin", keys) == config_hint("regoin", keys) == "did you mean 'region'?"
    # Case alone is close enough everywhere (config keys used to miss it).
    assert config_hint("KUBECONFIG", keys) == "did you mean 'kubeconfig'?"
    assert suggest.hint("zzz", keys) is None
    assert suggest.hint("trian", ["train"], show="$PAI_INPUT_{}".format) == (
        "did you mean $PAI_INPUT_train?"
    )
    assert suggest.did_you_mean("trian", ["train"]) == " Did you mean 'train'?"

"""docs/quickstart.md: the newcomer's one page. README links it first; its
offline steps (a component of one's own, planned and policy-checked for the kind environment)
run as written; its kind walkthrough holds the platform steps the old one skipped."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.clirunner import Cli

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "docs" / "quickstart.md"


def section(title: str) -> str:
    text = QUICKSTART.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def commands(block: str) -> list[list[str]]:
    """The `trainstack …` lines of a section's code blocks, comments dropped."""
    out = []
    for code in re.findall(r"```sh\n(.*?)```", block, re.S):
        for line in code.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("trainstack "):
                out.append(shlex.split(line)[1:])
    return out


def test_readme_links_the_quickstart_first() -> None:
    readme = ROOT / "README.md"
    more = readme.read_text().split("## Where to read more", 1)[1]
    first = re.search(r"docs/[a-z]+\.md", more)
    assert first is not None and first.group(0) == "docs/quickstart.md"


def test_the_offline_steps_run_as_written(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "home", forbid_traceback=True)
    steps = commands(section("3. Make a component")) + commands(section("4. Plan it"))
    assert [s[0] for s in steps] == ["init", "validate", "run", "plan", "plan", "policy"]
    for argv in steps:
        if argv[0] == "run":
            continue  # a local run of the scaffold: tests/spec/test_init_verb.py runs it
        if argv[0] == "init":
            argv += ["--dir", str(tmp_path)]  # the name stays a name; the folder goes here
        else:
            argv = [str(tmp_path / a) if a.startswith("my-model") else a for a in argv]
        done = cli(*argv, "--project", ROOT) if argv[0] in ("plan", "policy") else cli(*argv)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)


def test_the_kind_walkthrough_holds_every_platform_step() -> None:
    kind = section("5. Deploy on kind")
    for step in (
        "kind create cluster",
        "trainstack kubedl mirror",
        "trainstack:registryPassword",
        "pulumi up --stack local",
        "trainstack deploy",
        "trainstack destroy",
    ):
        assert step in kind, step
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert "quickstart.md" in deploy.split("## 9. On kind", 1)[1].split("## 10.", 1)[0]

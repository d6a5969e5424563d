"""One `--format` and one `--env`: every verb with machine output takes the
shared `--format` (text|json, plus github where annotations mean something, sh for `env`) and
prints valid JSON with `--format json`; `--json` is kept as `--format json` on the verbs that
had it; a format a verb does not have is one clear error; no verb defines these options itself."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from tests.cli.test_shared_options import _commands
from tests.clirunner import ROOT, Cli
from trainstack.cli import main as cli_main
from trainstack.cli import options
from trainstack.registry import NewRun, Registry

CLI = Path(cli_main.__file__).resolve().parent
RUN = ROOT / "components" / "mnist-ddp" / "runs" / "local.yaml"
SWEEP = ROOT / "components" / "mnist-ddp" / "sweeps" / "lr-optimizer.yaml"

# Each verb with machine output, its formats, and a command line that has output to print.
# `status` and `gc` need a Pulumi backend: tests/deploy/test_deploy.py and test_gc.py run them
# with --format json.
FORMATS = {
    "validate": ("text", "json", "github"),
    "policy check": ("text", "json", "github"),
    "changed": ("text", "json"),
    "env": ("sh", "json"),
    "plan": ("text", "json", "github"),
    "runs list": ("text", "json"),
    "runs show": ("text", "json"),
    "status": ("text", "json"),
    "gc": ("text", "json"),
    "queue": ("text", "json"),
    "cost": ("text", "json"),
    "sweeps list": ("text", "json"),
    "sweeps show": ("text", "json"),
}
HAD_JSON = {"plan", "runs list", "runs show", "status", "sweeps list", "sweeps show"}
ARGV = {
    "validate": ["validate", "components/"],
    "policy check": ["policy", "check", "--env", "local"],
    "changed": ["changed", "--since", "HEAD"],
    "env": ["env", str(RUN)],
    "plan": ["plan", "--env", "local"],
    "runs list": ["runs", "list"],
    "runs show": ["runs", "show", "shown"],
    "cost": ["cost"],
    "sweeps list": ["sweeps", "list"],
    "sweeps show": ["sweeps", "show", "mnist-lr-optimizer"],
}


def _option(command: click.Command, flag: str) -> click.Option | None:
    found = [p for p in command.params if isinstance(p, click.Option) and flag in p.opts]
    return found[0] if found else None


def test_the_verbs_with_machine_output_have_the_shared_format_and_no_other() -> None:
    seen = {}
    for verb, command in _commands():
        fmt = _option(command, "--format")
        if fmt is not None:
            assert isinstance(fmt, options.Shared), f"{verb} defines its own --format"
            assert isinstance(fmt.type, click.Choice)
            seen[verb] = tuple(fmt.type.choices)
            assert fmt.default == seen[verb][0]
        alias = _option(command, "--json")
        if alias is not None:
            assert isinstance(alias, options.Shared), f"{verb} defines its own --json"
            assert fmt is not None and alias.hidden
        assert (alias is not None) == (verb in HAD_JSON), verb
    assert seen == FORMATS


def test_every_env_option_is_the_shared_one() -> None:
    with_env = []
    for verb, command in _commands():
        env = _option(command, "--env")
        if env is not None:
            assert isinstance(env, options.Shared), f"{verb} defines its own --env"
            assert env.metavar == "ENV"
            with_env.append(verb)
    assert len(with_env) > 10


@pytest.mark.parametrize("flag", ['"--env"', '"--format"', '"--json"'])
def test_the_options_are_spelled_only_in_options_py(flag: str) -> None:
    spelled = sorted(p.name for p in CLI.glob("*.py") if flag in p.read_text())
    assert spelled == ["options.py"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state home with one run and one sweep of one trial (no process ran either)."""
    from trainstack.spec.loader import load_sweep
    from trainstack.sweep import study as studies

    home = tmp_path_factory.mktemp("home")
    with Registry.open(home) as reg:
        reg.create(NewRun(name="shown", component="c", component_version="1.0.0"))
    sweep = load_sweep(SWEEP)
    studies.sweep_dir(home, sweep.name).mkdir(parents=True)
    study = studies.open_study(sweep, studies.sweep_dir(home, sweep.name))
    study.tell(study.ask(studies.distributions(sweep)), 0.5)
    return home


@pytest.mark.parametrize("verb", sorted(ARGV))
def test_format_json_prints_json(verb: str, home: Path) -> None:
    done = Cli(home, forbid_traceback=True)(*ARGV[verb], "--format", "json", timeout=120)
    assert done.code in (0, 2), done.output  # validate: exit 2 on the invalid examples, if any
    assert isinstance(json.loads(done.out), dict | list)
    if verb in HAD_JSON:
        again = Cli(home)(*ARGV[verb], "--json", timeout=120)
        assert (again.code, again.out) == (done.code, done.out)


@pytest.mark.parametrize("verb", ["runs list", "sweeps list", "env"])
def test_a_format_the_verb_lacks_is_one_clear_error(verb: str, home: Path) -> None:
    done = Cli(home, forbid_traceback=True)(*ARGV[verb], "--format", "github")
    assert done.code == 2 and done.out == ""
    have = ", ".join(repr(f) for f in FORMATS[verb])
    assert f"Error: Invalid value for '--format': 'github' is not one of {have}." in done.err


def test_json_with_another_format_is_refused(home: Path) -> None:
    done = Cli(home)("runs", "list", "--json", "--format", "text")
    assert done.code == 2 and done.out == ""
    assert "Error: --json is --format json: it cannot go with --format text" in done.err
    assert Cli(home)("runs", "list", "--json", "--format", "json").code == 0


def test_the_first_format_stays_the_default(home: Path) -> None:
    done = Cli()("env", str(RUN))
    assert done.code == 0 and "PAI_WORKING_DIR=/ml/usercode/" in done.out.splitlines()
    listed = Cli(home)("runs", "list")
    assert listed.code == 0 and listed.out.split()[:2] == ["ID", "STATUS"]


def test_a_format_outside_the_known_ones_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="'yaml'"):
        options.output_format("text", "yaml", help="")

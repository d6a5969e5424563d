"""Options several verbs share, defined once: the state home, the run stacks' backend, the
platform project, the components directory (each also reads its environment variable, so a team
sets them once), `--env`, and `--format` for every verb with machine output."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from trainstack import k8snames
from trainstack.envnames import BACKEND_ENV, COMPONENTS_ENV, HOME_ENV, PROJECT_ENV

if TYPE_CHECKING:
    from trainstack.metrics.podtimes import Stored
    from trainstack.policy.budgets import StoreReader
    from trainstack.registry.model import RunRecord


class Shared(click.Option):
    """An option defined here, for the test that no verb defines `--env` or `--format` of its
    own (tests/cli/test_output_format.py)."""


class KubeName(click.ParamType[str]):
    """The name of a Kubernetes object the manifests refer to: a namespace (a DNS-1123 label)
    or a Secret (a DNS-1123 subdomain). Checked here, as a run spec's names are, instead of
    rendering manifests the API server refuses."""

    name = "name"

    def __init__(self, what: str, *, subdomain: bool = False) -> None:
        self.what = what
        self.pattern, self.limit = (
            (k8snames.SUBDOMAIN_RE, k8snames.MAX_SUBDOMAIN)
            if subdomain
            else (k8snames.LABEL_RE, k8snames.MAX_LABEL)
        )
        self.allowed = (
            "lowercase letters, digits, '-' and '.'"
            if subdomain
            else "lowercase letters, digits and '-'"
        )

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if len(text) <= self.limit and self.pattern.fullmatch(text):
            return text
        keep = r"[^a-z0-9.-]+" if self.pattern is k8snames.SUBDOMAIN_RE else r"[^a-z0-9-]+"
        guess = re.sub(keep, "-", text.lower()).strip("-.")[: self.limit].strip("-.")
        # here, not at the top: importing trainstack.spec loads the spec loader, which verbs
        # that only define this option should not pay for at start-up
        from trainstack.suggest import did_you_mean

        valid = [guess] if guess and self.pattern.fullmatch(guess) else []
        hint = did_you_mean(text, valid)
        self.fail(
            f"{text!r} is not a {self.what}: expected {self.allowed}, starting and ending "
            f"with a letter or digit, at most {self.limit} characters.{hint}",
            param,
            ctx,
        )


class Seconds(click.FloatRange):
    """A duration in seconds. click's FloatRange lets 'nan' through (every comparison with it
    is false), which a deadline then reads as zero: a grace period of 'nan' killed at once."""

    name = "seconds"

    def __init__(self, min: float, *, finite: bool = False) -> None:
        super().__init__(min=min)
        self.finite = finite

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        got = super().convert(value, param, ctx)
        if math.isnan(got) or (self.finite and math.isinf(got)):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return got


class _FolderPath(click.Path):
    """A folder given on the command line; an empty value is refused (click's Path turned ''
    into '.', so `--home ""` silently became the current directory)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names no folder", param, ctx)
        return super().convert(value, param, ctx)


home_option = click.option(
    "--home",
    type=_FolderPath(path_type=Path, file_okay=False),
    envvar=HOME_ENV,
    help="State directory: run registry, local runs, stack index, passphrase (default "
    "$TRAINSTACK_HOME, else $XDG_STATE_HOME/trainstack or ~/.local/state/trainstack).",
)
backend_option = click.option(
    "--backend",
    default=None,
    metavar="URL",
    envvar=BACKEND_ENV,
    help="Pulumi backend of the run stacks (default $TRAINSTACK_BACKEND_URL, else a file "
    "backend in the state home).",
)
project_option = click.option(
    "--project",
    "project",
    type=click.Path(path_type=Path, file_okay=False),
    envvar=PROJECT_ENV,
    help="The platform project (the folder with Pulumi.yaml and Pulumi.<env>.yaml; default "
    "$TRAINSTACK_PROJECT, else the nearest one at or above the current directory).",
)
components_option = click.option(
    "--components",
    "components_dir",
    type=click.Path(path_type=Path, file_okay=False),
    envvar=COMPONENTS_ENV,
    help="Directory that resolves `component: name@version` references (default "
    "$TRAINSTACK_COMPONENTS).",
)


param_option = click.option(
    "-p",
    "--param",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set the run's parameter NAME for this run (repeatable), checked against the "
    "component's types and ranges as the run file's own value is.",
)


def environment(
    help: str, *, required: bool = False, dest: str = "env"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The one `--env ENV` option: an environment is a `Pulumi.<ENV>.yaml` of the platform
    project (its name is checked where it is read, trainstack/envfile.py); each verb says what it
    does with it."""
    return click.option(
        "--env", dest, cls=Shared, required=required, default=None, metavar="ENV", help=help
    )


env_option = environment("the environment, when the run is deployed in several")
team_option = click.option(
    "--team",
    "team",
    default=None,
    help="the team (or its namespace), when teams deployed runs of one name",
)
# A deployed run's logs folder on a claim or NAS artifact store, read where it is mounted here
# (deploy/logstore.py): `logs` once the pods are gone, `status` for the hang restarts, `status`
# and `wait` to keep the pods' lifetimes there, `runs` and `cost` to read them.
store_option = click.option(
    "--store",
    "store",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="where a claim or NAS artifact store is mounted on this machine (its root): a deployed "
    "run's shipped logs, restart records and pod lifetimes are read (and kept) there",
)


def stores_at(store: Path | None) -> StoreReader:
    """How the team-budget rule reads deployed runs' costs: from their stores, as far as this
    machine reaches them (`--store DIR` for a claim or NAS, OSS with credentials). The store
    readers are imported only when a team has a budget to read them for: `plan` stays light."""

    def read(records: Sequence[RunRecord]) -> Stored:
        from trainstack.deploy.podrecords import stored

        return stored(records, store)

    return read


# What a verb's output can be: `text` for people, `json` for programs, `github` for workflow
# commands (inline annotations); `sh` is `trainstack env`'s text, lines a shell can source.
FORMATS = ("text", "json", "github", "sh")


def output_format(
    *choices: str, help: str, json_alias: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The one `--format` option, passed to the verb as `fmt`: the formats this verb has (the
    first is the default), a clear error naming them for any other. `json_alias` keeps `--json`
    (hidden) as `--format json` where a verb had it; given with another `--format`, it is an
    error rather than a guess."""
    unknown = set(choices) - set(FORMATS)
    if not choices or unknown:
        raise ValueError(f"formats {sorted(unknown)} are not in {FORMATS}")

    def decorate(verb: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(verb)
        def with_format(*args: Any, **kwargs: Any) -> Any:
            if kwargs.pop("as_json", False):
                ctx = click.get_current_context()
                given = ctx.get_parameter_source("fmt") is click.core.ParameterSource.COMMANDLINE
                if given and kwargs["fmt"] != "json":
                    raise click.UsageError(
                        f"--json is --format json: it cannot go with --format {kwargs['fmt']}",
                        ctx,
                    )
                kwargs["fmt"] = "json"
            return verb(*args, **kwargs)

        option = click.option(
            "--format",
            "fmt",
            cls=Shared,
            type=click.Choice(choices),
            default=choices[0],
            show_default=True,
            help=help + ("; --json is --format json" if json_alias else ""),
        )
        decorated = option(with_format)
        if json_alias:
            alias = click.option("--json", "as_json", cls=Shared, is_flag=True, hidden=True)
            decorated = alias(decorated)
        return decorated

    return decorate

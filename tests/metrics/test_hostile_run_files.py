"""What a run's code leaves in its run directory is read as that run's, never as anything
else: a link out of the run directory is not followed, a metrics file that is JSON past
any sane bound is a reported problem, not a traceback, and values such as inf are values.

The run itself is a real `trainstack run --local` (a subprocess: it starts replicas); the verbs
that read it afterwards run in this process, whose environment is what `/proc/self/environ`
shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run

HOSTILE = Path(__file__).parent / "fixtures" / "hostile" / "component.yaml"
SECRET = "ts-secret-5b1f0c"


def hostile_run(tmp: Path, cli: Cli, attack: str, **parameters: object) -> tuple[str, str]:
    spec = write_run(tmp, HOSTILE, attack, parameters={"attack": attack, **parameters})
    done = cli("run", spec, "--local", "--no-install", env={"PULUMI_CONFIG_PASSPHRASE": SECRET})
    return str(done.code), done.out + done.err


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", SECRET)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["/proc/self/environ", "secret-file"])
def test_links_out_of_the_run_directory_are_not_followed(
    tmp_path: Path, cli: Cli, secret_env: None, target: str
) -> None:
    if target == "secret-file":
        outside = tmp_path / "outside.txt"
        outside.write_text(f'{{"hyperparameters": {{"p": "PULUMI_CONFIG_PASSPHRASE={SECRET}"}}}}\n')
        target = str(outside)
    code, summary = hostile_run(tmp_path, cli, "links", target=target)
    assert code == "0", summary
    assert SECRET not in summary
    assert "c.csv: cannot be read: a link to a place outside" in summary
    for argv in (["metrics", "links"], ["runs", "show", "links"], ["logs", "links"]):
        shown = cli.invoke(*argv)
        assert "Traceback" not in shown.output
        assert SECRET not in shown.output, argv
    assert "not followed" in cli.invoke("logs", "links").err
    report = cli.invoke("report", "links", "-o", tmp_path / "r.html")
    assert report.code == 0, report.output
    html = (tmp_path / "r.html").read_text()
    assert SECRET not in html and "PULUMI_CONFIG" not in html
    assert "a link to a place outside" in html


@pytest.mark.slow
def test_a_linked_metrics_json_is_not_read(tmp_path: Path, cli: Cli) -> None:
    outside = tmp_path / "passwd"
    outside.write_text(f"root:x:0:0:{SECRET}:/root:/bin/bash\n")
    code, summary = hostile_run(tmp_path, cli, "metrics-link", target=str(outside))
    assert code == "0", summary
    assert SECRET not in summary
    shown = cli.invoke("metrics", "metrics-link")
    assert SECRET not in shown.output
    assert "metrics.json: cannot be read: a link to a place outside" in shown.err


def test_a_link_inside_the_run_directory_is_still_read(tmp_path: Path) -> None:
    from trainstack.regularfile import OutsideRootError, read_within

    (tmp_path / "run" / "metrics").mkdir(parents=True)
    (tmp_path / "run" / "real.csv").write_text("x\n")
    (tmp_path / "run" / "metrics" / "in.csv").symlink_to("../real.csv")
    assert read_within(tmp_path / "run", tmp_path / "run" / "metrics" / "in.csv") == b"x\n"
    (tmp_path / "run" / "metrics" / "out.csv").symlink_to(tmp_path / "secret")
    (tmp_path / "secret").write_text(SECRET)
    with pytest.raises(OutsideRootError):
        read_within(tmp_path / "run", tmp_path / "run" / "metrics" / "out.csv")
    # The folder itself a link out: everything below it is outside.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "metrics.json").write_text(SECRET)
    (tmp_path / "run" / "m2").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutsideRootError):
        read_within(tmp_path / "run", tmp_path / "run" / "m2" / "metrics.json")


def test_a_diagnostic_quotes_a_short_escaped_excerpt_only(tmp_path: Path) -> None:
    from trainstack.metrics import series

    root = tmp_path / "run"
    (root / "metrics").mkdir(parents=True)
    (root / "metrics" / "metrics.json").write_text(
        '{"id": "x", "metas": [{"name": "c", "x": "step", "ys": ["loss"]}]}'
    )
    (root / "metrics" / "c.csv").write_text("\x1b[2J" + "A" * 500 + SECRET + "\nstep,loss\n")
    [problem] = series.read(root / "metrics", root=root).problems
    text = problem.render()
    assert SECRET not in text and "\x1b" not in text and "\\x1b" in text
    assert "A" * 41 not in text


@pytest.mark.slow
def test_inf_nan_and_huge_values_are_shown_not_crashed_on(tmp_path: Path, cli: Cli) -> None:
    """A diverged loss prints inf; metrics, runs show, report and --png read it."""
    code, summary = hostile_run(tmp_path, cli, "inf")
    assert code == "0", summary
    shown = cli.invoke("metrics", "inf")
    assert shown.code == 0, shown.output
    rows = {line.split()[0]: line.split()[1:] for line in shown.out.splitlines()[1:]}
    assert rows["c/loss"][:4] == ["inf", "2", "1.5", "1"]  # last inf; best the finite 1.5
    assert rows["c/acc"][:4] == ["1e+308", "3", "1e+308", "3"]
    for argv in (
        ["runs", "show", "inf"],
        ["report", "inf", "-o", tmp_path / "r.html"],
        ["metrics", "inf", "--png", tmp_path / "png"],
    ):
        done = cli.invoke(*argv)
        assert done.code == 0, (argv, done.output)
    assert (tmp_path / "png" / "c.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("attack", "problem"),
    [("deep", "nested deeper than 64 levels"), ("digits", "a number of more than 100 digits")],
)
def test_hostile_metrics_json_never_changes_the_runs_outcome(
    tmp_path: Path, cli: Cli, attack: str, problem: str
) -> None:
    """A 100,000-deep array or a 5,000-digit integer is a reported problem."""
    code, summary = hostile_run(tmp_path, cli, attack)
    assert code == "0", summary
    assert "Traceback" not in summary
    assert f"metrics.json: {problem}" in summary
    for argv in (["metrics", attack], ["runs", "show", attack]):
        done = cli.invoke(*argv)
        assert "Traceback" not in done.output and problem in done.output, argv


@pytest.mark.slow
def test_chart_text_is_plain_text_and_wide_axes_are_drawn(tmp_path: Path, cli: Cli) -> None:
    """`$\\frac{$` in a description, `$^$` as a unit, x from -1e308 to 1e308."""
    from trainstack.metrics import series
    from trainstack.metrics.draw import chart_figure

    code, summary = hostile_run(tmp_path, cli, "mathtext")
    assert code == "0", summary
    for argv in (
        ["metrics", "mathtext", "--png", tmp_path / "png"],
        ["report", "mathtext", "-o", tmp_path / "r.html"],
    ):
        done = cli.invoke(*argv)
        assert done.code == 0, (argv, done.output)
    assert (tmp_path / "png" / "c.png").is_file() and (tmp_path / "png" / "wide.png").is_file()
    [run_dir] = (cli.home / "runs").iterdir()
    chart = series.read(run_dir / "metrics").chart("c")
    assert chart is not None
    fig = chart_figure(chart)
    [ax] = fig.axes
    assert ax.get_title() == "c\n$\\frac{$ of $x$"
    assert ax.title.get_parse_math() is False and ax.yaxis.label.get_text() == "loss ($^$)"

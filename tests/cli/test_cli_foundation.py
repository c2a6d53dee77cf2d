"""CLI: version, sensitivity table/JSON, and user mistakes → one line on stderr, exit status 2."""

import json

import pytest
from typer.testing import CliRunner

from dpcloak import __version__
from dpcloak.cli import app
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy.sensitivity import l2_sensitivity

runner = CliRunner()


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.stdout


def test_sensitivity_json_reports_exact_value():
    result = runner.invoke(app, ["sensitivity", "--model", "heat1d", "--n", "100", "--m", "50", "--t", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {"delta2", "bound", "condition_number"} <= payload.keys()
    assert payload["delta2"] == pytest.approx(l2_sensitivity(heat_kernel_1d(100, 50, 0.1)), rel=1e-14)
    assert payload["bound"] >= payload["delta2"]


@pytest.mark.parametrize("graph", ["complete", "star", "path", "sbm"])
def test_sensitivity_graph_models(graph):
    result = runner.invoke(
        app,
        [
            "sensitivity",
            "--model",
            "graph",
            "--graph",
            graph,
            "--nodes",
            "30",
            "--tau",
            "0.5",
            *(["--p-in", "0.5", "--p-out", "0.05"] if graph == "sbm" else []),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert 0 < payload["delta2"] <= payload["bound"] * (1 + 1e-10)


def test_sensitivity_table_output():
    result = runner.invoke(app, ["sensitivity"])
    assert result.exit_code == 0 and "Δ2 (exact)" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sensitivity", "--n", "0"], "n must be an integer >= 1, got 0"),
        (["sensitivity", "--t", "-1"], "t must lie in (0, inf)"),
        (["sensitivity", "--model", "heat3d"], "--model must be one of heat1d, graph"),
        (["sensitivity", "--model", "graph", "--graph", "ring"], "--graph must be one of"),
        (["sensitivity", "--model", "graph", "--graph", "sbm", "--p-in", "1.5"], "--p-in must lie in [0, 1]"),
        (
            ["sensitivity", "--model", "graph", "--graph", "sbm", "--nodes", "40", "--p-in", "0.0", "--p-out", "0.0"],
            "must be connected",
        ),
        (["sensitivity", "--alpha", "-2"], "alpha must lie in (0, inf)"),
    ],
)
def test_user_mistakes_exit_2_with_message_not_traceback(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert ("Traceback" not in result.output and result.exception is None) or isinstance(result.exception, SystemExit)


def test_long_error_messages_stay_on_one_line(tmp_path):
    """A message naming a long path is not wrapped at the console width (80 columns off a terminal)."""
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 6)
    result = runner.invoke(app, ["deploy", "show", str(deep)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(deep) in lines[0], result.stderr


def test_sensitivity_json_says_which_bound_has_a_proof():
    """Issue 31: ``bound`` stood next to ``proved_bound`` without saying which is which."""
    from dpcloak.privacy.sensitivity import heat1d_bound, heat1d_bound_published

    heat = json.loads(runner.invoke(app, ["sensitivity", "--n", "40", "--m", "20", "--t", "0.05", "--json"]).stdout)
    assert heat["bound_proved"] is False and "gap" in heat["bound_note"]
    assert heat["bound"] == pytest.approx(heat1d_bound_published(40, 20, 0.05).value, rel=1e-12)
    assert heat["proved_bound"] == pytest.approx(heat1d_bound(40, 20, 0.05).value, rel=1e-12)
    assert heat["proved_bound_source"] == heat1d_bound(40, 20, 0.05).source
    assert heat["delta2"] <= heat["proved_bound"]
    graph = json.loads(runner.invoke(app, ["sensitivity", "--model", "graph", "--graph", "path", "--nodes", "20",
                                           "--json"]).stdout)
    assert graph["bound_proved"] is True and graph["proved_bound"] == graph["bound"] >= graph["delta2"]

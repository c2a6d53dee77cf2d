"""The audit suite over dpcloak's own mechanisms and the ``dpcloak audit`` command.

Oracle: the verdicts the suite must reach — shipped mechanisms ACCEPTED, deliberately broken
variants (noise halved, sensitivity underestimated) REJECTED. The fast Gaussian and Laplace groups
run here; the whole suite runs in ``dpcloak audit`` (timed in the issue report).
"""

import json

import pytest
from typer.testing import CliRunner

from dpcloak.audit.suite import run_suite, suite_cases
from dpcloak.cli import app

runner = CliRunner()


def test_every_group_is_present_and_has_broken_variants():
    cases, missing, errors = suite_cases()
    assert missing == [] and errors == []
    names = " | ".join(c.mechanism for c in cases)
    for group in ("Gaussian (analytic)", "Gaussian (classic)", "Gaussian (paper)", "Laplace", "discrete Laplace",
                  "discrete Gaussian", "heatmap pyramid level", "per-sensor privatizer"):
        assert group in names
    broken = [c for c in cases if c.mechanism.startswith("BROKEN")]
    assert len(broken) >= 6 and all(c.expected == "REJECT" for c in broken)
    assert all(c.expected == "ACCEPT" for c in cases if not c.mechanism.startswith("BROKEN"))


@pytest.mark.parametrize("select", ["Gaussian (analytic)", "Laplace,", "Laplace calibrated"])
def test_fast_groups_reach_the_required_verdicts(select):
    report = run_suite(rng=0, select=select)
    assert report.rows
    for row in report.rows:
        assert row.verdict == row.expected, row


def test_cli_json_output():
    result = runner.invoke(app, ["audit", "--select", "BROKEN Laplace, noise", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["passed"] is True
    [row] = payload["rows"]
    assert row["verdict"] == "REJECT" and row["expected"] == "REJECT" and row["queries"] > 1000


def test_cli_table_output():
    result = runner.invoke(app, ["audit", "--select", "Gaussian (paper)"])
    assert result.exit_code == 0, result.output
    assert "ACCEPT" in result.stdout and "Theorem 10.5" in result.stdout


@pytest.mark.parametrize(("args", "match"), [(["--seed", "-1"], "--seed"), (["--select", "no such thing"], "matched")])
def test_cli_bad_input_exits_2_without_traceback(args, match):
    result = runner.invoke(app, ["audit", *args])
    assert result.exit_code == 2
    assert match in result.output and "Traceback" not in result.output

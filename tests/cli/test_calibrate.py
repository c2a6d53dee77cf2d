"""``dpcloak calibrate`` and the privatizing ``dpcloak demo``.

Oracles: the library (l2_sensitivity, GaussianMechanism) and Gilbert & McMillan's printed formula for the
paper calibration; user mistakes give one line on stderr, exit status 2, no traceback.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy import GaussianMechanism, l2_sensitivity

runner = CliRunner()
BASE = ["calibrate", "--model", "heat1d", "--n", "100", "--m", "50", "--t", "0.1", "--epsilon", "1", "--delta", "0.1"]
DELTA2 = l2_sensitivity(heat_kernel_1d(100, 50, 0.1))


@pytest.mark.parametrize("calibration", ["analytic", "paper"])
def test_json_reports_delta2_and_sigma(calibration: str) -> None:
    result = runner.invoke(app, [*BASE, "--calibration", calibration, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["calibration"] == calibration
    assert payload["delta2"] == pytest.approx(DELTA2, rel=1e-14)
    expected = GaussianMechanism(epsilon=1, delta=0.1, sensitivity=DELTA2, calibration=calibration).sigma
    assert payload["sigma"] == pytest.approx(expected, rel=1e-14)
    if calibration == "paper":
        assert payload["sigma"] == pytest.approx(2 * math.log(1.25 / 0.1) * DELTA2, rel=1e-14)


def test_table_shows_all_calibrations_and_classic_refusal() -> None:
    result = runner.invoke(app, BASE)
    assert result.exit_code == 0, result.output
    for word in ("analytic", "classic", "paper", "refused", "Δ2"):
        assert word in result.stdout
    payload = json.loads(runner.invoke(app, [*BASE, "--json"]).stdout)
    rows = {r["calibration"]: r for r in payload["calibrations"]}
    assert rows["classic"]["sigma"] is None and rows["analytic"]["sigma"] < rows["paper"]["sigma"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--epsilon", "0"], "epsilon"),
        (["--epsilon", "-1"], "epsilon"),
        (["--delta", "1.5"], "delta"),
        (["--delta", "0"], "delta"),
        (["--calibration", "magic"], "calibration"),
        (["--calibration", "classic"], "classic"),
        (["--alpha", "0"], "alpha"),
    ],
)
def test_bad_inputs_exit_2_without_traceback(args: list[str], needle: str) -> None:
    result = runner.invoke(app, [*BASE, *args])
    assert result.exit_code == 2
    assert "Traceback" not in result.output and needle in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_demo_reports_sigma(tmp_path) -> None:
    result = runner.invoke(app, ["demo", "--n", "40", "--m", "20", "--t", "0.1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    sigma = GaussianMechanism(epsilon=1, delta=0.1, sensitivity=l2_sensitivity(heat_kernel_1d(40, 20, 0.1))).sigma
    assert "σ" in result.stdout and f"{sigma:.6g}" in result.stdout

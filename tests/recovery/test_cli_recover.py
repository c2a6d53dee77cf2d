"""``dpcloak recover``: CSV in, BPDN estimate out; errors are one line with exit status 2."""

from __future__ import annotations

import csv
import json

import numpy as np
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.models import heat_kernel_1d
from dpcloak.recovery import bpdn

runner = CliRunner()


def _write(path, positions, values, header=True):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        if header:
            w.writerow(["position", "reading"])
        w.writerows(zip(positions, values, strict=True))


def _instance():
    model = heat_kernel_1d(100, 50, 0.1)
    f0 = np.zeros(100)
    f0[49] = 1.0
    y = model.matvec(f0) + 0.05 * np.random.default_rng(0).standard_normal(50)
    return model, y


def test_recover_matches_library_and_writes_estimate(tmp_path):
    model, y = _instance()
    readings = tmp_path / "r.csv"
    _write(readings, model.sensor_positions[::-1], y[::-1])  # any row order
    out = tmp_path / "est.csv"
    result = runner.invoke(app, ["recover", "--readings", str(readings), "--sigma", "0.05", "--out", str(out),
                                 "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    lib = bpdn(model, y, sigma=0.05)
    assert payload["converged"] and payload["objective"] == lib.objective
    est = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_allclose(est[:, 1], lib.x, rtol=0, atol=1e-12)
    assert abs(payload["top"][0]["location"] - 0.5) <= 0.02


def test_recover_table_output(tmp_path):
    model, y = _instance()
    readings = tmp_path / "r.csv"
    _write(readings, model.sensor_positions, y, header=False)
    result = runner.invoke(app, ["recover", "--readings", str(readings), "--radius", "0.5"])
    assert result.exit_code == 0, result.output
    assert "radius (explicit)" in result.output


def test_recover_errors_are_one_line(tmp_path):
    model, y = _instance()
    readings = tmp_path / "r.csv"
    _write(readings, model.sensor_positions, y)
    for args, needle in [
        (["--sigma", "0.05", "--m", "40"], "40 sensors"),
        ([], "exactly one"),
        (["--sigma", "-1"], "sigma"),
    ]:
        result = runner.invoke(app, ["recover", "--readings", str(readings), *args])
        assert result.exit_code == 2
        assert needle in result.output and "Traceback" not in result.output
    bad = tmp_path / "bad.csv"
    _write(bad, model.sensor_positions + 0.3, y)
    result = runner.invoke(app, ["recover", "--readings", str(bad), "--sigma", "0.05"])
    assert result.exit_code == 2 and "matches no sensor" in result.output
    result = runner.invoke(app, ["recover", "--readings", str(tmp_path / "missing.csv"), "--sigma", "0.05"])
    assert result.exit_code == 2 and "--readings" in result.output and "no such file" in result.output

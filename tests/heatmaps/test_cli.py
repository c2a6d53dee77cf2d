"""``dpcloak heatmap`` end to end on a small CSV, and its error handling (one line, exit status 2)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dpcloak.cli import app


@pytest.fixture
def csv_path(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 600
    path = tmp_path / "points.csv"
    pd.DataFrame({"user": rng.integers(0, 60, n), "lat": 40 + rng.random(n) * 0.5,
                  "lon": -74 + rng.random(n) * 0.5}).to_csv(path, index=False)
    return path


def test_heatmap_writes_png_and_npy(csv_path, tmp_path):
    out, npy = tmp_path / "h.png", tmp_path / "h.npy"
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "64",
                                   "--out", str(out), "--npy", str(npy), "--seed", "3", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["users"] == 60 and summary["points"] == 600 and summary["epsilon"] <= 1.0
    agg = np.load(npy)
    assert agg.shape == (64, 64) and agg.min() >= 0 and agg.sum() == pytest.approx(1.0)
    assert out.stat().st_size > 0


@pytest.mark.parametrize("args", [["--epsilon", "0"], ["--epsilon", "1", "--resolution", "100"],
                                  ["--epsilon", "1", "--bbox", "1,2,3"], ["--epsilon", "1", "--user", "nobody"]])
def test_heatmap_errors_are_one_line(csv_path, args):
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), *args])
    assert res.exit_code == 2
    assert "Traceback" not in res.output


def test_heatmap_secure_noise_option(csv_path, tmp_path):
    npy = tmp_path / "s.npy"
    args = ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "16", "--noise", "secure", "--npy", str(npy),
            "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    agg = np.load(npy)
    assert agg.shape == (16, 16) and agg.min() >= 0 and agg.sum() == pytest.approx(1.0)
    bad = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--noise", "double"])
    assert bad.exit_code == 2 and "noise" in bad.output and "Traceback" not in bad.output

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


BOX = ["--bbox", "-74,40,-73.5,40.5"]


def test_heatmap_writes_png_and_npy(csv_path, tmp_path):
    out, npy = tmp_path / "h.png", tmp_path / "h.npy"
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "64", *BOX,
                                   "--out", str(out), "--npy", str(npy), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["epsilon"] <= 1.0 and summary["noise"] == "secure" and "exact discrete" in summary["mechanism"]
    agg = np.load(npy)
    assert agg.shape == (64, 64) and agg.min() >= 0 and agg.sum() == pytest.approx(1.0)
    assert out.stat().st_size > 0


@pytest.mark.parametrize("args", [["--epsilon", "0"], ["--epsilon", "1", "--resolution", "100"],
                                  ["--epsilon", "1", "--bbox", "1,2,3"], ["--epsilon", "1", "--user", "nobody"],
                                  ["--epsilon", "1", "--seed", "3"], ["--epsilon", "1", "--noise", "double"]])
def test_heatmap_errors_are_one_line(csv_path, args):
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), *(BOX if "--bbox" not in args else []), *args])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and "error:" in res.output


def test_extent_is_never_taken_from_the_data(csv_path):
    # Issue 12 defect 8: a bounding box derived from the points is a function of the data: refused, not used.
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1"])
    assert res.exit_code == 2 and "public" in res.output and "--bbox" in res.output


def test_printed_release_is_identical_for_neighbouring_data(csv_path, tmp_path):
    # Issue 12 defect 8: what the command prints is DP output + public parameters. Oracle: for neighbouring files
    # (one user's rows removed) with the same simulated noise, the printed summaries are identical; the exact
    # counts appear only under --diagnostics, labelled NOT private.
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(csv_path)
    other = tmp_path / "neighbour.csv"
    frame[frame.user != frame.user.iloc[0]].to_csv(other, index=False)
    args = ["--epsilon", "1", "--resolution", "16", *BOX, "--seed", "3", "--simulation", "--json"]
    a = CliRunner().invoke(app, ["heatmap", str(csv_path), *args])
    b = CliRunner().invoke(app, ["heatmap", str(other), *args])
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    assert json.loads(a.stdout) == json.loads(b.stdout)
    c = CliRunner().invoke(app, ["heatmap", str(csv_path), *args, "--diagnostics"])
    curator = json.loads(c.stdout)["curator_not_private"]
    assert curator["users"] == 60 and curator["points"] == 600 and "NOT private" in curator["label"]
    text = CliRunner().invoke(app, ["heatmap", str(csv_path), *args[:-1]])
    assert "users" not in text.stdout and "600" not in text.stdout


def test_heatmap_float_noise_is_explicit(csv_path, tmp_path):
    npy = tmp_path / "s.npy"
    args = ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "16", *BOX, "--noise", "float", "--seed", "1",
            "--npy", str(npy), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "idealised real-valued noise" in json.loads(res.stdout)["mechanism"]
    agg = np.load(npy)
    assert agg.shape == (16, 16) and agg.min() >= 0 and agg.sum() == pytest.approx(1.0)

"""``dpcloak demo``: the full Gilbert & McMillan pipeline (model → Δ2 → σ → private readings → BPDN → EMD → PNG)."""

from __future__ import annotations

import re

import numpy as np
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.domains import Line
from dpcloak.metrics import emd
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy.local import SensorPrivatizer
from dpcloak.privacy.sensitivity import l2_sensitivity
from dpcloak.recovery import bpdn

runner = CliRunner()


def test_demo_runs_the_pipeline_and_saves_the_figure(tmp_path):
    result = runner.invoke(app, ["demo", "--out", str(tmp_path), "--seed", "3"])
    assert result.exit_code == 0, result.output
    pngs = list(tmp_path.glob("*.png"))
    assert len(pngs) == 1 and pngs[0].stat().st_size > 5000
    assert str(pngs[0].name) in result.output.replace("\n", "")
    # the reported EMD is the library's, recomputed independently from the same seed
    model = heat_kernel_1d(100, 50, 0.1)
    f0 = np.zeros(100)
    f0[49] = 1.0
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, sensitivity=l2_sensitivity(model), noise="float")
    y = priv.privatize_all(model.matvec(f0), rng=np.random.default_rng(3))
    expected = emd(f0, bpdn(model, y, sigma=priv.mechanism.sigma).x, Line(100))
    match = re.search(r"EMD\(.*?│\s+([0-9.e+-]+)\s+│", result.output)
    assert match is not None and float(match.group(1)) == float(f"{expected:.4g}")
    assert expected < 0.1


def test_demo_rejects_a_source_outside_the_interval(tmp_path):
    result = runner.invoke(app, ["demo", "--out", str(tmp_path), "--source", "1.5"])
    assert result.exit_code == 2 and "--source" in result.output


def test_the_default_delta_is_flagged_as_weak_and_a_small_one_is_not(tmp_path):
    """Issue 31: the demo's default delta = 0.1 (the paper's illustration) is weak and said so."""
    import json

    weak = json.loads(runner.invoke(app, ["demo", "--out", str(tmp_path), "--json"]).stdout)
    assert weak["delta"] == 0.1 and "weak" in weak["warning"] and "--delta 1e-6" in weak["warning"]
    text = runner.invoke(app, ["demo", "--out", str(tmp_path)]).stdout
    assert "note: delta = 0.1 is weak" in " ".join(text.split())
    strong = json.loads(runner.invoke(app, ["demo", "--out", str(tmp_path), "--json", "--delta", "1e-6"]).stdout)
    assert strong["warning"] is None

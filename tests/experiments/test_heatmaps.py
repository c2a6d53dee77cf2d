"""Ghazi et al. experiments in --quick mode: output files, metric ranges from their definitions, claims present."""

from __future__ import annotations

import pytest

from dpcloak.experiments import get_experiment, run_experiment
from dpcloak.experiments.heatmaps import METHODS
from dpcloak.experiments.plotting import figure_problems


def _run(exp_id, tmp_path):
    res = run_experiment(exp_id, quick=True, workers=1, progress=False, out=tmp_path)
    assert all(p.exists() and p.stat().st_size > 0 for p in res.files)
    assert res.n_failed == 0 and res.claims
    assert figure_problems(get_experiment(exp_id).plot(list(res.rows))) == []  # labelled, legible, no empty panel
    return res


@pytest.mark.parametrize("exp_id", ["heatmaps-fig1", "heatmaps-fig11"])
def test_metric_experiments(exp_id, tmp_path):
    res = _run(exp_id, tmp_path)
    for r in res.rows:
        assert r["emd"] == r["emd_ours"]
        assert 0.0 < r["sparsity"] <= 1.0
        for name in METHODS:
            # SIM ∈ [0, 1], CC ∈ [−1, 1], KL ≥ 0, EMD ∈ [0, 2(1 − 1/Δ)] (ℓ1 diameter of G_Δ).
            assert 0.0 <= r[f"sim_{name}"] <= 1.0 + 1e-12
            assert -1.0 - 1e-12 <= r[f"cc_{name}"] <= 1.0 + 1e-12
            assert r[f"kl_{name}"] >= -1e-12
            assert 0.0 <= r[f"emd_{name}"] <= 2.0


def test_visual_panel(tmp_path):
    res = _run("heatmaps-fig3", tmp_path)
    assert {r["epsilon"] for r in res.rows} == {1.0, 5.0}


def test_shuffle_experiment(tmp_path):
    res = _run("heatmaps-fig12", tmp_path)
    shuffled = [r for r in res.rows if r["B"] > 0]
    # r·m messages per user, each ⌈log₂(mq)⌉ bits: the bit count is a multiple of the message count.
    for r in shuffled:
        assert r["bits_per_user"] % r["messages_per_user"] == 0
        assert 0.0 <= r["emd_shuffle"] <= 2.0


def test_w_rule_experiment(tmp_path):
    res = _run("heatmaps-wrule", tmp_path)
    for r in res.rows:
        # Oracle: the rule by hand with n̂ = n = 50, Δ = 64: ε = 1: ε n̂ = 50, 80·0.05^0.6 = 13 → floor 50;
        # ε = 10: 80·0.5^0.6 = 52.8 → 50.
        assert r["w_rule"] == {1.0: 50, 10.0: 50}[r["epsilon"]] and r["emd"] == r["emd_rule"]
        assert all(0.0 <= r[k] <= 2.0 for k in r if k.startswith("emd_"))

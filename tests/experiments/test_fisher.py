"""Farokhi & Sandberg experiments in --quick mode: output files and invariants from the math.

Oracles: Example 4's printed closed forms, the exact Gaussian DP profile, the closed-form
Fisher informations 2/ϑ (Laplace) and 1/ϑ (Gaussian), and the cos² density.
"""

from __future__ import annotations

import csv
import math

import pytest

from dpcloak.experiments import get_experiment, run_experiment
from dpcloak.experiments.plotting import figure_problems


def _run(exp_id, tmp_path):
    res = run_experiment(exp_id, quick=True, workers=1, progress=False, out=tmp_path)
    assert all(p.exists() and p.stat().st_size > 0 for p in res.files)
    assert res.n_failed == 0
    assert figure_problems(get_experiment(exp_id).plot(list(res.rows))) == []  # labelled, legible, no empty panel
    with res.files[0].open() as handle:
        assert len(list(csv.DictReader(handle))) == len(res.rows)
    return res, {c.claim: c.verdict for c in res.claims}


def test_fig1(tmp_path):
    res, verdicts = _run("fisher-fig1", tmp_path)
    policy = [r for r in res.rows if r["kind"] == "policy"]
    for r in policy:
        assert r["c_quadrature"] == pytest.approx(r["c_closed_form"], rel=1e-8)
    for r in (r for r in res.rows if r["kind"] == "cost"):
        assert r["cost_cos2"] < r["cost_corollary4"]  # the documented discrepancy
    assert verdicts["Figure 1 (bottom): for p ∝ exp(−x) the policy is independent of x"] == "confirmed"


def test_fig2(tmp_path):
    res, _ = _run("fisher-fig2", tmp_path)
    for r in res.rows:
        if r["cond16_published"]:
            assert r["exact_delta"] <= r["delta"]
    assert any(r["cond16_published"] for r in res.rows) and not all(r["cond16_published"] for r in res.rows)


def test_example4(tmp_path):
    res, verdicts = _run("fisher-example4", tmp_path)
    for r in res.rows:
        assert r["quality"] == pytest.approx(r["quality_closed_form"], rel=1e-9)
        assert r["error_bound"] == pytest.approx(r["error_closed_form"], rel=1e-9)
        assert r["quality_corrected"] == pytest.approx(r["quality"] / 2)
    assert verdicts["Example 4: Q = O(T√T / √ϱ)"] == "confirmed"
    assert verdicts["Example 4: E‖x̂₀ − x₀‖² = O(1/(T√T√ϱ))"] == "not confirmed"


def test_laplace_gaussian(tmp_path):
    res, _ = _run("fisher-laplace-gaussian", tmp_path)
    for r in res.rows:
        assert r["laplace_fisher_quadrature"] == pytest.approx(2 / r["theta"], rel=1e-6)
        assert r["gaussian_fisher_quadrature"] == pytest.approx(1 / r["theta"], rel=1e-6)
        assert 1 < r["ratio_min"] <= r["ratio_max"] <= 2 + 1e-12
        assert r["laplace_epsilon"] == pytest.approx(0.4 * math.sqrt(2 / r["theta"]))


def test_problem2(tmp_path):
    res, _ = _run("fisher-problem2", tmp_path)
    rows = sorted(res.rows, key=lambda r: r["n_points"])
    assert rows[0]["relative_l2_error"] > rows[-1]["relative_l2_error"]
    assert all(r["fisher_information"] < 4 * math.pi**2 for r in rows)

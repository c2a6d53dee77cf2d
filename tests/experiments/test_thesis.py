"""Thesis chapter 8 experiments in --quick mode: output structure and invariants from the math."""

from __future__ import annotations

import csv
import math

import pytest

from dpcloak.experiments import get_experiment, run_experiment
from dpcloak.experiments.plotting import figure_problems


def _run(exp_id, tmp_path):
    res = run_experiment(exp_id, quick=True, workers=1, progress=False, out=tmp_path)
    assert all(p.exists() and p.stat().st_size > 0 for p in res.files)
    with res.files[0].open() as handle:
        assert len(list(csv.DictReader(handle))) == len(res.rows)
    report = res.files[2].read_text()
    assert "dpcloak version" in report and "seed: 0" in report
    assert report.count("\n| ") == len(res.claims) + 1  # header + one line per claim
    assert figure_problems(get_experiment(exp_id).plot(list(res.rows))) == []  # labelled, legible, no empty panel
    return res


def test_table82_closed_forms(tmp_path):
    res = _run("thesis-table8.2", tmp_path)
    assert res.n_failed == 0
    for r in res.rows:  # oracle: the exact eigendecomposition agrees with the corrected closed forms
        assert r["corrected"] == pytest.approx(r["delta2"], rel=1e-9)
        if r["graph"] == "complete":  # printed form is sqrt(2 e^{-tau n}) = exact * e^{tau n / 2}
            assert r["published"] == pytest.approx(r["delta2"] * math.exp(r["tau"] * r["n"] / 2), rel=1e-9)
        elif r["n"] == 3:  # the printed star formula is exact when there is one other leaf
            assert r["rel_err_published"] < 1e-9
    verdicts = {c.claim.split(":")[0]: c.verdict for c in res.claims}
    assert verdicts["Table 8.2, complete graph"] == "not confirmed"


def test_fig82_is_fig5(tmp_path):
    res = _run("thesis-fig8.2", tmp_path)
    assert {r["panel"] for r in res.rows} == {"a", "b", "c"}


def test_fig81_profile(tmp_path):
    res = _run("thesis-fig8.1", tmp_path)
    assert all(r["locations"] == "0.24 0.76" and 0 <= r["emd"] <= 1 for r in res.rows)


def test_fig83_communities(tmp_path):
    res = _run("thesis-fig8.3", tmp_path)
    assert res.n_failed == 0
    for r in res.rows:
        assert r["intra_edges"] > 10 * r["inter_edges"]  # the swapped reading has communities
        assert r["mass_source_community"] + r["mass_other_community"] == pytest.approx(r["estimate_mass"], abs=1e-3)
    strong = [r for r in res.rows if r["epsilon"] == 64.0]
    assert strong and all(r["mass_source_community"] > r["mass_other_community"] for r in strong)

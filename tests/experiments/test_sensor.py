"""Seed 000 section 5 experiments in --quick mode: output structure and invariants from the math."""

from __future__ import annotations

import pytest

from dpcloak.experiments import run_experiment
from dpcloak.experiments._sensor import panel_slope


def _run(exp_id, tmp_path, **kwargs):
    res = run_experiment(exp_id, quick=True, workers=1, progress=False, out=tmp_path, **kwargs)
    assert all(p.exists() and p.stat().st_size > 0 for p in res.files)
    assert "| claim (paper) | measured (this run) | verdict |" in res.files[2].read_text()
    return res


def test_fig5_exponents(tmp_path):
    res = _run("sensor-fig5", tmp_path)
    # oracle: Proposition 4's exponents in m and n, exact for sensors dense relative to sqrt(T)
    assert panel_slope(res.rows, "a", "m", "delta2") == pytest.approx(0.5, abs=0.02)
    assert panel_slope(res.rows, "b", "n", "delta2") == pytest.approx(-1.0, abs=0.02)
    # large-T exponent -1.5; small-T exponent -0.75 (Riemann sum of g'^2)
    assert panel_slope(res.rows, "c", "t", "delta2", points=slice(-2, None)) == pytest.approx(-1.5, abs=0.1)
    assert all(r["bound_published"] >= r["delta2"] and r["bound_proved"] >= r["delta2"] for r in res.rows)
    assert [c.verdict for c in res.claims[:2]] == ["confirmed", "confirmed"]

"""BPDN (Gilbert & McMillan Algorithm 1): the fast solver against CVXPY + Clarabel, exact recovery, EMD, errors.

Oracles: CVXPY + Clarabel on the dense problem (independent conic solver); exact recovery of
noise-free, well-separated sources as the radius shrinks (ℓ1 minimality); seeded EMD trend in σ.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpcloak.domains import Grid, Line
from dpcloak.errors import InvalidParameterError, MissingExtraError
from dpcloak.metrics import emd
from dpcloak.models import graph_diffusion, heat_kernel_1d, heat_kernel_2d, matrix_model
from dpcloak.privacy.mechanisms import GaussianMechanism
from dpcloak.privacy.sensitivity import l2_sensitivity
from dpcloak.recovery import bpdn

pytest.importorskip("cvxpy")

OBJ_GAP = 1e-6
CONSTRAINT = 1e-8


def sources(n: int, idx: list[int], values: list[float] | None = None) -> np.ndarray:
    f = np.zeros(n)
    f[idx] = 1.0 if values is None else values
    return f


def _instances():
    rng = np.random.default_rng(7)
    yield "heat1d-100x50-t0.1", heat_kernel_1d(100, 50, 0.1), 0.05
    yield "heat1d-120x40-t1", heat_kernel_1d(120, 40, 1.0), 0.02
    yield "heat1d-80x80-t0.02", heat_kernel_1d(80, 80, 0.02), 0.05
    yield "kron2d-12x12-6x6", heat_kernel_2d(Grid((12, 12)), Grid((6, 6)), 0.05), 0.02
    sbm = nx.stochastic_block_model([20, 20], [[0.3, 0.02], [0.02, 0.3]], seed=3)
    yield "graph-sbm-40", graph_diffusion(sbm, 0.5), 0.02
    yield "random-dense-30x60", matrix_model(np.abs(rng.standard_normal((30, 60)))), 0.1


@pytest.mark.parametrize(("name", "model", "sigma"), list(_instances()), ids=[i[0] for i in _instances()])
def test_agrees_with_cvxpy_clarabel(name, model, sigma):
    m, n = model.shape
    for seed in range(2):
        rng = np.random.default_rng(seed)
        f0 = np.zeros(n)
        f0[rng.choice(n, 3, replace=False)] = rng.uniform(0.3, 1.0, 3)
        y = model.matvec(f0) + sigma * rng.standard_normal(m)
        fast = bpdn(model, y, sigma=sigma)
        ref = bpdn(model, y, sigma=sigma, solver="cvxpy")
        assert fast.feasible and ref.feasible, (name, seed)
        assert fast.converged, fast.message
        assert abs(fast.objective - ref.objective) <= OBJ_GAP * max(1.0, ref.objective), (name, seed)
        assert fast.residual <= fast.radius * (1 + CONSTRAINT)
        assert np.all(fast.x >= 0.0) and np.all(fast.x <= 1.0)
        assert fast.lower_bound <= fast.objective + 1e-12


def test_bounds_other_than_unit_box_agree_with_cvxpy(paper_model):
    rng = np.random.default_rng(3)
    f0 = sources(100, [30, 70], [2.0, 1.5])
    y = paper_model.matvec(f0) + 0.05 * rng.standard_normal(50)
    upper = np.full(100, 3.0)
    fast = bpdn(paper_model, y, sigma=0.05, bounds=(0.0, upper))
    ref = bpdn(paper_model, y, sigma=0.05, bounds=(0.0, upper), solver="cvxpy")
    assert fast.converged
    assert abs(fast.objective - ref.objective) <= OBJ_GAP * max(1.0, ref.objective)
    assert np.all(fast.x <= 3.0)


def test_plain_array_is_accepted(paper_model):
    f0 = sources(100, [49])
    y = paper_model.matvec(f0)
    a = bpdn(paper_model.todense(), y, radius=0.01)
    b = bpdn(paper_model, y, radius=0.01)
    assert a.converged and b.converged
    assert a.objective == pytest.approx(b.objective, rel=1e-9)


@pytest.mark.parametrize("t", [0.005, 0.01])
def test_noise_free_exact_recovery_of_separated_sources(t):
    model = heat_kernel_1d(100, 50, t)
    f0 = sources(100, [19, 49, 79], [1.0, 0.7, 0.4])
    y = model.matvec(f0)
    errors = []
    for rel in (1e-4, 1e-5):
        rec = bpdn(model, y, radius=rel * np.linalg.norm(y))
        assert rec.converged, rec.message
        assert set(np.flatnonzero(rec.x > 1e-3)) == {19, 49, 79}
        errors.append(np.max(np.abs(rec.x - f0)))
    assert errors[-1] <= 1e-3
    assert errors[1] <= 0.2 * errors[0]  # the error vanishes with the radius: exact recovery in the limit


def test_emd_on_paper_defaults_is_small_and_grows_with_sigma(paper_model):
    f0 = sources(100, [49])  # one source at 0.5
    sigma = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=l2_sensitivity(paper_model)).sigma
    means = []
    for mult in (0.25, 1.0, 4.0):
        vals = []
        for seed in range(6):
            rng = np.random.default_rng(seed)
            y = paper_model.matvec(f0) + mult * sigma * rng.standard_normal(50)
            rec = bpdn(paper_model, y, sigma=mult * sigma)
            vals.append(emd(f0, rec.x, Line(100)))
        means.append(float(np.mean(vals)))
    assert means[1] < 0.05  # a few grid cells at the paper's own (ε, δ)
    assert means[0] < means[1] < means[2]


def test_unreachable_ball_returns_min_residual_point(paper_model):
    """With the paper's σ√m the ball is often out of reach; CVXPY agrees it is infeasible."""
    f0 = sources(100, [49])
    found = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        y = paper_model.matvec(f0) + 0.1 * rng.standard_normal(50)
        rec = bpdn(paper_model, y, sigma=0.1, radius_policy="paper")
        assert rec.radius == pytest.approx(0.1 * math.sqrt(50))
        if rec.feasible:
            continue
        found += 1
        ref = bpdn(paper_model, y, sigma=0.1, radius_policy="paper", solver="cvxpy")
        assert not ref.feasible
        assert not rec.converged and "out of reach" in rec.message
        assert rec.residual > rec.radius
        # no point of the box does better than the returned residual (up to the documented slack)
        assert rec.residual <= ref.residual * (1 + 2e-4)
    assert found >= 2


def test_lower_bound_inside_ball_returns_it(paper_model):
    y = 1e-3 * np.ones(50)
    rec = bpdn(paper_model, y, radius=1.0)
    assert rec.converged and rec.objective == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"y": np.r_[np.nan, np.zeros(49)], "sigma": 0.1}, "NaN"),
        ({"y": np.zeros(49), "sigma": 0.1}, "shape"),
        ({"y": np.zeros(50), "sigma": 0.0}, "sigma"),
        ({"y": np.zeros(50), "sigma": -1.0}, "sigma"),
        ({"y": np.zeros(50), "sigma": 0.1, "radius": 1.0}, "exactly one"),
        ({"y": np.zeros(50)}, "exactly one"),
        ({"y": np.zeros(50), "radius": -1.0}, "radius"),
        ({"y": np.zeros(50), "sigma": 0.1, "radius_policy": "loose"}, "radius_policy"),
        ({"y": np.zeros(50), "sigma": 0.1, "bounds": (-1.0, 1.0)}, "non-negative"),
        ({"y": np.zeros(50), "sigma": 0.1, "bounds": (1.0, 1.0)}, "lower < upper"),
        ({"y": np.zeros(50), "sigma": 0.1, "solver": "magic"}, "solver"),
        ({"y": np.zeros(50), "sigma": 0.1, "failure_probability": 1.5}, "failure_probability"),
    ],
)
def test_bad_inputs(paper_model, kwargs, match):
    y = kwargs.pop("y")
    with pytest.raises(InvalidParameterError, match=match):
        bpdn(paper_model, y, **kwargs)


def test_cvxpy_missing_names_the_extra(paper_model, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cvxpy", None)
    with pytest.raises(MissingExtraError, match="reference"):
        bpdn(paper_model, np.ones(50), sigma=0.1, solver="cvxpy")


def test_warm_start_along_a_sigma_sweep_reaches_the_same_optimum_faster(paper_model):
    rng = np.random.default_rng(11)
    f0 = sources(100, [30, 70])
    noise = rng.standard_normal(50)
    cold_steps = warm_steps = 0
    prev = None
    for sigma in np.linspace(0.04, 0.06, 6):
        y = paper_model.matvec(f0) + sigma * noise
        cold = bpdn(paper_model, y, sigma=sigma)
        warm = bpdn(paper_model, y, sigma=sigma, warm_start=prev)
        assert warm.converged and cold.converged
        assert warm.objective == pytest.approx(cold.objective, rel=1e-9)
        cold_steps += cold.n_iter
        warm_steps += warm.n_iter
        prev = warm
    assert warm_steps < cold_steps


def test_barrier_point_of_a_far_trial_point_does_not_overflow():
    """A line-search trial far out (|a| ~ 1e200) must not overflow a² (pytest turns the warning into an
    error; a random bootstrap draw hit it once). Oracle: the exact root of a s² − (a d + 2μ) s + μ d = 0 in
    (0, d) tends to the nearer bound, μ/|a| away from it."""
    import warnings

    from dpcloak.recovery._ipm import _barrier_point

    a = np.array([1e200, -1e200, 3.0])
    lo, width = np.zeros(3), np.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for finite in (np.ones(3, bool), np.array([True, True, False])):
            x, xp, psi = _barrier_point(a, lo, np.where(finite, width, np.inf), finite, 1e-3)
            assert np.all(np.isfinite(x)) and np.all(np.isfinite(xp)) and np.all(np.isfinite(psi))
            assert x[0] == pytest.approx(1e-3 / 1e200, rel=1e-12) and x[1] == pytest.approx(1.0, abs=1e-15)


def test_matrix_free_heat_kernel_gives_the_dense_paths_recovery(monkeypatch):
    """Issue 34: the 1-D heat kernel applied by the FFT and the same model holding its dense matrix (forced by
    raising the FFT threshold) give the same recovery, objective and certified gap, to ~1e-12 relative."""
    import dpcloak.models.heat as heat
    from dpcloak.recovery import clear_compression_cache

    n, m, t, sigma = 1200, 600, 0.05, 0.1
    fast = heat_kernel_1d(n, m, t)
    monkeypatch.setattr(heat, "_FFT_ENTRIES", 10 * n * m)
    dense = heat_kernel_1d(n, m, t)
    assert fast.matrix_free and not dense.matrix_free
    y = dense.matvec(sources(n, [200, 640, 1000])) + sigma * np.random.default_rng(3).standard_normal(m)
    results = []
    for model in (fast, dense):
        clear_compression_cache()
        results.append(bpdn(model, y, sigma=sigma))
    a, b = results
    assert a.converged and b.converged
    assert a.objective - a.lower_bound <= 1e-9 * a.objective  # the certificate the solver states
    assert b.objective - b.lower_bound <= 1e-9 * b.objective
    assert abs(a.objective - b.objective) <= 1e-12 * b.objective
    assert abs(a.residual - b.residual) <= 1e-12 * b.radius
    np.testing.assert_allclose(a.x, b.x, rtol=0, atol=1e-10 * np.max(b.x))
    assert abs(a.lower_bound - b.lower_bound) <= 1e-12 * b.objective

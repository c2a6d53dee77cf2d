"""BPDN on count data (issue 13, "wrong answer"): large magnitudes, 19 sensors, boxes open above.

The reported failure: ``bounds=(0, None)`` on hourly counts returned an all-negative ``x`` and
claimed a smallest residual of 1260.67 while ``f = 0`` already gave 692.7 (NNLS: 121.53), and
``bounds=(0, 1)`` overflowed in the barrier. Oracles: ``scipy.optimize.nnls`` (Lawson–Hanson) for
the least residual over ``f ≥ 0``, CVXPY + Clarabel (independent conic solver) for the BPDN optimum
and the least residual over a box. No warning may escape (``filterwarnings("error")``).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import nnls

from dpcloak.domains import Grid
from dpcloak.models import heat_kernel_2d, matrix_model
from dpcloak.recovery import bpdn

cp = pytest.importorskip("cvxpy")

pytestmark = pytest.mark.filterwarnings("error")

OBJ_GAP = 1e-6  # relative objective difference allowed against Clarabel (its own accuracy ~1e-8)
NOISE = 30.0  # people per reading


def _street_heat_model(seed: int):
    """19 counters at random places over a 600 m × 600 m area, sources on a 12 × 12 grid, diffusion
    length ~80 m; rescaled to a unit peak so that readings are counts of people."""
    rng = np.random.default_rng(seed)
    grid = Grid((12, 12), extent=(600.0, 600.0))
    sensors = rng.uniform(0.0, 600.0, size=(19, 2))
    model = heat_kernel_2d(grid, sensors, 6400.0)  # T = μ t = 3200 m²
    dense = model.todense()
    return matrix_model(dense / dense.max())


def _random_nonnegative_model(seed: int):
    return matrix_model(np.random.default_rng(seed).uniform(0.0, 1.0, size=(19, 80)))


MODELS = {"heat2d-19-sensors": _street_heat_model, "random-nonnegative-19x80": _random_nonnegative_model}


def _counts(model, seed: int) -> np.ndarray:
    """Readings of a few hundred people in five places, plus Gaussian noise of NOISE people."""
    rng = np.random.default_rng(100 + seed)
    n = model.shape[1]
    f0 = np.zeros(n)
    f0[rng.choice(n, 5, replace=False)] = rng.uniform(100.0, 800.0, 5)
    return model.matvec(f0) + NOISE * rng.standard_normal(model.shape[0])


def _min_residual_cvxpy(A: np.ndarray, y: np.ndarray, upper: float) -> float:
    f = cp.Variable(A.shape[1])
    problem = cp.Problem(cp.Minimize(cp.norm(A @ f - y, 2)), [f >= 0, f <= upper])
    problem.solve(solver="CLARABEL")
    return float(problem.value)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("upper", [None, 1e4])
def test_reachable_ball_open_above_matches_cvxpy(name, seed, upper):
    model = MODELS[name](seed)
    y = _counts(model, seed)
    fast = bpdn(model, y, sigma=NOISE, bounds=(0, upper))
    ref = bpdn(model, y, sigma=NOISE, bounds=(0, upper), solver="cvxpy")
    assert fast.feasible and ref.feasible
    assert fast.converged, fast.message
    assert np.all(fast.x >= 0.0)
    assert fast.residual <= fast.radius * (1 + 1e-8)
    assert abs(fast.objective - ref.objective) <= OBJ_GAP * ref.objective
    assert fast.lower_bound <= fast.objective + 1e-9 * fast.objective


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unreachable_ball_open_above_reports_the_nnls_minimum(name, seed):
    """σ far below the noise: the ball is out of reach; the reported minimum is NNLS's."""
    model = MODELS[name](seed)
    y = _counts(model, seed)
    A = model.todense()
    _, r_nnls = nnls(A, y)
    assert r_nnls > 0.0 and np.linalg.norm(y) > 1e3  # large magnitudes, inconsistent data
    rec = bpdn(model, y, sigma=0.5, bounds=(0, None))
    assert rec.radius < r_nnls  # so the ball is indeed out of reach
    assert not rec.feasible and not rec.converged
    assert rec.min_residual == pytest.approx(r_nnls, rel=1e-9)
    assert f"smallest attainable residual is {rec.min_residual:.6g}" in rec.message
    assert np.all(rec.x >= 0.0)
    assert r_nnls * (1 - 1e-9) <= rec.residual <= r_nnls * (1 + 1.0001e-4)
    ref = bpdn(model, y, sigma=0.5, bounds=(0, None), solver="cvxpy")
    assert not ref.feasible
    assert rec.min_residual == pytest.approx(ref.min_residual, rel=1e-6)
    # least ‖f‖₁ within (1 + 1e-4) of the minimum: the same optimum as Clarabel's
    assert abs(rec.objective - ref.objective) <= 1e-5 * ref.objective


@pytest.mark.parametrize("upper", [1.0, 50.0, 1e4])
def test_unreachable_ball_in_a_box_reports_the_box_minimum(upper):
    """Finite boxes: the least residual is Clarabel's (and NNLS's when the box does not bind)."""
    model = _street_heat_model(0)
    y = _counts(model, 0)
    A = model.todense()
    rec = bpdn(model, y, sigma=0.5, bounds=(0, upper))
    r_box = _min_residual_cvxpy(A, y, upper)
    assert not rec.feasible
    assert rec.min_residual == pytest.approx(r_box, rel=1e-6)
    x_nnls, r_nnls = nnls(A, y)
    if x_nnls.max() < upper:
        assert rec.min_residual == pytest.approx(r_nnls, rel=1e-9)
    assert np.all(rec.x >= 0.0) and np.all(rec.x <= upper)
    assert rec.residual <= rec.min_residual * (1 + 1.0001e-4)
    ref = bpdn(model, y, sigma=0.5, bounds=(0, upper), solver="cvxpy")
    assert abs(rec.objective - ref.objective) <= 1e-5 * ref.objective


@pytest.mark.parametrize("upper", [1.0, 1e4, None])
def test_box_bounds_on_counts_agree_with_cvxpy(upper):
    """A reachable ball with a binding or loose box; no overflow warning from the barrier."""
    model = _random_nonnegative_model(3)
    y = _counts(model, 3)
    sigma = 2 * NOISE if upper is not None and upper < 10 else NOISE  # a ball the unit box can reach?
    fast = bpdn(model, y, sigma=sigma, bounds=(0, upper))
    ref = bpdn(model, y, sigma=sigma, bounds=(0, upper), solver="cvxpy")
    assert fast.feasible == ref.feasible
    if fast.feasible:
        assert fast.converged, fast.message
        assert abs(fast.objective - ref.objective) <= OBJ_GAP * ref.objective
    else:
        assert fast.min_residual == pytest.approx(ref.min_residual, rel=1e-6)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("lam", [1e-3, 10.0])
def test_penalised_subproblem_open_above_matches_cvxpy(name, lam):
    """Bregman's subproblem ``min Σf + λ‖Gf − z‖²`` over ``f ≥ 0`` (barrier dual started inside)."""
    from dpcloak.recovery._ipm import solve_box_quadratic
    from dpcloak.recovery.compress import compress

    model = MODELS[name](0)
    comp = compress(model)
    z = comp.project(_counts(model, 0)).z
    n = model.shape[1]
    out = solve_box_quadratic(comp.G, z, np.ones(n), np.zeros(n), np.full(n, np.inf), gamma=2 * lam, tol=1e-10)
    f = cp.Variable(n)
    problem = cp.Problem(cp.Minimize(cp.sum(f) + lam * cp.sum_squares(comp.G @ f - z)), [f >= 0])
    problem.solve(solver="CLARABEL")
    assert out.converged
    assert np.all(out.x >= 0.0)
    assert out.objective == pytest.approx(problem.value, rel=1e-7)
    assert out.lower_bound <= out.objective

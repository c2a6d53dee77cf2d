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


def _assert_least_l1_on_its_ball(rec, A: np.ndarray, y: np.ndarray, upper: float | None) -> None:
    """An unreachable ball: ``rec.x`` must be the least-‖f‖₁ point of the ball it lands on.

    Near the least residual the optimum moves fast with the radius (the multiplier is large), so
    the reference is not run on "(1 + 1e-4) × its own minimum" (its 1e-8 accuracy there shifts the
    objective by ~1e-4): Clarabel solves the balls of radius ``rec.residual · (1 ∓ 1e-6)``, whose
    optima must bracket ``rec.objective``.
    """
    f = cp.Variable(A.shape[1])
    box = [f >= 0] + ([f <= upper] if upper is not None else [])
    values = []
    for factor in (1 - 1e-6, 1 + 1e-6):
        problem = cp.Problem(cp.Minimize(cp.sum(f)), [*box, cp.norm(A @ f - y, 2) <= rec.residual * factor])
        problem.solve(solver="CLARABEL")
        assert problem.status == "optimal"
        values.append(float(problem.value))
    smaller_ball, larger_ball = values
    assert larger_ball <= rec.objective <= smaller_ball
    assert smaller_ball - larger_ball <= 1e-3 * rec.objective  # tight enough to mean something (measured ≤ 3e-4)


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
    _assert_least_l1_on_its_ball(rec, model.todense(), y, None)


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
    _assert_least_l1_on_its_ball(rec, A, y, upper)


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


@pytest.mark.parametrize("sigma", [0.5, 5.0])
def test_kronecker_floor_open_above_matches_nnls_and_cvxpy(sigma):
    """A 12 × 14 m floor seen by a 4 × 5 sensor grid (Kronecker rows, never formed), counts of people:
    an unreachable (σ = 0.5) and a reachable (σ = 5) ball."""
    model = heat_kernel_2d(Grid((12, 14), extent=(12.0, 14.0)), Grid((4, 5), extent=(12.0, 14.0)), 4.0)
    A = model.todense()
    rng = np.random.default_rng(8)
    f0 = np.zeros(A.shape[1])
    f0[rng.choice(A.shape[1], 4, replace=False)] = rng.uniform(100.0, 800.0, 4)
    y = A @ f0 + 5.0 * rng.standard_normal(A.shape[0])
    rec = bpdn(model, y, sigma=sigma, bounds=(0, None))
    ref = bpdn(matrix_model(A), y, sigma=sigma, bounds=(0, None), solver="cvxpy")
    assert rec.feasible == ref.feasible
    assert np.all(rec.x >= 0.0)
    if rec.feasible:
        assert rec.converged, rec.message
        assert abs(rec.objective - ref.objective) <= OBJ_GAP * ref.objective
    else:
        assert rec.min_residual == pytest.approx(nnls(A, y)[1], rel=1e-9)
        _assert_least_l1_on_its_ball(rec, A, y, None)


def test_warm_start_sizes_the_truncation_margin_and_keeps_the_full_model_guarantee(monkeypatch):
    """A 60² floor seen by 19² sensors (compression error > 0, box open above), warm-started from a neighbouring
    window: the radius' truncation margin is sized from the warm start (no least-residual search), and the answer
    keeps the cold path's guarantees. Oracles: the residual and the duality gap replayed with the full,
    uncompressed model (any ``v`` with ``1 + Mᵀv ≥ 0`` bounds ``Σ f ≥ −vᵀy − r‖v‖`` over the ball), the cold
    solve's objective (1e-7). Weakened: a margin sized below the answer's ``Σ f`` is refused and the least-residual
    search of the cold path runs."""
    import importlib

    from dpcloak.recovery import compress

    bpdn_module = importlib.import_module("dpcloak.recovery.bpdn")
    model = heat_kernel_2d(Grid((60, 60)), Grid((19, 19)), 0.1)
    comp = compress(model)
    assert comp.error > 0.0
    rng = np.random.default_rng(9)
    truth = np.zeros(model.shape[1])
    truth[rng.choice(truth.size, 3, replace=False)] = 30.0
    r = 3.0 * np.sqrt(model.shape[0])
    y0, y1 = (model.matvec(truth) + rng.normal(0.0, 3.0, model.shape[0]) for _ in range(2))
    previous = bpdn(model, y0, radius=r, bounds=(0.0, None))
    searches = []
    real = bpdn_module.box_least_squares
    monkeypatch.setattr(bpdn_module, "box_least_squares", lambda *a, **k: searches.append(1) or real(*a, **k))
    warm = bpdn(model, y1, radius=r, bounds=(0.0, None), warm_start=previous)
    assert warm.converged and not searches
    cold = bpdn(model, y1, radius=r, bounds=(0.0, None))
    assert searches
    assert warm.objective == pytest.approx(cold.objective, rel=1e-7)
    assert float(np.linalg.norm(model.matvec(warm.x) - y1)) <= r
    y_out = y1 - comp.U @ (comp.U.T @ y1)
    rho = float(np.sqrt(r * r - y_out @ y_out))
    v = comp.U @ warm.dual - (float(np.linalg.norm(warm.dual)) / rho) * y_out
    v = v * min(1.0, 1.0 / max(float(-model.rmatvec(v).min()), 1e-300))
    lower = -float(v @ y1) - r * float(np.linalg.norm(v))
    assert lower <= warm.objective * (1 + 1e-9) and warm.objective - lower <= 1e-6 * warm.objective

    searches.clear()
    monkeypatch.setattr(bpdn_module, "_WARM_SIZE", 0.25)  # size = Σ f_warm / 4: below the answer's Σ f
    refused = bpdn(model, y1, radius=r, bounds=(0.0, None), warm_start=previous)
    assert searches and refused.converged
    assert refused.objective == pytest.approx(cold.objective, rel=1e-9)

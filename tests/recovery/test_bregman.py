"""Bregman iteration (McMillan's thesis Algorithm 2, BPDN form): Theorem 8.4 and the subproblem oracle.

Oracles: Theorem 8.4 (monotone residual; decreasing Bregman distance to a feasible f₀ while the
residual exceeds ‖noise‖); CVXPY + Clarabel for the first subproblem
``argmin ‖f‖₁ + λ‖Mf − ỹ‖²`` over the box.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.models import heat_kernel_1d
from dpcloak.recovery.bregman import bregman


@pytest.fixture(scope="module")
def instance():
    model = heat_kernel_1d(100, 50, 0.1)
    f0 = np.zeros(100)
    f0[[20, 70]] = 1.0
    noise = 0.05 * np.random.default_rng(1).standard_normal(50)
    return model, f0, model.matvec(f0) + noise, float(np.linalg.norm(noise))


@pytest.mark.parametrize("lam", [0.05, 1.0, 20.0])
def test_residual_is_monotone(instance, lam):
    model, _, y, _ = instance
    res = bregman(model, y, lam=lam, iterations=12)
    assert res.n_iter == 12 and res.converged
    steps = np.diff(res.residuals)
    assert np.all(steps <= 1e-9 * res.residuals[:-1])  # Theorem 8.4: H(f^{t+1}) ≤ H(f^t)
    assert res.residual == pytest.approx(np.linalg.norm(model.matvec(res.x) - y))


def test_bregman_distance_to_truth_decreases(instance):
    """Theorem 8.4, second part, with J = ‖·‖₁ + box indicator and p^{t} = 2λ Mᵀ(p_prev − M f^t)."""
    model, f0, y, noise_norm = instance
    lam = 0.05
    A = model.todense()
    dist = []
    f, p = np.zeros(100), y.copy()
    for t in range(1, 8):
        res = bregman(model, y, lam=lam, iterations=t)
        f_new = res.x
        sub = 2 * lam * A.T @ (p - A @ f_new)  # a subgradient of J at f_new (optimality of the subproblem)
        p = p + (y - A @ f_new)
        dist.append(np.sum(f0) - np.sum(f_new) - sub @ (f0 - f_new))
        f = f_new
        if np.linalg.norm(y - A @ f) <= noise_norm:
            break
    assert len(dist) >= 3
    assert np.all(np.diff(dist) < 0)


def test_first_step_matches_cvxpy(instance):
    cp = pytest.importorskip("cvxpy")
    model, _, y, _ = instance
    lam = 0.5
    res = bregman(model, y, lam=lam, iterations=1)
    f = cp.Variable(100)
    prob = cp.Problem(cp.Minimize(cp.sum(f) + lam * cp.sum_squares(model.todense() @ f - y)), [f >= 0, f <= 1])
    prob.solve(solver="CLARABEL")
    ours = np.sum(res.x) + lam * np.sum((model.todense() @ res.x - y) ** 2)
    assert abs(ours - prob.value) <= 1e-6 * max(1.0, prob.value)


def test_discrepancy_stopping(instance):
    model, _, y, _ = instance
    res = bregman(model, y, lam=0.05, iterations=50, sigma=0.05)
    assert res.converged and res.residual <= res.radius
    assert res.residuals[-2] > res.radius  # stopped at the first iterate inside the ball


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"lam": 0.0}, "lam"), ({"lam": 1.0, "iterations": 0}, "iterations"),
     ({"lam": 1.0, "sigma": 0.1, "radius": 1.0}, "exactly one")],
)
def test_bad_inputs(instance, kwargs, match):
    model, _, y, _ = instance
    with pytest.raises(InvalidParameterError, match=match):
        bregman(model, y, **kwargs)
    with pytest.raises(InvalidParameterError, match="NaN"):
        bregman(model, np.r_[np.nan, y[1:]], lam=1.0)

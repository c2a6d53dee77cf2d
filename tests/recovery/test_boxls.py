"""Active-set box least squares (the least residual in a box) against independent solvers.

Oracles: ``scipy.optimize.nnls`` (Lawson–Hanson, lower bounds only) and CVXPY + Clarabel at its default
accuracy (two-sided boxes); the KKT conditions checked directly on the returned point.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import nnls

from dpcloak.recovery._boxls import box_least_squares

cp = pytest.importorskip("cvxpy")


def _instance(seed: int, nonnegative: bool, k: int = 19, n: int = 120):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((k, n))
    if nonnegative:
        G = np.abs(G)
    z = 1000.0 * rng.standard_normal(k) + 300.0  # counts-like magnitudes
    return G, z


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("nonnegative", [True, False])
def test_open_above_equals_nnls(seed, nonnegative):
    G, z = _instance(seed, nonnegative)
    n = G.shape[1]
    out = box_least_squares(G, z, np.zeros(n), np.full(n, np.inf))
    _, r_nnls = nnls(G, z)
    assert out.converged
    assert np.all(out.x >= 0.0)
    assert out.residual == pytest.approx(np.linalg.norm(G @ out.x - z), rel=1e-12)
    # a signed Gaussian G with n > k fits exactly: both residuals are rounding-level
    assert out.residual <= r_nnls * (1 + 1e-10) + 1e-9 * np.linalg.norm(z)
    assert out.residual >= r_nnls * (1 - 1e-10) - 1e-9 * np.linalg.norm(z)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("upper", [0.5, 3.0])
def test_two_sided_box_equals_clarabel_and_satisfies_kkt(seed, upper):
    G, z = _instance(seed, nonnegative=False)
    n = G.shape[1]
    lo, hi = np.full(n, 0.1), np.full(n, upper)
    out = box_least_squares(G, z, lo, hi)
    f = cp.Variable(n)
    problem = cp.Problem(cp.Minimize(cp.norm(G @ f - z, 2)), [f >= lo, f <= hi])
    problem.solve(solver="CLARABEL")
    assert out.converged
    assert np.all(out.x >= lo) and np.all(out.x <= hi)
    assert out.residual == pytest.approx(problem.value, rel=1e-7)  # Clarabel's default accuracy
    g = G.T @ (G @ out.x - z)  # gradient of ½‖Gx − z‖²
    scale = 1e-8 * np.linalg.norm(G, axis=0) * out.residual
    at_lo, at_hi = out.x <= lo, out.x >= hi
    assert np.all(g[at_lo] >= -scale[at_lo])  # no descent into the box from a lower bound
    assert np.all(g[at_hi] <= scale[at_hi])
    free = ~(at_lo | at_hi)
    assert np.all(np.abs(g[free]) <= scale[free])


def test_zero_columns_and_mixed_bounds():
    G, z = _instance(5, nonnegative=True, n=40)
    G[:, :5] = 0.0  # sources no sensor sees
    lo = np.zeros(40)
    hi = np.where(np.arange(40) % 2 == 0, np.inf, 2.0)
    out = box_least_squares(G, z, lo, hi)
    f = cp.Variable(40)
    finite = np.isfinite(hi)
    problem = cp.Problem(cp.Minimize(cp.norm(G @ f - z, 2)), [f >= 0, f[finite] <= hi[finite]])
    problem.solve(solver="CLARABEL")
    assert out.converged
    assert np.all(out.x[:5] == 0.0)
    assert out.residual == pytest.approx(problem.value, rel=1e-7)  # Clarabel's default accuracy


def test_step_cap_is_reported():
    G, z = _instance(0, nonnegative=True)
    n = G.shape[1]
    out = box_least_squares(G, z, np.zeros(n), np.full(n, np.inf), max_iter=2)
    assert not out.converged and out.n_iter == 2

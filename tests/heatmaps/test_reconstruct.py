"""RECONSTRUCT: exact recovery of w-sparse data without noise, and the O(wℓ) LP vs a direct CVXPY formulation."""

import numpy as np
import pytest

from dpcloak.heatmaps.aggregate import hierarchical_laplace
from dpcloak.heatmaps.data import bound_users
from dpcloak.heatmaps.pyramid import children, pyramid_levels
from dpcloak.heatmaps.reconstruct import reconstruct, top_w_descent


def _sparse_points(delta, k, seed):
    rng = np.random.default_rng(seed)
    cells = rng.choice(delta * delta, size=k, replace=False)
    picks = rng.choice(cells, size=40 * k)
    users = rng.integers(0, 10 * k, picks.size)
    return users, (picks % delta + rng.random(picks.size)) / delta, (picks // delta + rng.random(picks.size)) / delta


@pytest.mark.parametrize(("delta", "k", "w"), [(64, 20, 20), (256, 12, 20), (32, 5, 5), (16, 1, 1)])
def test_huge_epsilon_recovers_w_sparse_aggregate(delta, k, w):
    # Oracle: exact recovery — with negligible noise the LP optimum is the true w-sparse s (objective 0).
    users, x, y = _sparse_points(delta, k, seed=delta + k)
    agg = bound_users(users, x, y, resolution=delta)
    assert np.count_nonzero(agg.fixed) <= w
    rec = reconstruct(hierarchical_laplace(agg, epsilon=1e12, w=w, rng=0, noise="float"), w=w)
    np.testing.assert_allclose(rec.estimate, agg.sums, atol=1e-8)
    np.testing.assert_allclose(rec.estimate / rec.estimate.sum(), agg.normalized, atol=1e-9)


def test_descent_keeps_top_w_children():
    users, x, y = _sparse_points(32, 30, seed=1)
    noisy = hierarchical_laplace(bound_users(users, x, y, resolution=32), epsilon=1.0, w=6, rng=3, noise="float")
    selected, left_out = top_w_descent(noisy, w=6)
    start = noisy.start_level
    assert selected[0].size == min(6, 4**start)
    for k, (sel, out) in enumerate(zip(selected, left_out, strict=True)):
        vals = noisy.levels[k].ravel()
        if out.size:
            assert vals[out].max() <= vals[sel].min()
        if k:
            cand = children(selected[k - 1], 2 ** (start + k - 1))
            assert set(sel) | set(out) == set(cand) and sel.size == min(6, cand.size)


def _full_objective(noisy, selected, s):
    """‖ŷ − P s‖₁ over the measured rows, ŷ = y' restricted to the selected cells (Algorithm 2, line 9)."""
    total = 0.0
    for lev_vals, sel, ps, i in zip(noisy.levels, selected, pyramid_levels(s, start_level=noisy.start_level),
                                    noisy.budget.levels, strict=True):
        target = np.zeros(lev_vals.size)
        target[sel] = lev_vals.ravel()[sel]
        total += 2.0**-i * np.abs(target - ps.ravel()).sum()
    return total


@pytest.mark.parametrize(("delta", "w", "seed"), [(8, 3, 0), (16, 5, 1), (16, 20, 2), (8, 1, 3)])
def test_lp_matches_direct_cvxpy_formulation(delta, w, seed):
    # Oracle: CVXPY on the full problem argmin_{s' ≥ 0} ‖ŷ − P s'‖₁ with one variable per pixel.
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(seed)
    n = 60
    users = rng.integers(0, 25, n)
    agg = bound_users(users, rng.random(n) ** 3, rng.random(n), resolution=delta)
    noisy = hierarchical_laplace(agg, epsilon=1.0, w=w, rng=seed, noise="float")
    rec = reconstruct(noisy, w=w)
    selected, _ = top_w_descent(noisy, w=w)

    s = cp.Variable(delta * delta, nonneg=True)
    terms = []
    for lev_vals, sel, i in zip(noisy.levels, selected, noisy.budget.levels, strict=True):
        side = 2**i
        block = delta // side
        rows, cols = np.divmod(np.arange(delta * delta), delta)
        owner = (rows // block) * side + cols // block
        P_i = (owner[None, :] == np.arange(side * side)[:, None]).astype(float)
        target = np.zeros(side * side)
        target[sel] = lev_vals.ravel()[sel]
        terms.append(2.0**-i * cp.norm1(target - P_i @ s))
    prob = cp.Problem(cp.Minimize(sum(terms)))
    prob.solve(solver=cp.CLARABEL)
    assert rec.objective == pytest.approx(prob.value, rel=1e-6, abs=1e-8)
    assert _full_objective(noisy, selected, rec.estimate) == pytest.approx(prob.value, rel=1e-6, abs=1e-8)
    assert rec.estimate.min() >= 0.0
    assert rec.n_variables <= 4 * w * (noisy.depth - noisy.start_level + 1) + max(w, 4**noisy.start_level)

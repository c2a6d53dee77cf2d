"""Benchmark: private heatmaps (Ghazi et al.) end to end, stage by stage.

1. 200 users at Δ = 256 (goal < 0.1 s end to end), ours vs the [LXD+19] baseline.
2. 10⁷ points (10⁵ users × 100 points) at Δ = 1024, stage by stage, vs numpy.histogram2d (what a user
   would otherwise pick for the non-private aggregation, which does no per-user bounding).
3. RECONSTRUCT's O(wℓ)-variable LP (HiGHS via scipy) vs the direct one-variable-per-pixel LP in CVXPY.

Run: PYTHONPATH=src /work/venv/bin/python benchmarks/bench_heatmaps.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dpcloak.heatmaps import bound_users, gaussian_mixture_points, heatmap_from_aggregate, private_heatmap
from dpcloak.heatmaps.aggregate import hierarchical_laplace
from dpcloak.heatmaps.pyramid import pyramid_levels
from dpcloak.heatmaps.reconstruct import reconstruct, top_w_descent


def _best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def small(repeat: int) -> None:
    ps = gaussian_mixture_points(n_users=200, n_components=20, points_per_user=10, rng=0)
    private_heatmap(ps.users, ps.x, ps.y, epsilon=1.0, resolution=256, rng=0, noise="float")  # warm-up
    t, res = _best(lambda: private_heatmap(ps.users, ps.x, ps.y, epsilon=1.0, resolution=256, rng=0, noise="float"),
                   repeat)
    print(f"[1] 200 users, {ps.users.size} points, Δ=256, ε=1: end-to-end {t * 1e3:.1f} ms (goal < 100 ms)")
    print("    stages (ms): " + ", ".join(f"{k}={v * 1e3:.2f}" for k, v in res.curator.timings.items()))
    agg = bound_users(ps.users, ps.x, ps.y, resolution=256)
    tb, _ = _best(lambda: heatmap_from_aggregate(agg, method="laplace", epsilon=1.0, rng=0, noise="float"), repeat)
    print(f"    baseline (Laplace on every cell, from the bounded aggregate): {tb * 1e3:.2f} ms")


def large(n_points: int, delta: int) -> None:
    rng = np.random.default_rng(1)
    n_users = max(1, n_points // 100)
    users = rng.integers(0, n_users, n_points)
    centres = rng.random((50, 2)) * 0.8 + 0.1
    comp = rng.integers(0, 50, n_points)
    xy = np.clip(centres[comp] + rng.normal(0.0, 0.02, (n_points, 2)), 0.0, np.nextafter(1.0, 0.0))
    x, y = xy[:, 0].copy(), xy[:, 1].copy()
    del xy, comp
    t0 = time.perf_counter()
    res = private_heatmap(users, x, y, epsilon=1.0, resolution=delta, rng=0, noise="float")
    total = time.perf_counter() - t0
    print(f"[2] {n_points:.0e} points, {n_users} users, Δ={delta}, ε=1: end-to-end {total:.2f} s")
    print("    stages (s): " + ", ".join(f"{k}={v:.3f}" for k, v in res.curator.timings.items()))
    agg = bound_users(users, x, y, resolution=delta)
    t_pyr, _ = _best(lambda: pyramid_levels(agg.fixed), 3)
    t_noise, noisy = _best(lambda: hierarchical_laplace(agg, epsilon=1.0, rng=0), 3)
    t_desc, _ = _best(lambda: top_w_descent(noisy, w=20), 3)
    t_rec, rec = _best(lambda: reconstruct(noisy, w=20), 3)
    print(f"    pyramid sums {t_pyr * 1e3:.1f} ms, pyramid+Laplace {t_noise * 1e3:.1f} ms, "
          f"top-w descent {t_desc * 1e3:.2f} ms, descent+LP {t_rec * 1e3:.1f} ms ({rec.n_variables} LP variables)")
    t_h, _ = _best(lambda: np.histogram2d(y, x, bins=delta, range=[[0, 1], [0, 1]]), 1)
    print(f"    numpy.histogram2d (no per-user bounding): {t_h:.2f} s; "
          f"bound_users / histogram2d = {res.curator.timings['bound'] / t_h:.2f}")


def lp_vs_cvxpy(delta: int) -> None:
    import cvxpy as cp

    rng = np.random.default_rng(2)
    agg = bound_users(rng.integers(0, 200, 2000), rng.random(2000) ** 3, rng.random(2000), resolution=delta)
    noisy = hierarchical_laplace(agg, epsilon=1.0, rng=0)
    t_ours, rec = _best(lambda: reconstruct(noisy, w=20), 3)
    selected, _ = top_w_descent(noisy, w=20)
    s = cp.Variable(delta * delta, nonneg=True)
    rows, cols = np.divmod(np.arange(delta * delta), delta)
    terms = []
    for vals, sel, i in zip(noisy.levels, selected, noisy.budget.levels, strict=True):
        side = 2**i
        owner = (rows // (delta // side)) * side + cols // (delta // side)
        from scipy import sparse

        P = sparse.csr_matrix((np.ones(delta**2), (owner, np.arange(delta**2))), shape=(side * side, delta**2))
        target = np.zeros(side * side)
        target[sel] = vals.ravel()[sel]
        terms.append(2.0**-i * cp.norm1(target - P @ s))
    prob = cp.Problem(cp.Minimize(sum(terms)))
    t0 = time.perf_counter()
    prob.solve(solver=cp.CLARABEL)
    t_cvx = time.perf_counter() - t0
    print(f"[3] RECONSTRUCT LP at Δ={delta}: ours (HiGHS, {rec.n_variables} region variables) {t_ours * 1e3:.1f} ms, "
          f"CVXPY+Clarabel ({delta * delta} pixel variables) {t_cvx * 1e3:.0f} ms, ratio {t_cvx / t_ours:.0f}x; "
          f"objectives {rec.objective:.6g} vs {prob.value:.6g}")


def main() -> None:
    quick = "--quick" in sys.argv
    small(repeat=3 if quick else 10)
    large(10**6 if quick else 10**7, 1024)
    lp_vs_cvxpy(32 if quick else 64)


if __name__ == "__main__":
    main()

"""Benchmark: secure (exact discrete Laplace) against float heatmap noise, end to end (issue 12).

``private_heatmap`` on 200 users × 10 points (the synthetic mixture of ``bench_heatmaps.py``) at
resolution Δ = 256 and Δ = 1024 (a Δ × Δ grid; Σ_{i=q..ℓ} 4^i ≈ 87 000 and 1.4 million noisy cells):

* ``float``: numpy Laplace doubles (what a user would otherwise pick; not floating-point safe);
* ``secure, OS``: exact discrete Laplace, ``rng=None`` (ChaCha20 keyed by ``os.urandom`` per level);
* ``secure, seeded``: the same sampler fed by a seeded numpy Generator (``simulation=True``: tests,
  experiments);
* at Δ = 256 only, the previous pure-Python Canonne–Kamath–Steinke sampler (one Python-level draw per
  cell, ``secrets.randbelow``), for reference.

Median of ``--repeat`` runs (default 7) each, interleaved; the ratio secure/float is the figure of
merit (goal ≤ 3). The machine is shared, so absolute times vary between runs; ratios are measured
in the same run.

Run: ``PYTHONPATH=src python benchmarks/bench_secure_noise.py [--repeat N]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from dpcloak.heatmaps import gaussian_mixture_points, private_heatmap
from dpcloak.heatmaps.aggregate import default_start_level
from dpcloak.privacy.discrete import laplace_grid_scale, sample_discrete_laplace, secure_randbelow


def _median(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up (tables, imports)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _pure_python_levels(cells: int) -> float:
    """Time of ``cells`` one-at-a-time CKS draws at ε_i = 0.5 (the previous secure path's noise cost)."""
    scale = laplace_grid_scale(epsilon=0.5, grid_sensitivity=2**36)
    t0 = time.perf_counter()
    for _ in range(cells):
        sample_discrete_laplace(scale, secure_randbelow)
    return time.perf_counter() - t0


def main() -> None:
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 7
    ps = gaussian_mixture_points(n_users=200, n_components=20, points_per_user=10, rng=0)
    print(f"private_heatmap, {np.unique(ps.users).size} users, {ps.users.size} points, epsilon = 1; "
          f"median of {repeat} runs [ms]")
    print(f"{'resolution':>10s} {'float':>9s} {'secure,OS':>10s} {'secure,seed':>12s} "
          f"{'ratio OS/float':>15s} {'ratio seed/float':>17s}")
    for delta in (256, 1024):
        runs = {
            "float": lambda d=delta: private_heatmap(ps.users, ps.x, ps.y, epsilon=1.0, resolution=d, w=20, rng=0,
                                                     noise="float"),
            "os": lambda d=delta: private_heatmap(ps.users, ps.x, ps.y, epsilon=1.0, resolution=d, w=20, rng=None,
                                                  noise="secure"),
            "seed": lambda d=delta: private_heatmap(ps.users, ps.x, ps.y, epsilon=1.0, resolution=d, w=20, rng=0,
                                                    noise="secure", simulation=True),
        }
        t = {name: _median(fn, repeat) for name, fn in runs.items()}
        print(f"{delta:10d} {1e3 * t['float']:9.1f} {1e3 * t['os']:10.1f} {1e3 * t['seed']:12.1f} "
              f"{t['os'] / t['float']:15.2f} {t['seed'] / t['float']:17.2f}")
        if delta == 256:
            cells = sum(4**i for i in range(default_start_level(20), 9))  # levels q..ℓ at w = 20, Δ = 2^8
            sample = min(cells, 5000)
            per_draw = _pure_python_levels(sample) / sample
            print(f"{'':10s} previous pure-Python CKS sampler: about {per_draw * cells:.2f} s of noise for {cells} "
                  f"cells ({1e6 * per_draw:.1f} µs per draw, {sample} draws timed)")


if __name__ == "__main__":
    main()

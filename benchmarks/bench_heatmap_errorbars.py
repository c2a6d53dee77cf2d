"""Benchmark: coverage of the 90 % EMD error bar of ``private_heatmap`` (issue 32), and its width.

For the experiments' two data sets (the Appendix E.3 synthetic mixture and 200-vessel draws of the
public New York harbour AIS data), n = 200 users, Δ = 64, the default release (no ``w``, no
``population``: 1/10 of ε on the noisy count) at ε ∈ {0.5, 1, 2, 5}, each trial draws a data set,
releases it with float-Laplace noise (reproducible from the seed), computes the bar from B = 19
re-releases (:func:`dpcloak.heatmaps.errorbars.emd_error_bar`: post-processing of the release, no
privacy budget) and checks whether the true EMD (unit square, ℓ1 ground metric; curator-side) is at
most the bar. The peer in the same run: the plain parametric bootstrap (the same 19 re-releases, but
of the released map as it is, without putting each block's mass on one pixel), whose coverage shows
what concentrating the world buys. Printed per (data set, ε) and overall: coverage of both with its
binomial standard error, the mean bar, the mean true EMD and their ratio (bar / EMD: the interval's
width relative to the error it bounds). Goal: the bar's coverage within 85–95 % overall.

Run: ``PYTHONPATH=src python benchmarks/bench_heatmap_errorbars.py [--trials 16]`` (56 CPU s at 12 trials,
about 75 at the default 16; seeds 0..trials-1).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from dpcloak.heatmaps import bound_users, gaussian_mixture_points, heatmap_from_aggregate, load_ais
from dpcloak.heatmaps.errorbars import _rerelease
from dpcloak.metrics import heatmap as hm

EPSILONS = (0.5, 1.0, 2.0, 5.0)
DATASETS = ("synthetic", "ais")
N_USERS, RESOLUTION, DRAWS = 200, 64, 19


def _plain_bar(result: object, rng: np.random.Generator) -> float:
    """The peer: the rank-18-of-19 EMD of re-releases of the released map itself (no concentration)."""
    params = result.parameters  # type: ignore[attr-defined]
    eps = result.epsilon - float(params.get("count_epsilon") or 0.0)  # type: ignore[attr-defined]
    users = max(float(result.details["estimated_users"]), 1.0)  # type: ignore[attr-defined]
    world = result.aggregate  # type: ignore[attr-defined]
    spread = sorted(hm.emd(world, _rerelease(world, users, params, eps, rng), extent=(1.0, 1.0))
                    for _ in range(DRAWS))
    return float(spread[math.ceil(0.9 * (DRAWS + 1) - 1e-9) - 1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=16)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    t0, c0 = time.perf_counter(), time.process_time()
    ais = load_ais()[0]
    total = {"ours": 0, "plain": 0, "n": 0, "bar": [], "err": []}
    for dataset in DATASETS:
        for eps in EPSILONS:
            hit = plain = 0
            bars, errs = [], []
            for seed in range(args.trials):
                rng = np.random.default_rng([seed, DATASETS.index(dataset), int(10 * eps), 32])
                if dataset == "ais":
                    data = ais.sample_users(N_USERS, rng=rng)
                else:
                    data = gaussian_mixture_points(n_users=N_USERS, n_components=20, points_per_user=10,
                                                   spread=(0.002, 0.02), rng=rng)
                agg = bound_users(data.users, data.x, data.y, resolution=RESOLUTION)
                res = heatmap_from_aggregate(agg, epsilon=eps, rng=rng, noise="float", error_bar_draws=DRAWS)
                assert res.error_bar is not None
                err = hm.emd(agg.normalized, res.aggregate, extent=(1.0, 1.0))
                hit += err <= res.error_bar.bound
                plain += err <= _plain_bar(res, rng)
                bars.append(res.error_bar.bound)
                errs.append(err)
            n = args.trials
            print(f"{dataset:9s} ε={eps:<4g}: coverage {hit}/{n} = {hit / n:.2f} (plain bootstrap {plain / n:.2f}); "
                  f"mean bar {np.mean(bars):.4f}, mean true EMD {np.mean(errs):.4f}, "
                  f"bar / EMD {np.mean(bars) / np.mean(errs):.2f}", flush=True)
            total["ours"] += hit
            total["plain"] += plain
            total["n"] += n
            total["bar"] += bars
            total["err"] += errs
    n = total["n"]
    cov, cov_plain = total["ours"] / n, total["plain"] / n
    se = math.sqrt(0.9 * 0.1 / n)
    print(f"overall ({n} releases): coverage of the 90 % bar {cov:.3f} ± {se:.3f} (goal 0.85-0.95); plain "
          f"bootstrap {cov_plain:.3f}; ratio ours / plain {cov / max(cov_plain, 1e-12):.2f}; mean bar "
          f"{np.mean(total['bar']):.4f} vs mean true EMD {np.mean(total['err']):.4f} "
          f"(ratio {np.mean(total['bar']) / np.mean(total['err']):.2f})")
    print(f"wall {time.perf_counter() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s; load average at end: "
          f"{os.getloadavg()}")


if __name__ == "__main__":
    main()

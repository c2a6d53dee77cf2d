"""Benchmark: dpcloak's BPDN solver against CVXPY + Clarabel and CVXPY + SCS, in the same run.

Problems (seed 000 Algorithm 1 with the default χ² radius, σ = 0.1 unless noted, sources of unit
intensity): the 1-D heat kernel at (n, m) = (100, 50) and (1000, 500) with T = 0.5, and the 2-D
Kronecker heat kernel with a 64 × 64 source grid and 32 × 32 grid sensors (t = 0.1, σ = 0.05).

Printed per case: dpcloak cold (compression not cached) and warm (cached, the sweep situation),
each reference's time, the speed-up ratios and the relative objective gaps (positive = dpcloak
higher); then a σ sweep with and without ``warm_start``. BLAS is pinned to one thread (unless
already set) so every solver gets the same core.

Run: ``PYTHONPATH=src /work/venv/bin/python benchmarks/bench_recovery.py [--quick] [--repeat R]``
(``--quick`` skips the references on the 2-D case, where CVXPY + Clarabel takes minutes).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dpcloak.domains import Grid  # noqa: E402
from dpcloak.models import LinearModel, heat_kernel_1d, heat_kernel_2d  # noqa: E402
from dpcloak.recovery import bpdn, clear_compression_cache  # noqa: E402


def _case(model: LinearModel, k: int, sigma: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = model.shape[1]
    f0 = np.zeros(n)
    f0[rng.choice(n, k, replace=False)] = 1.0
    return model.matvec(f0) + sigma * rng.standard_normal(model.shape[0])


def _best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def run(name: str, model: LinearModel, sigma: float, *, seeds: int, repeat: int, references: bool) -> None:
    print(f"\n== {name}: (m, n) = {model.shape}, σ = {sigma:g}")
    header = f"{'seed':>4} {'feasible':>8} {'cold ms':>9} {'warm ms':>9} {'steps':>5}"
    refs = ("CLARABEL", "SCS") if references else ()
    for r in refs:
        header += f" | {r + ' s':>11} {'cold×':>8} {'warm×':>8} {'gap':>9}"
    print(header)
    for seed in range(seeds):
        y = _case(model, 3 if model.shape[1] > 1000 else 1, sigma, seed)
        clear_compression_cache()
        t_cold, rec = _best_of(lambda y=y: (clear_compression_cache(), bpdn(model, y, sigma=sigma))[1], 1)
        t_warm, rec = _best_of(lambda y=y: bpdn(model, y, sigma=sigma), repeat)
        line = f"{seed:>4} {rec.feasible!s:>8} {t_cold * 1e3:>9.1f} {t_warm * 1e3:>9.2f} {rec.n_iter:>5}"
        for solver in refs:
            t_ref, ref = _best_of(lambda y=y, s=solver: bpdn(model, y, sigma=sigma, solver="cvxpy", cvxpy_solver=s), 1)
            gap = (rec.objective - ref.objective) / max(1.0, abs(ref.objective))
            line += f" | {t_ref:>11.3f} {t_ref / t_cold:>8.0f} {t_ref / t_warm:>8.0f} {gap:>9.1e}"
        print(line, flush=True)


def sweep(name: str, model: LinearModel, sigma0: float, points: int = 11) -> None:
    """A σ sweep on one noise draw (an experiment's inner loop): cold starts vs ``warm_start``."""
    y0 = _case(model, 3, 0.0, 0)
    noise = np.random.default_rng(99).standard_normal(model.shape[0])
    bpdn(model, y0 + sigma0 * noise, sigma=sigma0)  # compression cached, as in any sweep
    totals = {"cold": [0.0, 0], "warm": [0.0, 0]}
    prev = None
    worst = 0.0
    for sigma in np.linspace(0.8, 1.2, points) * sigma0:
        y = y0 + sigma * noise
        start = time.perf_counter()
        cold = bpdn(model, y, sigma=sigma)
        totals["cold"][0] += time.perf_counter() - start
        start = time.perf_counter()
        warm = bpdn(model, y, sigma=sigma, warm_start=prev)
        totals["warm"][0] += time.perf_counter() - start
        totals["cold"][1] += cold.n_iter
        totals["warm"][1] += warm.n_iter
        worst = max(worst, abs(warm.objective - cold.objective) / max(1.0, cold.objective))
        prev = warm
    print(f"\n== σ sweep ({points} points, ±20 %), {name}: cold {totals['cold'][0] * 1e3:.0f} ms / "
          f"{totals['cold'][1]} steps, warm-started {totals['warm'][0] * 1e3:.0f} ms / {totals['warm'][1]} steps, "
          f"largest objective difference {worst:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the references on the 2-D case")
    parser.add_argument("--repeat", type=int, default=5, help="best-of repeats for the warm timing")
    args = parser.parse_args()
    run("1-D heat kernel, T = 0.5", heat_kernel_1d(100, 50, 1.0), 0.1, seeds=3, repeat=args.repeat, references=True)
    run("1-D heat kernel, T = 0.5", heat_kernel_1d(1000, 500, 1.0), 0.1, seeds=3, repeat=args.repeat,
        references=True)
    grid2d = heat_kernel_2d(Grid((64, 64)), Grid((32, 32)), 0.1)
    run("2-D heat kernel, 64×64 sources, 32×32 sensors, t = 0.1", grid2d, 0.05, seeds=2, repeat=args.repeat,
        references=not args.quick)
    sweep("1-D (1000, 500), T = 0.5", heat_kernel_1d(1000, 500, 1.0), 0.1)
    sweep("2-D 64×64 / 32×32", grid2d, 0.05)


if __name__ == "__main__":
    main()

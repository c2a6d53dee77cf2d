"""Benchmark: exact ℓ2 sensitivity vs the straightforward computation a user would write.

1. 1-D heat kernel, n = 10⁴ sources, m = 10³ sensors: ``l2_sensitivity`` (model build included)
   vs a dense matrix and a Python loop over adjacent column pairs (best of 5).
2. Stochastic block model (two communities, p_in = 0.05, p_out = 0.001, τ = 2) with n = 2 000 and
   5 000: ``graph_diffusion`` + ``l2_sensitivity`` vs dense ``scipy.linalg.expm(−τL)`` + column
   differences over the edges.

Run: ``PYTHONPATH=src python benchmarks/bench_sensitivity.py``. Prints times, ratios and agreement.
"""

from __future__ import annotations

import time

import networkx as nx
import numpy as np
import scipy.linalg

from dpcloak.models import graph_diffusion, heat_kernel_1d
from dpcloak.privacy.sensitivity import l2_sensitivity


def timed(fn, repeats: int = 1):
    """Value and best wall time over ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return value, best


def naive_heat1d(n: int, m: int, t: float, mu: float = 0.5) -> float:
    T = mu * t
    sources = np.arange(1, n + 1) / n
    sensors = np.arange(1, m + 1) / m
    A = np.exp(-((sensors[:, None] - sources[None, :]) ** 2) / (4 * T)) / np.sqrt(4 * np.pi * T)
    return max(float(np.linalg.norm(A[:, i] - A[:, i + 1])) for i in range(n - 1))


def naive_graph(graph: nx.Graph, tau: float) -> float:
    L = nx.laplacian_matrix(graph).toarray().astype(float)
    A = scipy.linalg.expm(-tau * L)
    edges = np.array(graph.edges())
    worst = 0.0
    for start in range(0, len(edges), 2_000):  # chunks: all edges at once needs n x |E| doubles (13 GB at n=5000)
        block = edges[start : start + 2_000]
        worst = max(worst, float(np.linalg.norm(A[:, block[:, 0]] - A[:, block[:, 1]], axis=0).max()))
    return worst


def main() -> None:
    print(f"{'case':42s} {'dpcloak [s]':>12s} {'baseline [s]':>13s} {'ratio':>8s} {'rel. diff':>10s}")
    fast, t_fast = timed(lambda: l2_sensitivity(heat_kernel_1d(10_000, 1_000, 0.1)), repeats=5)
    slow, t_slow = timed(lambda: naive_heat1d(10_000, 1_000, 0.1), repeats=5)
    print(f"{'heat1d n=1e4 m=1e3 (vs dense + loop)':42s} {t_fast:12.3f} {t_slow:13.3f} {t_slow / t_fast:8.1f}x "
          f"{abs(fast - slow) / slow:10.1e}")
    for n in (2_000, 5_000):
        g = nx.stochastic_block_model([n // 2, n - n // 2], [[0.05, 0.001], [0.001, 0.05]], seed=1)
        fast, t_fast = timed(lambda g=g: l2_sensitivity(graph_diffusion(g, 2.0)))
        slow, t_slow = timed(lambda g=g: naive_graph(g, 2.0))
        label = f"SBM n={n}, {g.number_of_edges()} edges (vs dense expm)"
        print(f"{label:42s} {t_fast:12.3f} {t_slow:13.3f} {t_slow / t_fast:8.1f}x {abs(fast - slow) / slow:10.1e}")


if __name__ == "__main__":
    main()

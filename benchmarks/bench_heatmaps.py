"""Benchmark: private heatmaps (Ghazi et al.) end to end, stage by stage.

1. 200 users at Δ = 256 (goal < 0.1 s end to end), ours vs the [LXD+19] baseline.
2. 10⁷ points (10⁵ users × 100 points) at Δ = 1024, stage by stage, vs numpy.histogram2d (what a user
   would otherwise pick for the non-private aggregation, which does no per-user bounding): points/s of
   ``bound_users`` (per-user bounding included) and of histogram2d in the same run, and their ratio
   (goal ≥ 1×); and ``bound_users`` against ``numpy.bincount`` of the points' precomputed flat cell
   indices (the counting floor: no snapping, no range check, no weights; issue 34's goal ≤ 2×) and
   against the weighted bincount, in CPU time (``time.process_time``, best of 5, interleaved), which
   the other processes on the shared cores disturb less than wall time.
3. RECONSTRUCT's O(wℓ)-variable LP (HiGHS via scipy) vs the direct one-variable-per-pixel LP in CVXPY.
4. Only with ``--dask [N]`` (default N = 10⁸): ``bound_users_parquet`` (the workers read the files) and
   ``heatmap_from_aggregate`` on N points of N/100 users (ids spread over all files) in 50 Parquet files
   written to a temporary directory, deleted afterwards, on a 2-worker LocalCluster (one process and one
   thread per worker, 1.5 GiB memory limit each), its workers' first import of dpcloak, pandas and PyArrow and
   the first load of the compiled kernels timed apart (a long-lived cluster has them; printed as "cold"):
   wall time, points/s and the peak of the summed RSS of this process and all its children (the
   workers and their nannies), sampled every 0.1 s. The peer: numpy.histogram2d's in-memory rate on
   10⁷ points of the same distribution (min(N, 10⁷)), measured just before and just after the Dask
   run; printed: Dask points/s per core (the wall rate / 2 workers), histogram2d's points/s, and their
   ratio (goal ≥ 1×). Needs 24 bytes per point of free disk.

Run: PYTHONPATH=src /work/venv/bin/python benchmarks/bench_heatmaps.py [--quick] [--dask [N] [--reuse DIR]]
(``--quick --dask`` uses N = 10⁶; ``--reuse DIR`` reads the Parquet files a previous run's writer left in DIR
instead of writing and deleting them.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

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
    private_heatmap(ps.users, ps.x, ps.y, epsilon=1.0, resolution=256, w=20, rng=0, noise="float")  # warm-up
    t, res = _best(lambda: private_heatmap(ps.users, ps.x, ps.y, epsilon=1.0, resolution=256, w=20, rng=0,
                                           noise="float"),
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
    res = private_heatmap(users, x, y, epsilon=1.0, resolution=delta, w=20, rng=0, noise="float")
    total = time.perf_counter() - t0
    print(f"[2] {n_points:.0e} points, {n_users} users, Δ={delta}, ε=1: end-to-end {total:.2f} s")
    print("    stages (s): " + ", ".join(f"{k}={v:.3f}" for k, v in res.curator.timings.items()))
    agg = bound_users(users, x, y, resolution=delta)
    t_pyr, _ = _best(lambda: pyramid_levels(agg.fixed), 3)
    t_noise, noisy = _best(lambda: hierarchical_laplace(agg, epsilon=1.0, rng=0, noise="float"), 3)
    t_desc, _ = _best(lambda: top_w_descent(noisy, w=20), 3)
    t_rec, rec = _best(lambda: reconstruct(noisy, w=20), 3)
    print(f"    pyramid sums {t_pyr * 1e3:.1f} ms, pyramid+Laplace {t_noise * 1e3:.1f} ms, "
          f"top-w descent {t_desc * 1e3:.2f} ms, descent+LP {t_rec * 1e3:.1f} ms ({rec.n_variables} LP variables)")
    t_b, _ = _best(lambda: bound_users(users, x, y, resolution=delta), 2)
    t_h, _ = _best(lambda: np.histogram2d(y, x, bins=delta, range=[[0, 1], [0, 1]]), 2)
    print(f"    bound_users (per-user bounding, exact int64): {n_points / t_b / 1e6:.1f} M points/s; "
          f"numpy.histogram2d (no bounding): {n_points / t_h / 1e6:.1f} M points/s; "
          f"ratio ours/histogram2d = {t_h / t_b:.2f}x (goal >= 1x); "
          f"end to end incl. noise+LP: {n_points / total / 1e6:.1f} M points/s")
    cells = np.floor(y * delta).astype(np.int64) * delta + np.floor(x * delta).astype(np.int64)
    weights = rng.random(n_points)
    cpu = {"bound_users": [], "bincount": [], "weighted bincount": []}
    for _ in range(5):  # interleaved, CPU time
        for name, fn in (("bound_users", lambda: bound_users(users, x, y, resolution=delta)),
                         ("bincount", lambda: np.bincount(cells, minlength=delta * delta)),
                         ("weighted bincount", lambda: np.bincount(cells, weights=weights, minlength=delta * delta))):
            t0 = time.process_time()
            fn()
            cpu[name].append(time.process_time() - t0)
    best = {k: min(v) for k, v in cpu.items()}
    print(f"    CPU, best of 5 interleaved: bound_users {best['bound_users'] * 1e3:.1f} ms, numpy.bincount of the flat "
          f"cells {best['bincount'] * 1e3:.1f} ms (ratio {best['bound_users'] / best['bincount']:.2f}x, goal <= 2x), "
          f"weighted bincount {best['weighted bincount'] * 1e3:.1f} ms "
          f"(ratio {best['bound_users'] / best['weighted bincount']:.2f}x)")


def lp_vs_cvxpy(delta: int) -> None:
    import cvxpy as cp

    rng = np.random.default_rng(2)
    agg = bound_users(rng.integers(0, 200, 2000), rng.random(2000) ** 3, rng.random(2000), resolution=delta)
    noisy = hierarchical_laplace(agg, epsilon=1.0, rng=0, noise="float")
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


def _write_parquet(root: Path, n_points: int, n_files: int) -> int:
    """N points of N/100 users (ids spread over all files) from a 50-Gaussian mixture, one file at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    n_users = max(1, n_points // 100)
    centres = rng.random((50, 2)) * 0.8 + 0.1
    per_file = -(-n_points // n_files)
    for k in range(n_files):
        m = min(per_file, n_points - k * per_file)
        comp = rng.integers(0, 50, m)
        xy = np.clip(centres[comp] + rng.normal(0.0, 0.02, (m, 2)), 0.0, np.nextafter(1.0, 0.0))
        table = pa.table({"user": rng.integers(0, n_users, m), "x": xy[:, 0], "y": xy[:, 1]})
        pq.write_table(table, root / f"part-{k:03d}.parquet")
    return n_users


class _PeakRSS:
    """Peak of the summed RSS of this process and all its descendants, sampled in a thread."""

    def __init__(self, period: float = 0.1) -> None:
        import threading

        import psutil

        self._me, self._period, self.peak = psutil.Process(), period, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        import psutil

        total = 0
        for p in [self._me, *self._me.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):  # a process that just exited
                total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self._period)

    def __enter__(self) -> _PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._sample())


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and all its live descendants (the cluster's processes)."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for p in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def _histogram2d_rate(n_points: int, delta: int, clock: Any = time.perf_counter) -> float:
    """numpy.histogram2d's in-memory points/s on the benchmark's distribution (best of 2, by ``clock``)."""
    rng = np.random.default_rng(8)
    centres = rng.random((50, 2)) * 0.8 + 0.1
    xy = np.clip(centres[rng.integers(0, 50, n_points)] + rng.normal(0.0, 0.02, (n_points, 2)), 0.0,
                 np.nextafter(1.0, 0.0))
    x, y = xy[:, 0].copy(), xy[:, 1].copy()
    del xy
    times = []
    for _ in range(2):
        t0 = clock()
        np.histogram2d(y, x, bins=delta, range=[[0, 1], [0, 1]])
        times.append(clock() - t0)
    return n_points / min(times)


def _import_on_worker() -> None:
    """What a long-lived cluster has done once per worker process: import dpcloak, pandas and PyArrow's Parquet
    reader, and load the compiled bounding kernels from numba's cache (about 1 CPU s per worker, measured in
    this run's cold ratio)."""
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    from dpcloak.heatmaps import bound_users
    from dpcloak.heatmaps.distributed import _counts_of

    bound_users(np.array([0, 1]), np.array([0.1, 0.6]), np.array([0.1, 0.6]), resolution=2)
    _counts_of(np.array([0, 1]))


def dask_parquet(n_points: int, n_files: int = 50, delta: int = 1024, reuse: Path | None = None) -> None:
    import shutil
    import tempfile

    from dask.distributed import Client, LocalCluster

    from dpcloak.heatmaps.distributed import bound_users_parquet

    root = reuse if reuse is not None else Path(tempfile.mkdtemp(prefix="dpcloak-bench-parquet-"))
    try:
        n_users = max(1, n_points // 100)
        if reuse is None:
            free = shutil.disk_usage(root).free
            if free < 40 * n_points:
                raise SystemExit(f"not enough disk in {root.parent}: {free / 2**30:.1f} GiB free, "
                                 f"need ~{40 * n_points / 2**30:.1f}")
            t0 = time.perf_counter()
            _write_parquet(root, n_points, n_files)
            print(f"[4] wrote {n_points:.0e} points of {n_users} users in {n_files} Parquet files in "
                  f"{time.perf_counter() - t0:.0f} s")
        size = sum(f.stat().st_size for f in root.iterdir())
        print(f"[4] {n_points:.0e} points of {n_users} users, {len(list(root.iterdir()))} Parquet files "
              f"({size / 2**30:.2f} GiB) in {root}")
        peer_before = _histogram2d_rate(min(n_points, 10**7), delta)
        peer_cpu = _histogram2d_rate(min(n_points, 10**7), delta, clock=time.process_time)
        with _PeakRSS() as rss, LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                             memory_limit="1.5GiB", dashboard_address=None) as cluster, \
                Client(cluster) as client:
            t0 = time.perf_counter()
            client.run(_import_on_worker)
            warm = time.perf_counter() - t0
            t0, cpu0 = time.perf_counter(), _cpu_seconds()
            agg = bound_users_parquet(root, resolution=delta, client=client)
            bound = time.perf_counter() - t0
            res = heatmap_from_aggregate(agg, epsilon=1.0, population=n_users)
            wall, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
        peer_after = _histogram2d_rate(min(n_points, 10**7), delta)
        assert res.curator.n_points == n_points and abs(float(res.aggregate.sum()) - 1.0) < 1e-9
        print(f"    bound_users_parquet + heatmap_from_aggregate, 2 worker processes x 1 thread, Δ={delta}, secure "
              f"noise: {wall:.1f} s ({n_points / wall / 1e6:.2f} M points/s; bounding {bound:.1f} s, release "
              f"{wall - bound:.2f} s; the workers' first import of dpcloak {warm:.1f} s before); peak RSS summed over "
              f"all processes {rss.peak / 2**30:.2f} GiB (goal < 4 GiB); load average {os.getloadavg()}")
        per_core, cold = n_points / wall / 2, n_points / (wall + warm) / 2
        print(f"    Dask {per_core / 1e6:.2f} M points/s per core (2 workers, bounding and release included; "
              f"{cold / 1e6:.2f} with the workers' imports); numpy.histogram2d in memory {peer_before / 1e6:.2f} M "
              f"points/s before, {peer_after / 1e6:.2f} after; ratio {per_core / peer_before:.2f}x / "
              f"{per_core / peer_after:.2f}x (goal >= 1x; {cold / max(peer_before, peer_after):.2f}x cold against the "
              "faster peer)")
        print(f"    CPU time (less disturbed by the other processes on the shared cores): the Dask run used {cpu:.1f} "
              f"CPU s over the client, scheduler and workers = {n_points / cpu / 1e6:.2f} M points per CPU s; "
              f"numpy.histogram2d {peer_cpu / 1e6:.2f} M points per CPU s; ratio {n_points / cpu / peer_cpu:.2f}x")
    finally:
        if reuse is None:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    quick = "--quick" in sys.argv
    print(f"load average at start: {os.getloadavg()}")
    if "--dask" in sys.argv:
        i = sys.argv.index("--dask")
        arg = sys.argv[i + 1] if i + 1 < len(sys.argv) and not sys.argv[i + 1].startswith("--") else None
        reuse = Path(sys.argv[sys.argv.index("--reuse") + 1]) if "--reuse" in sys.argv else None
        dask_parquet(int(float(arg)) if arg else (10**6 if quick else 10**8), reuse=reuse)
        return
    small(repeat=3 if quick else 10)
    large(10**6 if quick else 10**7, 1024)
    lp_vs_cvxpy(32 if quick else 64)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()

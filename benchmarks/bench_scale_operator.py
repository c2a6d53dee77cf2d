"""Size ladder (issue 34): building the heat-kernel operator against a cold BPDN solve with it, and the dense build.

1-D: ``heat_kernel_1d(n, n/2, t = 0.05)`` for ``n ∈ {8 000, 32 000, 128 000}``, three unit sources,
σ = 0.1, the default χ² radius (as in ``bench_recovery.py``). Ours: the operator build (matrix-free:
Toeplitz, FFT), then a cold ``bpdn`` (compression cache cleared) and the exact Δ2
(``l2_sensitivity``). Peer: the dense build of before (``gaussian_kernel_1d`` on the ``m × n`` grid of
differences, wrapped in a ``DenseModel``) and its Δ2 (column differences of the dense matrix),
time-limited and only where the matrix and two temporaries fit in 80 % of the available memory; in
the peer's process our operator is checked against the dense one (matvec, rmatvec and Δ2, relative
differences printed). Each side runs in its own subprocess (peak RSS per row is that process's).

2-D floor: 512² sources seen by a 128² sensor grid (``heat_kernel_2d(Grid, Grid)``, Kronecker
factors, t = 0.1, σ = 0.05): build, cold solve and Δ2; its dense peer (``np.kron`` of the factors,
32 GiB) does not fit and is reported so. Δ2 on the Kronecker floor (products of the factors' norms)
against the general path (differences of the full columns) at 128² / 32², where the latter finishes.

Printed per row: build (best of 3), cold solve (wall; the 2-D floor also CPU), build/solve, certified relative
duality gap, Δ2 time, peak RSS, the dense build, its Δ2 time and peak RSS, dense/ours;
the log-log slopes of the build and solve times over n; last, whether build ≤ cold solve held at every size
(issue 34). Writes ``results/operator_heat1d.json`` (build against the dense build) and
``results/operator_vs_solve_heat1d.json`` / ``operator_vs_solve_floor2d.json`` (build against the cold solve on
the same operator, same run) (not with ``--quick``: n up to 32 000, no 2-D floor).

Run: ``PYTHONPATH=src python benchmarks/bench_scale_operator.py [--quick] [--limit SECONDS]``
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results

SIZES = (8_000, 32_000, 128_000)
T_LAPSE, SIGMA = 0.05, 0.1
FLOOR = {"sources": 512, "t": 0.1, "sigma": 0.05}  # sensors: a grid of (sources/4)² on the same floor


def _readings(model, sigma: float):
    import numpy as np

    rng = np.random.default_rng(0)
    n = model.shape[1]
    f0 = np.zeros(n)
    f0[rng.choice(n, 3, replace=False)] = 1.0
    return model.matvec(f0) + sigma * rng.standard_normal(model.shape[0])


def _solve(model, sigma: float) -> dict:
    from dpcloak.recovery import bpdn, clear_compression_cache

    y = _readings(model, sigma)
    clear_compression_cache()
    t, cpu = time.perf_counter(), time.process_time()
    rec = bpdn(model, y, sigma=sigma)
    return {"solve": time.perf_counter() - t, "solve_cpu": time.process_time() - cpu, "converged": rec.converged,
            "gap": (rec.objective - rec.lower_bound) / max(1.0, rec.objective)}


def _ours(kind: str, size: int) -> dict:
    from dpcloak.domains import Grid
    from dpcloak.models import heat_kernel_1d, heat_kernel_2d
    from dpcloak.privacy.sensitivity import l2_sensitivity

    _solve(heat_kernel_1d(1_000, 500, T_LAPSE), SIGMA)  # imports and first-call costs out of the timings
    if kind in ("floor", "floor-delta"):
        t = time.perf_counter()
        model = heat_kernel_2d(Grid((size, size)), Grid((size // 4,) * 2), FLOOR["t"])
        build = time.perf_counter() - t
        t = time.perf_counter()
        value = l2_sensitivity(model)
        delta = time.perf_counter() - t
        solved = _solve(model, FLOOR["sigma"]) if kind == "floor" else {}
        return {"build": build, **solved, "delta": delta, "value": value, "rss": _results.peak_rss_mb()}
    build = math.inf
    for _ in range(3):  # milliseconds: the best of three
        t = time.perf_counter()
        model = heat_kernel_1d(size, size // 2, T_LAPSE)
        build = min(build, time.perf_counter() - t)
    out = {"build": build, **_solve(model, SIGMA)}
    t = time.perf_counter()
    out["value"] = l2_sensitivity(model)
    out["delta"] = time.perf_counter() - t
    return {**out, "matrix_free": model.matrix_free, "rss": _results.peak_rss_mb()}


def _peer(kind: str, size: int) -> dict:
    """The dense build of before, its Δ2, and our operator checked against it (2-D: Δ2 from the columns)."""
    import numpy as np

    if kind == "floor-delta":
        from dpcloak.domains import Grid
        from dpcloak.models import LinearModel, heat_kernel_2d

        model = heat_kernel_2d(Grid((size, size)), Grid((size // 4,) * 2), FLOOR["t"])
        t = time.perf_counter()
        norms = LinearModel.column_difference_norms(model, model.domain.neighbours())  # the general path
        return {"delta": time.perf_counter() - t, "value": float(np.max(norms)), "rss": _results.peak_rss_mb()}

    from dpcloak.domains import Line
    from dpcloak.models import DenseModel, heat_kernel_1d
    from dpcloak.models.heat import gaussian_kernel_1d

    n, m, T = size, size // 2, 0.5 * T_LAPSE
    t = time.perf_counter()
    sources = Line(n).points()
    sensors = np.arange(1, m + 1, dtype=float) / m
    dense = DenseModel(gaussian_kernel_1d(sensors[:, None] - sources[None, :], T), domain=Line(n),
                       sensor_positions=sensors)
    build = time.perf_counter() - t
    t = time.perf_counter()
    value = float(np.max(dense.column_difference_norms(dense.domain.neighbours())))
    delta = time.perf_counter() - t
    ours = heat_kernel_1d(n, m, T_LAPSE)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n), rng.standard_normal(m)
    # relative to |A||x| (= A|x|: the kernel is positive), the size of every product's terms
    mv = float(np.max(np.abs(ours.matvec(x) - dense.matvec(x)) / dense.matvec(np.abs(x))))
    rmv = float(np.max(np.abs(ours.rmatvec(y) - dense.rmatvec(y)) / dense.rmatvec(np.abs(y))))
    return {"build": build, "delta": delta, "value": value, "matvec": mv, "rmatvec": rmv,
            "rss": _results.peak_rss_mb()}


def _vs_solve(size: str, n: int, build: float, solve: float, rss: float) -> dict:
    """A results row with the cold solve on the same operator as the peer: its ratio ≥ 1 means build ≤ solve."""
    return {**_results.row(size, n, build, solve, math.inf, rss), "ours_s": round(build, 6)}


def _fits(n: int, m: int) -> bool:
    from dpcloak._validation import available_memory

    return 3 * 8 * m * n <= 0.8 * available_memory()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 32 000, no 2-D floor, no JSON")
    parser.add_argument("--limit", type=float, default=120.0,
                        help="dense peer time limit per size: build, its Δ2 and the comparison (default 120 s)")
    _results.add_worker_option(parser)
    args = parser.parse_args()
    if _results.run_worker(args, _ours, _peer):
        return
    sizes = SIZES[:2] if args.quick else SIZES
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; dense peer limit {args.limit:g} s")
    print(f"\n== 1-D heat kernel, m = n/2, t = {T_LAPSE:g}, σ = {SIGMA:g}  (seconds; our build in ms, best of 3)")
    print(f"{'n':>7} {'build':>7} {'cold solve':>10} {'build/solve':>11} {'gap':>8} {'Δ2':>6} {'RSS MB':>7} | "
          f"{'dense build':>11} {'dense Δ2':>8} {'RSS MB':>7} {'ratio':>7} | "
          f"{'matvec':>7} {'rmatvec':>7} {'Δ2 diff':>7}")
    rows, builds, solves = [], [], []
    for n in sizes:
        ours = _results.spawn_worker(__file__, "ours", "line", n, None)
        assert ours is not None and ours["matrix_free"]
        if _fits(n, n // 2):
            peer = _results.spawn_worker(__file__, "peer", "line", n, args.limit)
            why = f"> {args.limit:g} s"
        else:
            peer, why = None, "no memory"
        r = _results.row(str(n), n, ours["build"], None if peer is None else peer["build"], args.limit, ours["rss"])
        r["ours_s"] = round(ours["build"], 6)  # milliseconds: more digits than the shared row keeps
        if peer is None and why == "no memory":
            r["peer_note"] = f"dense matrix needs {3 * 8 * n * (n // 2) / 2**30:.0f} GiB"
        rows.append({**r, "solve_s": round(ours["solve"], 4),
                     "build_over_solve": round(ours["build"] / ours["solve"], 4)})
        builds.append(ours["build"])
        solves.append(ours["solve"])
        line = (f"{n:>7} {ours['build'] * 1e3:>7.2f} {ours['solve']:>10.2f} {ours['build'] / ours['solve']:>11.1e} "
                f"{ours['gap']:>8.1e} {ours['delta']:>6.2f} {ours['rss']:>7.0f} | ")
        if peer is None:
            line += f"{why:>11} {'-':>8} {'-':>7} {'-':>7} | {'-':>7} {'-':>7} {'-':>7}"
        else:
            d2 = abs(ours["value"] - peer["value"]) / peer["value"]
            line += (f"{peer['build']:>11.2f} {peer['delta']:>8.2f} {peer['rss']:>7.0f} {r['ratio']:>7.0f} | "
                     f"{peer['matvec']:>7.0e} {peer['rmatvec']:>7.0e} {d2:>7.0e}")
        if not ours["converged"]:
            line += " (solve not converged)"
        print(line, flush=True)
    print(f"   log-log slope over n: build {_results.slope_text(_results.slope(list(sizes), builds))}, "
          f"cold solve {_results.slope_text(_results.slope(list(sizes), solves))}")
    ratios = [b / s for b, s in zip(builds, solves, strict=True)]
    if not args.quick:
        _results.write("operator_heat1d", f"1-D heat kernel operator build, m = n/2, t = {T_LAPSE:g}",
                       "dense build (before)", "sources", rows)
        _results.write("operator_vs_solve_heat1d", f"1-D heat kernel operator build, m = n/2, t = {T_LAPSE:g}",
                       "cold BPDN solve, same operator (≥ 1×: build ≤ solve)", "sources",
                       [_vs_solve(str(r["n"]), r["n"], b, s, r["peak_rss_mb"])
                        for r, b, s in zip(rows, builds, solves, strict=True)])
        side = FLOOR["sources"]
        ours = _results.spawn_worker(__file__, "ours", "floor", side, None)
        assert ours is not None
        ratios.append(ours["build"] / ours["solve"])
        _results.write("operator_vs_solve_floor2d",
                       f"2-D floor operator build, {side // 4}² sensors, t = {FLOOR['t']:g}",
                       "cold BPDN solve, same operator (≥ 1×: build ≤ solve)", "sources",
                       [_vs_solve(f"{side}²", side * side, ours["build"], ours["solve"], ours["rss"])])
        print(f"\n== 2-D floor {side}² sources, {side // 4}² sensor grid, t = {FLOOR['t']:g}, "
              f"σ = {FLOOR['sigma']:g}: build {ours['build']:.4f} s, cold solve {ours['solve']:.2f} s "
              f"({ours['solve_cpu']:.2f} s CPU) "
              f"(build/solve {ours['build'] / ours['solve']:.1e}, gap {ours['gap']:.1e}, "
              f"converged {ours['converged']}), Δ2 {ours['delta']:.2f} s, "
              f"peak RSS {ours['rss']:.0f} MB; dense peer (np.kron, "
              f"{8 * side**2 * (side // 4) ** 2 / 2**30:.0f} GiB): does not fit")
        small = 128
        ours = _results.spawn_worker(__file__, "ours", "floor-delta", small, None)
        peer = _results.spawn_worker(__file__, "peer", "floor-delta", small, args.limit)
        assert ours is not None
        if peer is None:
            print(f"   Δ2 at {small}² / {small // 4}²: ours {ours['delta']:.2f} s, general path > {args.limit:g} s")
        else:
            print(f"   Δ2 at {small}² / {small // 4}²: ours {ours['delta']:.2f} s, general path (columns) "
                  f"{peer['delta']:.2f} s, ratio {peer['delta'] / ours['delta']:.0f}, "
                  f"rel. diff {abs(ours['value'] - peer['value']) / peer['value']:.0e}")
    print(f"\nbuild <= cold solve at every size: {max(ratios) <= 1.0} (largest build/solve {max(ratios):.1e})")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

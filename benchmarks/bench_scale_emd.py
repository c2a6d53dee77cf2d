"""Size ladder: exact L1 grid EMD, dpcloak against OR-Tools min-cost flow (time-limited), same run.

Sizes 64², 128², 256², 512² by default, any with ``--sizes`` (issue 34 asks for 1024² ≤ 10 s and 2048² ≤ 60 s on noise;
``--quick``: noise only, up to 256², a 2 s peer limit, no results file). Two inputs from
``bench_emd.instance``: ``noise`` (i.i.d. u⁴ cells on both sides, the hard case, served by cost
scaling) and ``heatmap`` (a Gaussian mixture against a Laplace-noised one, served by the multiscale
simplex). Every solve runs in its own subprocess, so each row's peak RSS is that solve's; our time
excludes numba compilation (a warm-up call first), OR-Tools' excludes its import. The value must
equal OR-Tools' to 1e-9 relative where OR-Tools finishes (flagged otherwise).

Printed per size: our wall and CPU time, OR-Tools' time (or its limit), the ratio, the relative difference of the
values, our peak RSS; then the log-log slope of our time over the cells. Writes ``results/emd_grid_noise.json`` and
``results/emd_grid_heatmap.json`` (``_results`` schema; not with ``--quick`` or ``--sizes``).

Run: ``PYTHONPATH=src python benchmarks/bench_scale_emd.py [--quick] [--sizes 256 512 1024] [--limit SECONDS]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
from bench_emd import instance, run_ortools

SIZES = (64, 128, 256, 512)


def _ours(kind: str, d: int) -> dict:
    from dpcloak.domains import Grid
    from dpcloak.metrics import emd

    warm_p, warm_q = instance(kind, 80, seed=1)
    emd(warm_p.astype(float), warm_q.astype(float), Grid((80, 80)))  # compile / load the numba kernels
    p, q = instance(kind, d)
    t, c = time.perf_counter(), time.process_time()
    value = emd(p.astype(float), q.astype(float), Grid((d, d)))
    return {"time": time.perf_counter() - t, "cpu": time.process_time() - c, "value": value,
            "rss": _results.peak_rss_mb()}


def _peer(kind: str, d: int) -> dict:
    import ortools.graph.python.min_cost_flow  # noqa: F401  (import time is not solve time)

    p, q = instance(kind, d)
    t = time.perf_counter()
    value = run_ortools(p, q, d)
    return {"time": time.perf_counter() - t, "value": value, "rss": _results.peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="noise, sizes up to 256², peer limit 2 s, no JSON")
    parser.add_argument("--limit", type=float, default=None, help="OR-Tools time limit per solve (default 40 s)")
    parser.add_argument("--kinds", nargs="+", default=["noise", "heatmap"], choices=["noise", "heatmap"])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="grid sides (default 64 128 256 512)")
    _results.add_worker_option(parser)
    args = parser.parse_args()
    if _results.run_worker(args, _ours, _peer):
        return
    sizes = args.sizes or (SIZES[:-1] if args.quick else SIZES)
    limit = args.limit if args.limit is not None else (2.0 if args.quick else 40.0)
    kinds = ["noise"] if args.quick else args.kinds
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; OR-Tools limit {limit:g} s")
    for kind in kinds:
        print(f"\n== L1 grid EMD, {kind} inputs")
        print(f"{'size':>8} {'dpcloak s':>10} {'(CPU)':>7} {'OR-Tools s':>11} {'ratio':>8} {'rel. diff':>10} "
              f"{'peak RSS MB':>12}")
        rows = []
        for d in sizes:
            ours = _results.spawn_worker(__file__, "ours", kind, d, None)
            assert ours is not None
            peer = _results.spawn_worker(__file__, "peer", kind, d, limit)
            if peer is None:
                peer_txt, diff_txt = f"> {limit:g}", "-"
            else:
                rel = abs(peer["value"] - ours["value"]) / abs(peer["value"])
                peer_txt, diff_txt = f"{peer['time']:.3f}", f"{rel:.1e}" + ("" if rel <= 1e-9 else " MISMATCH")
            r = _results.row(f"{d}²", d * d, ours["time"], None if peer is None else peer["time"], limit, ours["rss"])
            rows.append(r)
            bound = "≥" if peer is None else " "
            print(f"{d:>7}² {ours['time']:>10.3f} {ours['cpu']:>7.3f} {peer_txt:>11} {bound}{r['ratio']:>7.1f} "
                  f"{diff_txt:>10} {ours['rss']:>12.0f}", flush=True)
        print(f"   log-log slope of our time over the cells: "
              f"{_results.slope_text(_results.slope([r['n'] for r in rows], [r['ours_s'] for r in rows]))}")
        if args.quick or args.sizes:
            continue
        _results.write(f"emd_grid_{kind}", f"exact EMD, L1 grid, {kind} inputs", "OR-Tools SimpleMinCostFlow",
                       "cells", rows)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

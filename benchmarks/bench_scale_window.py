"""Size ladder (issue 34): one collector window recovered with its uncertainty on a 2-D floor up to city scale.

The network: ``side²`` source cells on the unit square seen by a ``(side/√10)²`` grid of sensors (the
separable heat kernel ``heat_kernel_2d(Grid, Grid, t = 0.1)``, matrix-free Kronecker factors), a
``SensorNetwork`` with ``Relation.move(2/side)``, ε = 1, δ = 1e-6; at ``side = 316``: 99,856 sources and
10⁴ sensors. Three crowds of 30 people; each window's readings carry fresh Gaussian noise of the network's σ.
A window is what the collector runs (:meth:`SensorNetwork.recover` with every sensor present): BPDN at
the default radius plus the 8-draw bootstrap uncertainty (EMD in metres of the grid), i.e. nine solves.

* **ours** — the collector's path: warm-started from the previous window (the estimate, then each
  bootstrap draw from the one before), the operator's compression shared by all solves;
* **peer** — the same window recovered from scratch (no warm start, compression cache cleared), what a
  recovery without the collector's state costs.

Printed per side: sources, sensors, the network's set-up (Δ2, once per deployment), peer and ours CPU and
wall seconds per window, peer/ours, ours/goal (1 s CPU per window), whether one window per minute keeps up
(CPU per window ≤ 60 s on one core), the certified relative duality gap of the window's map
(``(objective − lower bound) / objective``), the peak RSS, the map's status (ours/peer: ``fit``, or
``least-residual`` when the noise fell outside the χ² radius, about 5 % of windows: the map is then the
least-residual one, no gap is certified and the bootstrap is skipped); the log-log slope of ours over the sources.
Both sides take the bootstrap's EMDs between the recovered maps' supports (``dpcloak.metrics._support``, a few
cells each) and the products with sparse maps from their columns.
Wall time includes waiting for a core on a shared machine; CPU is the steadier measure. The load average is
printed at the start and the end. Writes ``results/window_floor2d.json``.

Run: ``PYTHONPATH=src python benchmarks/bench_scale_window.py [--sides 100 200 316]`` (about 2-3 min idle).
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

SIDES = (100, 200, 316)
GOAL_CPU_S = 1.0
DRAWS = 8


def _window(net, y, warm, seed: int, draws: int = DRAWS) -> tuple[float, float, object]:
    from dpcloak.recovery import clear_compression_cache

    if warm is None:
        clear_compression_cache()
    w0, c0 = time.perf_counter(), time.process_time()
    result = net.recover(y, warm_start=warm, uncertainty_draws=draws, rng=seed)
    return time.process_time() - c0, time.perf_counter() - w0, result


def _gap(result) -> float:
    rec = result.recovery
    return (rec.objective - rec.lower_bound) / max(1.0, abs(rec.objective))


def one_side(side: int) -> dict:
    import numpy as np

    from dpcloak.domains import Grid
    from dpcloak.models import heat_kernel_2d
    from dpcloak.sensors import Relation, SensorNetwork

    sensors = round(side / math.sqrt(10.0))
    model = heat_kernel_2d(Grid((side, side)), Grid((sensors, sensors)), 0.1)
    c0 = time.process_time()
    net = SensorNetwork(model, relation=Relation.move(2.0 / side), epsilon=1.0, delta=1e-6, budget=(1e4, 1e-5))
    setup = time.process_time() - c0
    rng = np.random.default_rng(side)
    truth = np.zeros(net.n_sources)
    truth[rng.choice(net.n_sources, 3, replace=False)] = 30.0
    clean = model.matvec(truth)
    windows = [clean + rng.normal(0.0, net.sigma, net.n_sensors) for _ in range(2)]
    _, _, previous = _window(net, windows[0], None, 0, 0)  # the window before: its map is what the next starts from
    peer_cpu, peer_wall, peer = _window(net, windows[1], None, 1)
    ours_cpu, ours_wall, ours = _window(net, windows[1], previous, 1)
    return {"side": side, "sources": net.n_sources, "sensors": net.n_sensors, "setup_cpu": setup,
            "peer_cpu": peer_cpu, "peer_wall": peer_wall, "ours_cpu": ours_cpu, "ours_wall": ours_wall,
            "gap_peer": _gap(peer), "gap_ours": _gap(ours),
            "status": f"{ours.status}/{peer.status}", "rss": _results.peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sides", type=int, nargs="+", default=list(SIDES), help="sources per side of the floor")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start (shared)")
    print(f"== one window with the {DRAWS}-draw bootstrap, every sensor present (s; CPU / wall; ours = warm-started "
          f"from the previous window, peer = from scratch)")
    print(f"{'sources':>8} {'sensors':>7} | {'set-up':>7} | {'peer CPU':>8} {'wall':>6} | {'ours CPU':>8} {'wall':>6} "
          f"| {'peer/ours':>9} {'ours/goal':>9} {'1/min':>5} | {'gap ours':>8} {'gap peer':>8} | {'RSS MB':>7} status")
    rows = []
    for side in args.sides:
        r = one_side(side)
        keeps_up = "yes" if r["ours_cpu"] <= 60.0 else "no"
        print(f"{r['sources']:>8} {r['sensors']:>7} | {r['setup_cpu']:>7.1f} | {r['peer_cpu']:>8.2f} "
              f"{r['peer_wall']:>6.2f} | {r['ours_cpu']:>8.2f} {r['ours_wall']:>6.2f} | "
              f"{r['peer_cpu'] / r['ours_cpu']:>9.2f} {r['ours_cpu'] / GOAL_CPU_S:>9.2f} {keeps_up:>5} | "
              f"{r['gap_ours']:>8.1e} {r['gap_peer']:>8.1e} | {r['rss']:>7.0f} {r['status']}", flush=True)
        rows.append(_results.row(f"{side}²", r["sources"], r["ours_cpu"], r["peer_cpu"], math.inf, r["rss"]))
    _results.write("window_floor2d", f"window recovery + {DRAWS}-draw bootstrap, 2-D floor, (side/√10)² sensors, "
                   "warm-started, CPU s", "the same window from scratch", "sources", rows)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

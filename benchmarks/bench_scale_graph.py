"""Size ladder: graph diffusion ``exp(−τL)`` + exact Δ2 on sparse spatial graphs, sensors on 2 000 nodes.

Graphs: the 2-D grid graph (71², 141², 224² nodes) and a random geometric graph in the unit square
(5 000, 20 000, 50 000 nodes, radius for a mean degree of 8, largest component), τ = 2, sensors
on 2 000 random nodes (all of them below that). Ours: ``graph_diffusion(g, 2, sensors=...)`` then
``l2_sensitivity`` (the local, certified rows of ``LocalGraphDiffusion``). Peer: the matrix-free
method of before, ``scipy.sparse.linalg.expm_multiply`` on the ``n x m`` block of sensor columns,
then the column differences over the edges (time-limited). Both exclude building the networkx
graph; each runs in its own subprocess (peak RSS per row is ours). Where the peer finishes the
two Δ2 must agree to 1e-9 relative.

Writes ``results/graph_delta2_grid.json`` and ``results/graph_delta2_rgg.json`` (not with ``--quick``:
grid graph up to 141² nodes, 5 s peer limit).

Run: ``PYTHONPATH=src python benchmarks/bench_scale_graph.py [--quick] [--limit SECONDS]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results

SIZES = {"grid": (71, 141, 224), "rgg": (5_000, 20_000, 50_000)}
SENSORS = 2_000
TAU = 2.0


def _graph(kind: str, size: int):
    import networkx as nx
    import numpy as np

    if kind == "grid":
        return nx.convert_node_labels_to_integers(nx.grid_2d_graph(size, size))
    g = nx.random_geometric_graph(size, float(np.sqrt(8.0 / (np.pi * size))), seed=1)
    return nx.convert_node_labels_to_integers(g.subgraph(max(nx.connected_components(g), key=len)).copy())


def _sensors(n: int):
    import numpy as np

    return np.sort(np.random.default_rng(0).choice(n, min(SENSORS, n), replace=False))


def _ours(kind: str, size: int) -> dict:
    from dpcloak.domains import GraphDomain
    from dpcloak.models import graph_diffusion
    from dpcloak.privacy.sensitivity import l2_sensitivity

    small = GraphDomain(_graph("grid", 12))
    l2_sensitivity(graph_diffusion(small, TAU, sensors=[0, 5, 9]))  # load the numba kernels
    g = _graph(kind, size)
    t, c = time.perf_counter(), time.process_time()
    domain = GraphDomain(g)
    model = graph_diffusion(domain, TAU, sensors=_sensors(domain.size))
    value = l2_sensitivity(model)
    return {"time": time.perf_counter() - t, "cpu": time.process_time() - c, "value": value, "n": domain.size,
            "bound": model.truncation_error,
            "rss": _results.peak_rss_mb()}


def _peer(kind: str, size: int) -> dict:
    import numpy as np
    import scipy.sparse.linalg as spla

    from dpcloak.domains import GraphDomain

    g = _graph(kind, size)
    t = time.perf_counter()
    domain = GraphDomain(g)
    sensors = _sensors(domain.size)
    start = np.zeros((domain.size, len(sensors)))
    start[sensors, np.arange(len(sensors))] = 1.0
    block = spla.expm_multiply(-TAU * domain.laplacian().astype(float), start).T  # K[sensors, :] (K symmetric)
    pairs = domain.neighbours()
    value = max(float(np.linalg.norm(block[:, pairs[i:i + 4096, 0]] - block[:, pairs[i:i + 4096, 1]], axis=0).max())
                for i in range(0, len(pairs), 4096))
    return {"time": time.perf_counter() - t, "value": value, "rss": _results.peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="grid graph only, up to 141², peer limit 5 s, no JSON")
    parser.add_argument("--limit", type=float, default=None, help="peer time limit per solve (default 30 s)")
    _results.add_worker_option(parser)
    args = parser.parse_args()
    if _results.run_worker(args, _ours, _peer):
        return
    limit = args.limit if args.limit is not None else (5.0 if args.quick else 30.0)
    kinds = ["grid"] if args.quick else ["grid", "rgg"]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; peer limit {limit:g} s")
    for kind in kinds:
        sizes = SIZES[kind][:2] if args.quick else SIZES[kind]
        print(f"\n== {kind} graph, τ = {TAU:g}, {SENSORS} sensors")
        print(f"{'nodes':>7} {'dpcloak s':>10} {'(CPU)':>7} {'expm_mult s':>12} {'ratio':>8} {'rel. diff':>10} "
              f"{'bound':>8} {'peak RSS MB':>12}")
        rows = []
        for size in sizes:
            ours = _results.spawn_worker(__file__, "ours", kind, size, None)
            assert ours is not None
            peer = _results.spawn_worker(__file__, "peer", kind, size, limit)
            if peer is None:
                peer_txt, diff_txt = f"> {limit:g}", "-"
            else:
                rel = abs(peer["value"] - ours["value"]) / abs(peer["value"])
                peer_txt, diff_txt = f"{peer['time']:.2f}", f"{rel:.1e}" + ("" if rel <= 1e-9 else " MISMATCH")
            r = _results.row(str(ours["n"]), ours["n"], ours["time"], None if peer is None else peer["time"], limit,
                             ours["rss"])
            rows.append(r)
            bound = "≥" if peer is None else " "
            print(f"{ours['n']:>7} {ours['time']:>10.2f} {ours['cpu']:>7.2f} {peer_txt:>12} {bound}{r['ratio']:>7.1f} "
                  f"{diff_txt:>10} {ours['bound']:>8.0e} {ours['rss']:>12.0f}", flush=True)
        if args.quick:
            continue
        _results.write(f"graph_delta2_{kind}", f"graph diffusion + Δ2, {kind} graph, {SENSORS} sensors",
                       "scipy expm_multiply on the sensor columns", "nodes", rows)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

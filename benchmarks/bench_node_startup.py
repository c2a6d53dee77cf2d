"""Sensor-node start-up on the 1000 × 2000 floor: the release spec read off the deployment, next to today's rebuild.

The deployment: a 50 m × 40 m floor, 1,000 people counters (40 × 25), 2,000 source cells (heat model,
1 m spacing), one person moved by up to 2 m, ε = 1, δ = 1e-6 (``dpcloak deploy init``'s floor).

Measured in this process (imports done), for fresh objects each time, median of ``--repeats``:

* **ours** — what ``dpcloak sensor run`` does before it can sample: read ``deployment.json`` and the
  credential (``load_deployment(rebuild=False)``: the release spec, with Δ2 as stated in the file and
  bound by the fingerprint the node checks against its credential), open the node (its existing
  ledger), then sample one number (:meth:`ReleaseSpec.release_reading`, exact discrete Gaussian from
  the OS CSPRNG);
* **peer** — the same with the whole network rebuilt, as the node did before (``load_deployment()``:
  the 1000 × 2000 model, the sensitivity search over the relation's pairs, Δ2 and σ re-derived), and the
  number sampled by ``SensorNetwork.privatize_reading``.

Also printed: the first durable release (``SensorNode.release``: the ledger's write-ahead record, fsync'd),
and the load average. Goal (issue 29): start-up ≤ 50 ms.

Run: ``PYTHONPATH=src python benchmarks/bench_node_startup.py [--repeats 7]`` (about 30 s, most of it building
the deployment once). Writes ``benchmarks/results/bench_node_startup.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dpcloak.service import _network
from dpcloak.service.config import Deployment, load_credential, load_deployment, write_deployment
from dpcloak.service.node import SensorNode

RESULTS = Path(__file__).resolve().parent / "results"
GOAL_S = 0.050


def _start(directory: Path, sensor: int, *, rebuild: bool) -> tuple[SensorNode, Callable[[], float]]:
    """Open sensor ``sensor``'s node and return it with the function that samples its next number."""
    dep = load_deployment(directory, rebuild=rebuild)
    node = SensorNode(deployment=dep, credential=load_credential(directory / "sensors" / f"sensor-{sensor}.json"),
                      ledger=directory / f"ledger-{sensor}.db", url="http://127.0.0.1:9", clock=lambda: dep.start)
    if rebuild:
        net = dep.sensor_network
        return node, lambda: net.privatize_reading(sensor, 3.0)
    spec = dep.release_spec
    return node, lambda: spec.release_reading(3.0)


def _timed(directory: Path, sensor: int, *, rebuild: bool) -> float:
    t0 = time.perf_counter()
    node, sample = _start(directory, sensor, rebuild=rebuild)
    sample()
    elapsed = time.perf_counter() - t0
    node.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    t0 = time.perf_counter()
    net = _network.floor_plan_network(width=50.0, height=40.0, sensor_cols=40, sensor_rows=25, epsilon=1.0,
                                      delta=1e-6, budget=(10.0, 1e-5))
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        dep = Deployment.create(network=net, window_seconds=60.0, period_windows=10, start=time.time() - 30.0)
        write_deployment(directory, dep)
        built = time.perf_counter() - t0
        print(f"deployment: {net.n_sensors} sensors x {net.n_sources} sources, built in {built:.1f} s")
        for sensor in (0, 1):  # create the ledgers (a node restarts on its existing ledger)
            _start(directory, sensor, rebuild=False)[0].close()
        ours = [_timed(directory, 0, rebuild=False) for _ in range(args.repeats)]
        peer = [_timed(directory, 1, rebuild=True) for _ in range(max(3, args.repeats // 2))]
        first = []
        for k in range(args.repeats):
            node, _ = _start(directory, 2 + k, rebuild=False)
            t = time.perf_counter()
            node.release(3.0, window=0)
            first.append(time.perf_counter() - t)
            node.close()
    ours_s, peer_s, first_s = statistics.median(ours), statistics.median(peer), statistics.median(first)
    load = os.getloadavg()[0]
    print(f"node start-up to its first sample: ours {1e3 * ours_s:.1f} ms (min {1e3 * min(ours):.1f}), "
          f"peer (full rebuild) {1e3 * peer_s:.0f} ms (min {1e3 * min(peer):.0f}); peer/ours = {peer_s / ours_s:.0f}x; "
          f"goal <= {1e3 * GOAL_S:.0f} ms: {'met' if ours_s <= GOAL_S else 'NOT met'}")
    print(f"first durable release (ledger write-ahead, fsync): {1e3 * first_s:.1f} ms; load average {load:.2f}")
    RESULTS.mkdir(exist_ok=True)
    out = {"kernel": "sensor node start-up, 1000 sensors x 2000 sources", "peer": "full network rebuild",
           "unit": "s", "ours_s": round(ours_s, 5), "ours_min_s": round(min(ours), 5), "peer_s": round(peer_s, 4),
           "ratio": round(peer_s / ours_s, 1), "first_release_s": round(first_s, 5), "goal_s": GOAL_S,
           "repeats": args.repeats, "load_avg": round(load, 2),
           "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    (RESULTS / "bench_node_startup.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""What healing continual counters' gaps costs (issue 30): the collector's catch-up lookup per window close, and
the node's catch-up records.

1. Collector. ``ContinualStreams`` keeps each sensor's decodable counter run through the final windows; since
   catch-ups it looks up, at every close, the slot of each kept run's missing position (one read through the slot
   index) and extends a run whose slot was filled. Peer, in the same run: the same kept streams without the lookup
   (a run ended by a gap stays ended, the behaviour before). ``--sensors`` counters over ``--windows`` one-minute
   windows in SQLite, half of them with a report lost for good; CPU and wall time per close over the last 100
   closes, and the ratio.
2. Node. A counting node that missed n release windows records each missed output (its own authenticated,
   fsync'd ledger record) before its next release. Peer: n ordinary releases of the same node. Per output, and
   the ratio.

Run: ``python benchmarks/bench_catch_up.py`` (about a minute; prints the load average with each number).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from dpcloak.sensors import SensorNetwork
from dpcloak.sensors.config import network_to_dict
from dpcloak.service.config import Deployment, load_credential, write_deployment
from dpcloak.service.node import SensorNode
from dpcloak.service.store import Store, sqlite_url
from dpcloak.service.windows import ContinualStreams, continual_increments


class _NoLookup(ContinualStreams):
    """The peer: kept runs never look for catch-ups (before issue 30's healing)."""

    def _heal(self, store: Store) -> None:
        pass


def _deployment(sensors: int, horizon: int) -> Deployment:
    net = SensorNetwork.from_coordinates(sensors=[[10.0 * j, 0.0] for j in range(sensors)], measurement="counts",
                                         epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5))
    return Deployment(deployment_id="heal01", network=network_to_dict(net), window_seconds=60.0, start=0.0,
                      period_windows=60, continual={"horizon": horizon, "epsilon": 1.0, "delta": 1e-6})


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def collector_side(sensors: int, windows: int, directory: Path) -> None:
    dep = _deployment(sensors, windows)
    counter = dep.counter
    assert counter is not None
    store = Store(sqlite_url(directory / "c.db"))
    store.migrate()
    store.register(dep)
    rng = np.random.default_rng(0)
    lost = {j: int(rng.integers(10, windows - 200)) for j in range(sensors // 2)}
    rows = []
    for j in range(sensors):
        stream = counter.stream()
        for w in range(windows):
            value = stream.push(3) * counter.grid
            if lost.get(j) != w:
                rows.append({"deployment_id": dep.deployment_id, "sensor_id": j, "window": w,
                             "report_id": f"r{j}-{w}", "value": value, "mac": "00", "received_at": 60.0 * w})
    store.insert_reports(rows)
    first = windows - 100
    times = {}
    for name, kind in (("with the catch-up lookup", ContinualStreams), ("without (peer)", _NoLookup)):
        kept = kind(dep)
        continual_increments(dep, store, first - 1, range(sensors), streams=kept, final_below=first)  # reads once
        t0, c0 = time.perf_counter(), time.process_time()
        for w in range(first, windows):
            continual_increments(dep, store, w, range(sensors), streams=kept, final_below=w)
        times[name] = ((time.perf_counter() - t0) / 100, (time.process_time() - c0) / 100)
        print(f"  per close, {sensors} counters ({len(lost)} with a gap), windows {first}-{windows - 1}, {name}: "
              f"{1e3 * times[name][1]:.2f} ms CPU, {1e3 * times[name][0]:.2f} ms wall ({_load()})")
    ours, peer = times["with the catch-up lookup"], times["without (peer)"]
    print(f"  ratio with / without the lookup: {ours[1] / peer[1]:.2f} CPU, {ours[0] / peer[0]:.2f} wall")
    store.dispose()


def node_side(missed: int, directory: Path) -> None:
    sensors = 2
    dep = _deployment(sensors, 2 * missed + 2)
    write_deployment(directory, dep)
    times = []
    for j, label in ((0, f"{missed} catch-up records before one release"), (1, f"{missed} ordinary releases (peer)")):
        node = SensorNode(deployment=dep, credential=load_credential(directory / "sensors" / f"sensor-{j}.json"),
                          ledger=directory / f"ledger-{j}.db", url="http://127.0.0.1:9", clock=lambda: 1e9)
        t0, c0 = time.perf_counter(), time.process_time()
        if j == 0:
            node.release(3.0, window=missed)
        else:
            for w in range(missed):
                node.release(3.0, window=w)
        times.append((time.perf_counter() - t0, time.process_time() - c0))
        assert len(node.ledger.all()) == missed + (1 if j == 0 else 0)
        node.close()
        wall, cpu = times[-1]
        print(f"  {label}: {1e3 * cpu / missed:.2f} ms CPU, {1e3 * wall / missed:.2f} ms wall per output ({_load()})")
    print(f"  ratio catch-up / ordinary per output: {times[0][1] / times[1][1]:.2f} CPU, "
          f"{times[0][0] / times[1][0]:.2f} wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sensors", type=int, default=16)
    parser.add_argument("--windows", type=int, default=700, help="horizon and windows stored (>= 400)")
    parser.add_argument("--missed", type=int, default=300, help="release windows the node missed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print("collector: catch-up lookup per window close")
        collector_side(args.sensors, max(400, args.windows), Path(tmp))
        print("node: catch-up records")
        node_side(args.missed, Path(tmp) / "node")


if __name__ == "__main__":
    main()

"""Throughput against an older dpcloak, in the same run: collector ingest, soak and one sensor node's release.

Issue 28 asks that the privacy core's rebuild (events, one accountant, the authenticated ledger) cost no
more than 10 % of throughput. This runs the same measurements on two checkouts, turn and turn about,
each in its own process with ``PYTHONPATH=<checkout>/src`` (so each imports its own code, and each
benchmark script is the checkout's own, with the deployment format its code reads):

* ``bench_collector.py --quick``: readings/s and server CPU µs per reading of the collector
  (single-reading requests and gateway batches of 100);
* ``bench_soak.py --quick --mode single --rate R``: the same offered rate for both, the CPU µs per
  reading of the collector and the achieved rate;
* the node's release path: ``SensorNode.release`` of one reading, recorded durably in its ledger
  before it may be sent (median ms over ``--releases`` releases of a fresh two-sensor deployment).

The order of the two checkouts alternates between the benchmarks and the repetitions (``--repeat``;
the medians are compared), so a drift of the (shared) machine falls on both. Printed: each figure for
both and the ratio new / old of time per unit (> 1: the new code is slower). Results:
``benchmarks/results/bench_vs_old.json``.

Run: ``git worktree add /work/wt/oldcode ca44b0c`` once, then
``PYTHONPATH=src python benchmarks/bench_vs_old.py --old /work/wt/oldcode [--skip soak]`` (about 2-3 minutes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NEW = HERE.parent

_NODE_RELEASES = r"""
import json, statistics, sys, tempfile, time
from pathlib import Path
from dpcloak.service.config import load_credential, write_deployment
from dpcloak.service.examples import two_sensor_deployment
from dpcloak.service.node import SensorNode

n = int(sys.argv[1])
dep = two_sensor_deployment()
with tempfile.TemporaryDirectory(dir=sys.argv[2]) as tmp:
    d = Path(tmp)
    write_deployment(d, dep)
    now = [0.0]
    node = SensorNode(deployment=dep, credential=load_credential(d / "sensors" / "sensor-0.json"),
                      ledger=d / "ledger-0.db", url="http://127.0.0.1:9", clock=lambda: now[0])
    ok = getattr(dep, "is_release_window", lambda w: True)
    windows = [w for w in range(100 * n) if ok(w)][:n]
    times = []
    for w in windows:
        now[0] = dep.window_start(w) + 1.0 if hasattr(dep, "window_start") else dep.start + w * dep.window_seconds + 1.0
        start = time.perf_counter()
        try:
            node.release(5.0, window=w)
        except Exception as exc:  # a budget period filled: the count so far is what is measured
            print(f"stopped at window {w}: {exc}", file=sys.stderr)
            break
        times.append(time.perf_counter() - start)
    node.close()
print(json.dumps({"releases": len(times), "median_ms": 1e3 * statistics.median(times),
                  "p90_ms": 1e3 * statistics.quantiles(times, n=10)[-1]}))
"""


def _env(checkout: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(checkout / "src")
    return env


def _run(cmd: list[str], checkout: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=checkout, env=_env(checkout), capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} in {checkout} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out


def collector(checkout: Path, work: Path) -> dict[str, float]:
    path = work / f"collector-{checkout.name}.json"
    _run([sys.executable, "benchmarks/bench_collector.py", "--quick", "--json", str(path)], checkout, 600)
    rows = {r["size"]: r for r in json.loads(path.read_text())["rows"]}
    return {"single_readings_s": rows[1]["readings_s"], "single_cpu_us": rows[1]["server_cpu_us_per_reading"],
            "batch_readings_s": rows[100]["readings_s"], "batch_cpu_us": rows[100]["server_cpu_us_per_reading"]}


def soak(checkout: Path, work: Path, rate: float) -> dict[str, float]:
    path = work / f"soak-{checkout.name}.json"
    _run([sys.executable, "benchmarks/bench_soak.py", "--quick", "--mode", "single", "--rate", str(rate),
          "--json", str(path)], checkout, 600)
    data = json.loads(path.read_text())
    row = data["rows"][0]
    return {"achieved_readings_s": float(data.get("achieved_rate", 1.0 / row["ours_s"])),
            "cpu_us": float(row.get("server_cpu_us_per_reading", data.get("server_cpu_us_per_reading", "nan")))}


def node(checkout: Path, work: Path, releases: int) -> dict[str, float]:
    out = _run([sys.executable, "-c", _NODE_RELEASES, str(releases), str(work)], checkout, 600)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# (figure, True when larger is better): the ratio printed is new/old of the time per unit
FIGURES = {"collector": [("single_readings_s", True), ("single_cpu_us", False), ("batch_readings_s", True),
                         ("batch_cpu_us", False)],
           "soak": [("achieved_readings_s", True), ("cpu_us", False)],
           "node": [("median_ms", False), ("p90_ms", False)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="checkout of the older dpcloak (a git worktree)")
    parser.add_argument("--skip", action="append", default=[], choices=sorted(FIGURES), help="leave a part out")
    parser.add_argument("--rate", type=float, default=3000.0, help="soak: readings/s offered to both")
    parser.add_argument("--releases", type=int, default=60, help="node: releases timed")
    parser.add_argument("--repeat", type=int, default=1, help="measurements of each checkout per part (the order "
                        "alternating); the figures are the medians")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "bench_vs_old.json")
    args = parser.parse_args()
    old = args.old.resolve()
    head = subprocess.run(["git", "-C", str(old), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    results: dict[str, Any] = {"old": head.stdout.strip() or str(old), "date": datetime.datetime.now(
        datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "load_avg": list(os.getloadavg()), "parts": {}}
    with tempfile.TemporaryDirectory(prefix="dpcloak-vs-old-") as tmp:
        work = Path(tmp)
        parts = {"collector": lambda c: collector(c, work), "soak": lambda c: soak(c, work, args.rate),
                 "node": lambda c: node(c, work, args.releases)}
        for i, (name, measure) in enumerate(p for p in parts.items() if p[0] not in args.skip):
            got: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
            for r in range(args.repeat):
                for label, checkout in [("old", old), ("new", NEW)][:: 1 if (i + r) % 2 == 0 else -1]:
                    got[label].append(measure(checkout))
            part = {}
            for figure, larger_better in FIGURES[name]:
                a, b = (statistics.median(g[figure] for g in got[label]) for label in ("old", "new"))
                ratio = a / b if larger_better else b / a  # new time per unit / old
                part[figure] = {"old": a, "new": b, "ratio": ratio}
                print(f"{name:9s} {figure:20s} old {a:12.4g}  new {b:12.4g}  new/old time per unit {ratio:5.2f}",
                      flush=True)
            results["parts"][name] = part
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()

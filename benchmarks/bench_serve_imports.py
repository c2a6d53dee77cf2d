"""The collector's import cost at restart: what ``dpcloak serve`` imports, next to what it imported before, same run.

Restarting a collector starts with importing the serve path (``dpcloak.service.server``: the web stack, the
store, the deployment's network). Issue 33 asks for a restart-to-ready of at most 5 s; the ingest process
never recovers a map, yet it used to import the metrics (EMD's compiled min-cost flow), the solvers and the
local graph-diffusion kernel, which pull numba in. Measured in fresh processes, the two alternating
(``RUNS`` each, one untimed warm-up each for the file cache):

* **serve path** — ``import dpcloak.service.server``;
* **with the eager imports** — the same, then ``dpcloak.metrics``, ``dpcloak.recovery`` and
  ``dpcloak.models.graph_local`` (what the serve path imported before they were made lazy).

Printed: median wall and CPU seconds (user + system of the child) of each, the ratio serve path / eager, whether
numba was imported by the serve path, and the load average (every process is slower on a loaded machine).

Run: ``PYTHONPATH=src python benchmarks/bench_serve_imports.py`` (about 30 s idle; ``--runs N``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

SERVE = "import dpcloak.service.server"
EAGER = SERVE + "; import dpcloak.metrics, dpcloak.recovery, dpcloak.models.graph_local"


def timed(code: str) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user + system) of one fresh ``python -c code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes of each (alternating)")
    args = parser.parse_args()
    load = os.getloadavg()
    numba = subprocess.run([sys.executable, "-c", SERVE + "; import sys; print('numba' in sys.modules)"],
                           check=True, capture_output=True, text=True).stdout.strip()
    timed(EAGER)  # warm the file cache for both
    got: dict[str, list[tuple[float, float]]] = {"serve path": [], "with the eager imports": []}
    for i in range(args.runs):
        for name, code in [("serve path", SERVE), ("with the eager imports", EAGER)][:: 1 if i % 2 == 0 else -1]:
            got[name].append(timed(code))
    medians = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
               for name, runs in got.items()}
    for name, (wall, cpu) in medians.items():
        print(f"{name:24s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  (median of {args.runs})")
    (w_new, c_new), (w_old, c_old) = medians["serve path"], medians["with the eager imports"]
    print(f"ratio serve path / eager: wall {w_new / w_old:.2f}, CPU {c_new / c_old:.2f}; numba imported by the "
          f"serve path: {numba}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()

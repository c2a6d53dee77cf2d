"""CLI start-up: median wall time of fresh processes, next to ``python -c pass`` in the same run.

Goals (issue "Robust and responsive"): ``dpcloak --help`` and ``--version`` ≤ 0.3 s, ``dpcloak sensitivity
--model heat1d ... --json`` ≤ 0.8 s, each the median of 5 fresh processes. Run with
``PYTHONPATH=src python benchmarks/bench_cli_startup.py`` (``--quick``: 3 processes each, ~10 s). The load
average is printed with the numbers: on a loaded machine every process, ``python -c pass`` included, is slower.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

RUNS = 3 if "--quick" in sys.argv else 5
CASES = {
    "python -c pass": ([sys.executable, "-c", "pass"], None),
    "dpcloak --help": ([sys.executable, "-m", "dpcloak", "--help"], 0.3),
    "dpcloak --version": ([sys.executable, "-m", "dpcloak", "--version"], 0.3),
    "dpcloak sensitivity --json": (
        [sys.executable, "-m", "dpcloak", "sensitivity", "--model", "heat1d", "--n", "100", "--m", "50", "--t", "0.1",
         "--json"],
        0.8,
    ),
}


def median_seconds(command: list[str]) -> float:
    """Median wall time of ``RUNS`` fresh processes (one untimed warm-up for the file cache)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    subprocess.run(command, check=True, capture_output=True, env=env)
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    load = os.getloadavg()
    baseline = median_seconds(CASES["python -c pass"][0])
    print(f"median of {RUNS} fresh processes; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} cores")
    print(f"{'command':30s} {'median s':>9s} {'x python -c pass':>17s} {'goal s':>7s}  verdict")
    for name, (command, goal) in CASES.items():
        seconds = baseline if name == "python -c pass" else median_seconds(command)
        verdict = "" if goal is None else ("meets goal" if seconds <= goal else "MISSES goal")
        goal_text = "" if goal is None else f"{goal:.1f}"
        print(f"{name:30s} {seconds:9.3f} {seconds / baseline:17.1f} {goal_text:>7s}  {verdict}")


if __name__ == "__main__":
    main()

"""Export memory against history length: the streamed CSV and Parquet exports of a short and a 5x longer history.

Issue 33 asks that the export stream in constant memory. The analyst's export reads the closed windows in
pieces (``EXPORT_CHUNK_WINDOWS`` windows: a CSV piece, a Parquet row group) and hands each piece on; what
it holds should not grow with the history. Each measurement is a fresh process over a history written by
``_collector_load.write_history`` (the 40-sensor floor, every window closed): the process imports pyarrow,
then takes its resident memory as the baseline (``--warm``: after writing a one-row Parquet table first, so
that pyarrow's one-time start of its Parquet writer is not counted), streams the export to nowhere, and
reports the peak resident memory above the baseline (Linux ``VmHWM`` after resetting it).

Printed per format: the growth for both history lengths and their ratio long / short (1.0: constant memory;
5.0: memory proportional to the history), with the size, wall and CPU time of the export, and the load
average. Results: ``benchmarks/results/bench_export_memory.json``.

Run: ``PYTHONPATH=src python benchmarks/bench_export_memory.py`` (about a minute idle; ``--windows N`` the short
history, default 2,000 windows = 80,000 reports; the long one is 5x).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import io, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import _collector_load as shared
from dpcloak.service import views
from dpcloak.service.config import Deployment
from dpcloak.service.store import Store, sqlite_url
import pyarrow, pyarrow.parquet

n, kind, warm, directory = int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", Path(sys.argv[5])
now = time.time()
dep = Deployment.create(network=shared.forty_sensor_network(), window_seconds=60.0, period_windows=60,
                        start=now - (n + 10) * 60.0, grace_seconds=7200.0)
store = Store(sqlite_url(shared.write_history(directory, dep, windows=range(n), block=2000)))
if warm:
    pyarrow.parquet.write_table(pyarrow.table({"a": [1.0]}), io.BytesIO())


def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024


base = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current resident memory
start, cpu = time.perf_counter(), time.process_time()
pieces = views.export_parquet_chunks(dep, store) if kind == "parquet" else views.export_csv_chunks(dep, store)
size = sum(len(piece) for piece in pieces)
out = {"windows": n, "format": kind, "size_mb": size / 2**20, "wall_s": time.perf_counter() - start,
       "cpu_s": time.process_time() - cpu, "base_mb": base, "growth_mb": status("VmHWM") - base}
store.dispose()
print(json.dumps(out))
"""


def measure(windows: int, kind: str, warm: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="dpcloak-export-mem-") as tmp:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(HERE), str(windows), kind, "1" if warm else "0",
                              tmp], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=2000, help="the short history (the long one is 5x)")
    parser.add_argument("--warm", action="store_true", help="start pyarrow's Parquet writer before the baseline")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "bench_export_memory.json")
    args = parser.parse_args()
    load = os.getloadavg()
    rows = []
    for kind in ("csv", "parquet"):
        short, long = (measure(n, kind, args.warm) for n in (args.windows, 5 * args.windows))
        rows += [short, long]
        ratio = long["growth_mb"] / max(short["growth_mb"], 1.0)
        print(f"{kind:8s} peak growth {short['growth_mb']:6.1f} MB at {short['windows']:,} windows "
              f"({short['size_mb']:.1f} MB, {short['wall_s']:.1f} s wall, {short['cpu_s']:.1f} s CPU), "
              f"{long['growth_mb']:6.1f} MB at {long['windows']:,} ({long['size_mb']:.1f} MB, {long['wall_s']:.1f} s "
              f"wall, {long['cpu_s']:.1f} s CPU): long/short {ratio:.2f} (history 5x)", flush=True)
    end = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start, {end[0]:.2f} at end"
          f"{'; pyarrow warmed before the baseline' if args.warm else ''}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                     "load_avg": list(load), "warm": args.warm, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

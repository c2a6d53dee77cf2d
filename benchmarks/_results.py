"""Shared helpers of the size-ladder benchmarks: peak RSS, worker processes, log-log slope, results JSON.

Schema of ``benchmarks/results/<bench>.json`` (read by ``readme_table.py``)::

    {kernel, peer, unit, rows: [{size, n, ours_s, peer_s, peer_finished, ratio, peak_rss_mb}],
     slope, load_avg, date}

``ratio`` is ``peer_s / ours_s`` (a lower bound, the peer's time limit over ours, when the peer did
not finish); ``slope`` the least-squares slope of ``log ours_s`` against ``log n``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def spawn_worker(script: str, role: str, kind: str, size: int, timeout: float | None) -> dict | None:
    """Run ``script --worker role kind size`` in a fresh process; its last stdout line (JSON), or ``None``
    when it did not finish within ``timeout`` seconds."""
    cmd = [sys.executable, script, "--worker", role, kind, str(size)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def add_worker_option(parser: argparse.ArgumentParser) -> None:
    """The hidden ``--worker role kind size`` option that :func:`spawn_worker` calls the script with."""
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)


def run_worker(args: argparse.Namespace, ours: Callable[[str, int], dict], peer: Callable[[str, int], dict]) -> bool:
    """In a worker process (``--worker role kind size``): print ``ours`` or ``peer`` of (kind, size) as one JSON
    line and return True; otherwise False (the parent goes on)."""
    if not args.worker:
        return False
    role, kind, size = args.worker
    print(json.dumps((ours if role == "ours" else peer)(kind, int(size))))
    return True


def slope(ns: list[int], times: list[float], min_n: int = 1) -> float:
    """Least-squares slope of ``log t`` against ``log n`` over the sizes ``n ≥ min_n`` (NaN with fewer than two)."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(ns, times, strict=True) if t > 0 and n >= min_n]
    if len(pts) < 2:
        return math.nan
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def slope_text(s: float) -> str:
    """A :func:`slope` as printed: two decimals, or why there is none."""
    return "none (fewer than two sizes)" if math.isnan(s) else f"{s:.2f}"


def row(size: str, n: int, ours_s: float, peer_s: float | None, limit: float, peak_rss: float) -> dict:
    """One result row; an unfinished peer counts with its time limit (the ratio is then a lower bound)."""
    finished = peer_s is not None
    ratio = (peer_s if finished else limit) / ours_s
    return {"size": size, "n": n, "ours_s": round(ours_s, 4), "peer_s": None if peer_s is None else round(peer_s, 4),
            "peer_finished": finished, "ratio": round(ratio, 2), "peak_rss_mb": round(peak_rss, 1)}


def write(bench: str, kernel: str, peer: str, unit: str, rows: list[dict]) -> Path:
    """Write ``results/<bench>.json`` and print the log-log slope; returns the path."""
    s = slope([r["n"] for r in rows], [r["ours_s"] for r in rows])
    doc = {"kernel": kernel, "peer": peer, "unit": unit, "rows": rows, "slope": None if math.isnan(s) else round(s, 2),
           "load_avg": round(os.getloadavg()[0], 2), "date": datetime.date.today().isoformat()}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{bench}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"log-log slope of our time over n: {slope_text(s)}; load average {doc['load_avg']}; wrote {path.name}")
    return path

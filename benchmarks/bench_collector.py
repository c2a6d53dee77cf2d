"""Collector ingest: 1,000 simulated sensors on loopback, next to a minimal endpoint, in the same run.

Both servers are real processes (uvicorn, one worker, same FastAPI framework, same SQLite settings:
WAL, ``synchronous=FULL``, the same group-commit writer, a fresh database file each):

* **collector** — ``dpcloak serve``: schema validation, MAC verification, configuration binding,
  window/range checks, de-duplication, window bookkeeping, and the recovery of every window as
  soon as all 1,000 sensors have reported (in the same process);
* **minimal** — one FastAPI route taking the same JSON body and inserting the same row into the
  same ``reports`` table (what a user would write who needs only storage).

Workloads: single-reading requests (one report per request) and gateway batches of 100 reports.
Printed: readings/s, requests/s, p50/p99 acknowledgement latency, and the collector-to-minimal
ratio of time per reading. Goals (issue 14): ≥ 2,000 single-reading requests/s, ≥ 20,000
readings/s in batches, collector ≤ 2× the minimal endpoint per reading. The load generator is a
lean asyncio HTTP/1.1 client (keep-alive connections) sharing the machine's cores with the server.

Run: ``PYTHONPATH=src python benchmarks/bench_collector.py [--windows-single 5] [--windows-batch 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from fastapi import FastAPI

from dpcloak.service.config import load_deployment
from dpcloak.service.ingest import BatchIn, ReportIn
from dpcloak.service.store import Store
from dpcloak.service.writer import GroupWriter

SENSORS = 1000
CONNECTIONS = 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the minimal endpoint ---------------------------------------------------------------------------------------


def minimal_app(db_url: str, deployment_dir: str) -> Any:
    """FastAPI app that only parses the body and inserts the row(s) (same table, same writer)."""
    store = Store(db_url)
    writer = GroupWriter(store)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        store.migrate()
        store.register(load_deployment(Path(deployment_dir)))
        writer.start()
        yield
        await writer.stop()

    app = FastAPI(lifespan=lifespan)

    def row(r: ReportIn) -> dict[str, Any]:
        return {"deployment_id": r.deployment, "sensor_id": r.sensor, "window": r.window, "report_id": r.report_id,
                "value": r.value, "received_at": time.time()}

    @app.post("/api/v1/reports", status_code=201)
    async def one(report: ReportIn) -> dict[str, str]:
        await writer.submit([row(report)])
        return {"status": "stored"}

    @app.post("/api/v1/reports/batch")
    async def batch(b: BatchIn) -> dict[str, int]:
        await writer.submit([row(r) for r in b.reports])
        return {"stored": len(b.reports)}

    return app


# --- load generation --------------------------------------------------------------------------------------------


def make_reports(directory: Path, windows: range) -> list[list[dict[str, Any]]]:
    """Signed, privatized reports of every sensor for each window (what the sensors would send)."""
    from dpcloak.service.auth import sign_report
    from dpcloak.service.config import load_master_key, sensor_key

    dep = load_deployment(directory)
    master = load_master_key(directory)
    net = dep.network_for_period(0)
    keys = [sensor_key(master, deployment_id=dep.deployment_id, sensor=j) for j in range(dep.n_sensors)]
    f = np.zeros(net.n_sources)
    f[[5, net.n_sources // 2]] = 30.0  # two crowds of 30 people
    readings = net.model.matvec(f)
    out = []
    for w in windows:
        reports = []
        for j in range(dep.n_sensors):
            v = float(net.privatize_reading(j, float(readings[j])))
            rid = secrets.token_hex(16)
            mac = sign_report(keys[j], deployment_id=dep.deployment_id, fingerprint=dep.fingerprint, sensor=j,
                              window=w, report_id=rid, value=v)
            reports.append({"deployment": dep.deployment_id, "fingerprint": dep.fingerprint, "sensor": j,
                            "key_id": j, "window": w, "report_id": rid, "value": v, "mac": mac})
        out.append(reports)
    return out


async def _connection(port: int, requests: asyncio.Queue[tuple[bytes, int]], latencies: list[float],
                      statuses: dict[int, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while True:
            try:
                payload, _ = requests.get_nowait()
            except asyncio.QueueEmpty:
                return
            start = time.perf_counter()
            writer.write(payload)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - start)
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        writer.close()


def _request(path: str, body: Any, port: int) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def drive(port: int, bodies: list[tuple[str, Any, int]]) -> dict[str, Any]:
    """Send every (path, body, readings) over CONNECTIONS keep-alive connections; time it."""
    payloads = [(_request(path, body, port), n) for path, body, n in bodies]

    async def run() -> tuple[float, list[float], dict[int, int]]:
        queue: asyncio.Queue[tuple[bytes, int]] = asyncio.Queue()
        for p in payloads:
            queue.put_nowait(p)
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        start = time.perf_counter()
        await asyncio.gather(*(_connection(port, queue, latencies, statuses) for _ in range(CONNECTIONS)))
        return time.perf_counter() - start, latencies, statuses

    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    elapsed, latencies, statuses = asyncio.run(run())
    readings = sum(n for _, n in payloads)
    q = statistics.quantiles(latencies, n=100)
    return {"elapsed": elapsed, "requests": len(payloads), "readings": readings, "req_s": len(payloads) / elapsed,
            "readings_s": readings / elapsed, "p50_ms": 1e3 * q[49], "p99_ms": 1e3 * q[98], "statuses": statuses}


# --- servers ----------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def server(kind: str, directory: Path, db_path: Path) -> Any:
    port = _free_port()
    url = f"sqlite:///{db_path}"
    if kind == "collector":
        cmd = [sys.executable, "-m", "dpcloak", "serve", "--deployment", str(directory), "--db", url, "--port",
               str(port)]
    else:
        cmd = [sys.executable, __file__, "--serve-minimal", url, str(directory), str(port)]
    log = (directory / f"{kind}.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{kind} server exited: {(directory / f'{kind}.log').read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.post(f"http://127.0.0.1:{port}/api/v1/reports", json={}, timeout=2).status_code == 422:
                    break
            time.sleep(0.3)
        yield port, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def stored_rows(db_path: Path) -> int:
    import sqlite3

    with contextlib.closing(sqlite3.connect(db_path)) as db:
        return int(db.execute("SELECT COUNT(*) FROM reports").fetchone()[0])


def closed_windows(db_path: Path) -> int:
    import sqlite3

    with contextlib.closing(sqlite3.connect(db_path)) as db:
        return int(db.execute("SELECT COUNT(*) FROM windows").fetchone()[0])


def recovery_span(db_path: Path) -> float:
    """Seconds between the first and the last window recovery."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(db_path)) as db:
        lo, hi = db.execute("SELECT MIN(closed_at), MAX(closed_at) FROM windows").fetchone()
    return 0.0 if lo is None else float(hi - lo)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows-single", type=int, default=5, help="windows sent as single-reading requests")
    parser.add_argument("--windows-batch", type=int, default=20, help="windows sent as gateway batches of 100")
    parser.add_argument("--serve-minimal", nargs=3, metavar=("DB_URL", "DEPLOYMENT", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_minimal:
        import uvicorn

        db_url, dep_dir, port = args.serve_minimal
        uvicorn.run(minimal_app(db_url, dep_dir), host="127.0.0.1", port=int(port), log_level="warning",
                    access_log=False)
        return

    from dpcloak.service import _network
    from dpcloak.service.config import Deployment, write_deployment

    work = Path(tempfile.mkdtemp(prefix="dpcloak-bench-"))
    total = args.windows_single + args.windows_batch
    net = _network.floor_plan_network(width=50.0, height=40.0, sensor_cols=40, sensor_rows=25, epsilon=1.0,
                                      delta=1e-6, budget=(1e4, 1e-5), spacing=4.0, diffusion=8.0, move=4.0)
    dep = Deployment.create(network=net, window_seconds=1.0, period_windows=10**6, start=time.time() - (total + 5),
                            grace_seconds=3600.0)
    write_deployment(work, dep)
    t0 = time.perf_counter()
    reports = make_reports(work, range(total))
    print(f"{SENSORS} sensors, {total} windows of reports prepared in {time.perf_counter() - t0:.1f} s "
          f"(exact discrete Gaussian from the OS CSPRNG, HMAC-SHA256); {CONNECTIONS} keep-alive connections; "
          f"machine: {os.cpu_count()} cores shared with other users")
    single = [("/api/v1/reports", r, 1) for window in reports[:args.windows_single] for r in window]
    batches = [("/api/v1/reports/batch", {"reports": window[i:i + 100]}, 100)
               for window in reports[args.windows_single:] for i in range(0, SENSORS, 100)]
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for kind in ("minimal", "collector"):
        db = work / f"{kind}.db"
        with server(kind, work, db) as (port, _):
            results[kind, "single"] = drive(port, single)
            results[kind, "batch"] = drive(port, batches)
            if kind == "collector":  # let the last windows' recovery finish before counting
                deadline = time.monotonic() + 120
                while closed_windows(db) < total and time.monotonic() < deadline:
                    time.sleep(0.5)
                results[kind, "closed"] = {"windows": closed_windows(db), "span": recovery_span(db)}
        results[kind, "rows"] = {"stored": stored_rows(db)}
    print(f"\n{'server':<10} {'workload':<16} {'requests/s':>11} {'readings/s':>11} {'p50 ms':>8} {'p99 ms':>8}  "
          "statuses")
    for kind in ("minimal", "collector"):
        for load, label in (("single", "single reading"), ("batch", "batches of 100")):
            r = results[kind, load]
            print(f"{kind:<10} {label:<16} {r['req_s']:>11.0f} {r['readings_s']:>11.0f} {r['p50_ms']:>8.1f} "
                  f"{r['p99_ms']:>8.1f}  {r['statuses']}")
    for load in ("single", "batch"):
        ratio = results["minimal", load]["readings_s"] / results["collector", load]["readings_s"]
        print(f"collector / minimal time per reading, {load}: {ratio:.2f}x  (goal <= 2x)")
    closed = results["collector", "closed"]
    per_window = closed["span"] / (closed["windows"] - 1) if closed["windows"] > 1 else float("nan")
    print(f"rows stored: minimal {results['minimal', 'rows']['stored']}, collector "
          f"{results['collector', 'rows']['stored']} (expected {total * SENSORS}); windows recovered by the "
          f"collector: {closed['windows']} of {total} ({net.n_sensors} x {net.n_sources} model, 8 bootstrap draws; "
          f"{per_window:.1f} s per window in the low-priority recovery process)")
    print(f"goals: single-reading requests/s >= 2000: {results['collector', 'single']['req_s']:.0f}; "
          f"batched readings/s >= 20000: {results['collector', 'batch']['readings_s']:.0f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

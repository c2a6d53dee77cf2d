"""Collector ingest: 1,000 simulated sensors on loopback, next to a minimal endpoint, in the same run.

Both servers are real processes (uvicorn with httptools and uvloop, one worker, the same FastAPI
framework, the same SQLite settings: WAL, ``synchronous=FULL``, the same group-commit writer, a
fresh database file each):

* **collector** — ``dpcloak serve``: schema validation, MAC verification, configuration binding,
  window/range checks, de-duplication, window bookkeeping, and the recovery of every window as
  soon as all 1,000 sensors have reported (in its lower-priority recovery process);
* **minimal** — one idiomatic FastAPI route taking the same JSON body (the same pydantic models) and
  inserting the same row into the same ``reports`` table (what a user would write who needs only storage).

Workloads: single-reading requests (one report per request) and gateway batches of 100 reports. Both
servers run side by side and take turns: the windows are split into rounds (4; ``--quick`` 2) and in
each round one server, then the other, gets its share of both workloads, the order alternating, so a
drift of the machine's speed during the run falls on both alike (run one after the other, the ratio
moved between 1.4x and 2.1x across three runs). After each of its turns the collector's recovery
process is let finish before the peer's turn, so the two never compete for the cores.
Printed: readings/s, requests/s, p50/p99 acknowledgement latency, the server's CPU time per reading
(with its child processes; less sensitive to other users of the machine than wall time), the
collector-to-minimal ratio of time per reading (wall and CPU), the all-in CPU ratio including every
window's recovery, the cost of one window's recovery (in-process, and as measured in the collector's
recovery process, which the per-reading ratio with recovery uses), and the load average. Goals (issue
14): ≥ 2,000 single-reading requests/s, ≥ 20,000 readings/s in batches, collector ≤ 2× the minimal
endpoint per reading. The load generator is a lean asyncio HTTP/1.1 client (keep-alive connections)
sharing the machine's cores with the server. Results: ``benchmarks/results/bench_collector.json``.

Run: ``PYTHONPATH=src python benchmarks/bench_collector.py [--quick]`` (about 24 s; ``--quick`` about 16 s
on an idle 2-core machine, start-up and report preparation included).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _collector_load as shared
from _collector_load import SENSORS

CONNECTIONS = 64


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
    dep = load_deployment(directory)
    net = dep.sensor_network
    keys = shared.sensor_keys(directory, dep)
    readings = shared.crowd_readings(net)
    out = []
    for w in windows:
        private = net.privatize(readings)  # every sensor's reading, as each sensor would privatize it
        reports = [shared.report_body(keys[j], dep, j, w, float(private[j])) for j in range(dep.n_sensors)]
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


def drive(port: int, bodies: list[tuple[str, Any, int]], connections: int = CONNECTIONS) -> dict[str, Any]:
    """Send every (path, body, readings) over ``connections`` keep-alive connections; time it."""
    payloads = [(shared.post_request(path, json.dumps(body, separators=(",", ":")).encode(), port), n)
                for path, body, n in bodies]

    async def run() -> tuple[float, list[float], dict[int, int]]:
        queue: asyncio.Queue[tuple[bytes, int]] = asyncio.Queue()
        for p in payloads:
            queue.put_nowait(p)
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        start = time.perf_counter()
        await asyncio.gather(*(_connection(port, queue, latencies, statuses) for _ in range(connections)))
        return time.perf_counter() - start, latencies, statuses

    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    cpu0 = time.process_time()
    elapsed, latencies, statuses = asyncio.run(run())
    client_cpu = time.process_time() - cpu0
    return {"elapsed": elapsed, "requests": len(payloads), "readings": sum(n for _, n in payloads),
            "latencies": latencies, "statuses": statuses, "client_cpu": client_cpu}


def combine(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One workload's rounds as one measurement: totals over the rounds, rates and percentiles of all of them."""
    elapsed, requests, readings = (sum(p[k] for p in parts) for k in ("elapsed", "requests", "readings"))
    q = statistics.quantiles([x for p in parts for x in p["latencies"]], n=100)
    statuses: dict[int, int] = {}
    for p in parts:
        for status, count in p["statuses"].items():
            statuses[status] = statuses.get(status, 0) + count
    return {"elapsed": elapsed, "requests": requests, "readings": readings, "req_s": requests / elapsed,
            "readings_s": readings / elapsed, "p50_ms": 1e3 * q[49], "p99_ms": 1e3 * q[98], "statuses": statuses,
            "client_cpu_share": sum(p["client_cpu"] for p in parts) / elapsed,
            "server_cpu_us_per_reading": 1e6 * sum(p["server_cpu_s"] for p in parts) / readings}


# --- servers ----------------------------------------------------------------------------------------------------


def _peak_rss_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.contextmanager
def server(kind: str, directory: Path, db_path: Path) -> Any:
    port = shared.free_port()
    url = f"sqlite:///{db_path}"
    if kind == "collector":
        cmd = [sys.executable, "-m", "dpcloak", "serve", "--deployment", str(directory), "--db", url, "--port",
               str(port)]
    else:
        cmd = [sys.executable, __file__, "--serve-minimal", url, str(directory), str(port)]
    log = (directory / f"{kind}.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{kind} server exited: {(directory / f'{kind}.log').read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.post(f"http://127.0.0.1:{port}/api/v1/reports", json={}, timeout=2).status_code == 422:
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"{kind} server not ready after 120 s")
        _settle(proc.pid)
        yield port, proc
    finally:
        shared.stop(proc)
        log.close()


def _settle(pid: int, *, timeout: float = 30.0) -> None:
    """Wait (bounded) until the server and its children stop using CPU: start-up work (the collector's recovery
    process imports and builds its model) is not counted in the measurements."""
    deadline = time.monotonic() + timeout
    before = shared.cpu_seconds(pid, descendants=True)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = shared.cpu_seconds(pid, descendants=True)
        if now - before < 0.02:
            return
        before = now


def _sql(db_path: Path, query: str) -> Any:
    import sqlite3

    with contextlib.closing(sqlite3.connect(db_path, timeout=30)) as db:
        return db.execute(query).fetchone()


def measure(port: int, proc: subprocess.Popen[bytes], bodies: list[tuple[str, Any, int]],
            connections: int) -> dict[str, Any]:
    """Drive one workload; add the server process's CPU time per reading (HTTP, checks, storage: its recovery
    process is left out here and counted in the all-in figure)."""
    cpu0 = shared.cpu_seconds(proc.pid)
    out = drive(port, bodies, connections)
    out["server_cpu_s"] = shared.cpu_seconds(proc.pid) - cpu0
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from dpcloak.service.config import Deployment, write_deployment

    work = Path(tempfile.mkdtemp(prefix="dpcloak-bench-"))
    try:
        total = args.windows_single + args.windows_batch
        net = shared.floor_network()
        dep = Deployment.create(network=net, window_seconds=1.0, period_windows=net.max_releases(),
                                start=time.time() - (total + 5), grace_seconds=3600.0)
        write_deployment(work, dep)
        t0 = time.perf_counter()
        reports = make_reports(work, range(total))
        print(f"{SENSORS} sensors ({net.n_sensors} x {net.n_sources} model), {total} windows of reports prepared "
              f"in {time.perf_counter() - t0:.1f} s (exact discrete Gaussian from the OS CSPRNG, HMAC-SHA256); "
              f"{args.connections} keep-alive connections; {os.cpu_count()} cores; load average "
              f"{_load()} before the run", flush=True)
        recovery = recovery_cost(dep, reports)
        print(f"recovery of one {net.n_sensors} x {net.n_sources} window (warm-started, one BLAS thread, median of "
              f"5): {1e3 * recovery['cpu_s_draws8']:.0f} ms CPU / {1e3 * recovery['wall_s_draws8']:.0f} ms wall with "
              f"the 8-draw bootstrap uncertainty, {1e3 * recovery['cpu_s_draws0']:.0f} ms CPU without it", flush=True)
        single = [[("/api/v1/reports", r, 1) for r in window] for window in reports[:args.windows_single]]
        batches = [[("/api/v1/reports/batch", {"reports": window[i:i + 100]}, 100) for i in range(0, SENSORS, 100)]
                   for window in reports[args.windows_single:]]
        workloads = {"single": rounds_of(single, args.rounds), "batch": rounds_of(batches, args.rounds)}
        parts: dict[str, list[dict[str, Any]]] = {}
        results: dict[str, dict[str, Any]] = {}
        with contextlib.ExitStack() as stack:
            servers = {kind: stack.enter_context(server(kind, work, work / f"{kind}.db"))
                       for kind in ("minimal", "collector")}
            cpu0 = {kind: (shared.cpu_seconds(proc.pid, descendants=True), shared.cpu_seconds(proc.pid))
                    for kind, (_, proc) in servers.items()}
            for r in range(args.rounds):  # interleaved, the order alternating: drift of the machine hits both alike
                for kind in ("minimal", "collector")[::1 if r % 2 == 0 else -1]:
                    port, proc = servers[kind]
                    for load, chunks in workloads.items():
                        parts.setdefault(f"{kind}/{load}", []).append(measure(port, proc, chunks[r],
                                                                              args.connections))
                    if kind == "collector":  # let its recovery process finish before the peer's turn
                        _settle(proc.pid)
            last_request = time.perf_counter()
            db = work / "collector.db"
            deadline = time.monotonic() + args.recovery_wait  # every window is full: each one is recovered
            while _sql(db, "SELECT COUNT(*) FROM windows")[0] < total and time.monotonic() < deadline:
                time.sleep(0.2)
            recovered_after = time.perf_counter() - last_request
            for kind, (_, proc) in servers.items():
                cpu, main_cpu = shared.cpu_seconds(proc.pid, descendants=True), shared.cpu_seconds(proc.pid)
                results[kind] = {"peak_rss_mb": _peak_rss_mb(proc.pid), "server_cpu_s": cpu - cpu0[kind][0],
                                 # the collector's children: its recovery process
                                 "children_cpu_s": (cpu - main_cpu) - (cpu0[kind][0] - cpu0[kind][1]),
                                 "stored": int(_sql(work / f"{kind}.db", "SELECT COUNT(*) FROM reports")[0])}
            results["collector"]["windows_recovered"] = int(_sql(db, "SELECT COUNT(*) FROM windows")[0])
            results["collector"]["recovered_after_s"] = recovered_after
        results.update({key: combine(value) for key, value in parts.items()})
        return {"results": results, "total": total, "expected": total * SENSORS, "recovery": recovery}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def rounds_of(windows: list[list[tuple[str, Any, int]]], rounds: int) -> list[list[tuple[str, Any, int]]]:
    """The windows' requests in ``rounds`` parts of whole windows, as equal as they divide."""
    if not 1 <= rounds <= len(windows):
        raise SystemExit(f"bench_collector: --rounds must be between 1 and the {len(windows)} windows of each "
                         f"workload, got {rounds}")
    edges = [len(windows) * r // rounds for r in range(rounds + 1)]
    return [[body for window in windows[a:b] for body in window] for a, b in itertools.pairwise(edges)]


def recovery_cost(dep: Any, reports: list[list[dict[str, Any]]]) -> dict[str, float]:
    """In-process cost of one window's recovery, as the collector's recovery process runs it (one BLAS thread,
    warm-started from the previous window): median seconds per window with the 8-draw bootstrap and without."""
    from threadpoolctl import threadpool_limits

    net = dep.sensor_network
    out: dict[str, float] = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for draws in (8, 0):
            previous, wall, cpu = None, [], []
            for window in reports[:6]:
                values = np.array([r["value"] for r in window])
                w0, c0 = time.perf_counter(), time.thread_time()
                previous = net.recover(values, warm_start=previous, uncertainty_draws=draws)
                wall.append(time.perf_counter() - w0)
                cpu.append(time.thread_time() - c0)
            out[f"wall_s_draws{draws}"] = statistics.median(wall[1:])
            out[f"cpu_s_draws{draws}"] = statistics.median(cpu[1:])
    return out


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run (about 30 s)")
    parser.add_argument("--windows-single", type=int, default=None, help="windows sent as single-reading requests")
    parser.add_argument("--windows-batch", type=int, default=None, help="windows sent as gateway batches of 100")
    parser.add_argument("--connections", type=int, default=CONNECTIONS, help="concurrent keep-alive connections")
    parser.add_argument("--recovery-wait", type=float, default=None, help="seconds to wait for the last recoveries")
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved rounds of each server (default 4, quick 2)")
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "bench_collector.json",
                        help="where to write the results")
    parser.add_argument("--serve-minimal", nargs=3, metavar=("DB_URL", "DEPLOYMENT", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_minimal:
        import uvicorn

        db_url, dep_dir, port = args.serve_minimal
        uvicorn.run(minimal_app(db_url, dep_dir), host="127.0.0.1", port=int(port), log_level="warning",
                    access_log=False)
        return
    quick = {"windows_single": 2, "windows_batch": 8, "recovery_wait": 5.0, "rounds": 2}
    full = {"windows_single": 8, "windows_batch": 48, "recovery_wait": 40.0, "rounds": 4}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    began = time.perf_counter()
    out = run(args)
    res, total = out["results"], out["total"]
    print(f"\n{'server':<10} {'workload':<16} {'requests/s':>11} {'readings/s':>11} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'ingest CPU us/reading':>22} {'client CPU':>10}  statuses")
    for kind in ("minimal", "collector"):
        for load, label in (("single", "single reading"), ("batch", "batches of 100")):
            r = res[f"{kind}/{load}"]
            print(f"{kind:<10} {label:<16} {r['req_s']:>11.0f} {r['readings_s']:>11.0f} {r['p50_ms']:>8.1f} "
                  f"{r['p99_ms']:>8.1f} {r['server_cpu_us_per_reading']:>22.1f} {r['client_cpu_share']:>10.0%}  "
                  f"{r['statuses']}")
    rows = []
    col = res["collector"]
    recovery_window_s = col["children_cpu_s"] / max(col["windows_recovered"], 1)  # measured in the recovery process
    per_reading = recovery_window_s / SENSORS
    print(f"recovery CPU per window in the collector's recovery process: {1e3 * recovery_window_s:.0f} ms "
          f"({col['windows_recovered']} windows; in-process estimate above: {1e3 * out['recovery']['cpu_s_draws8']:.0f}"
          " ms)")
    for load, size in (("single", 1), ("batch", 100)):
        ours, peer = res[f"collector/{load}"], res[f"minimal/{load}"]
        ratio = peer["readings_s"] / ours["readings_s"]
        cpu_ratio = ours["server_cpu_us_per_reading"] / peer["server_cpu_us_per_reading"]
        print(f"collector / minimal time per reading, {load}: {ratio:.2f}x wall, {cpu_ratio:.2f}x ingest CPU "
              "(goal <= 2x)")
        rows.append({"size": size, "n": ours["readings"], "ours_s": 1 / ours["readings_s"],
                     "peer_s": 1 / peer["readings_s"], "peer_finished": True, "ratio": ratio,
                     "peak_rss_mb": res["collector"]["peak_rss_mb"], "cpu_ratio": cpu_ratio,
                     "requests_s": ours["req_s"], "readings_s": ours["readings_s"], "p50_ms": ours["p50_ms"],
                     "p99_ms": ours["p99_ms"], "peer_requests_s": peer["req_s"], "peer_readings_s": peer["readings_s"],
                     "peer_p50_ms": peer["p50_ms"], "peer_p99_ms": peer["p99_ms"],
                     "server_cpu_us_per_reading": ours["server_cpu_us_per_reading"],
                     "peer_server_cpu_us_per_reading": peer["server_cpu_us_per_reading"],
                     "client_cpu_share": ours["client_cpu_share"],
                     "cpu_ratio_with_recovery": (ours["server_cpu_us_per_reading"] + 1e6 * per_reading)
                     / peer["server_cpu_us_per_reading"]})
    for load in ("single", "batch"):
        ours, peer = res[f"collector/{load}"]["server_cpu_us_per_reading"], res[f"minimal/{load}"][
            "server_cpu_us_per_reading"]
        print(f"{load}: ingest CPU {ours:.0f} us + recovery {1e6 * per_reading:.0f} us per reading = "
              f"{(ours + 1e6 * per_reading) / peer:.2f}x the minimal endpoint's {peer:.0f} us (recovery as "
              "measured in the recovery process); "
              f"one core's worth of ingest CPU would acknowledge {1e6 / ours:,.0f} readings/s (projection)")
    all_in = col["server_cpu_s"] / res["minimal"]["server_cpu_s"]
    print(f"all in (both workloads, collector until every window is recovered): server CPU {all_in:.2f}x the "
          f"minimal endpoint's ({1e6 * col['server_cpu_s'] / out['expected']:.0f} vs "
          f"{1e6 * res['minimal']['server_cpu_s'] / out['expected']:.0f} us per reading)"
          + ("" if col["windows_recovered"] == total else
             f"; only {col['windows_recovered']} of {total} windows recovered in time: a lower bound"))
    stored_ok = res["minimal"]["stored"] == col["stored"] == out["expected"]
    print(f"rows stored: minimal {res['minimal']['stored']}, collector {col['stored']} (expected {out['expected']}"
          f"{'' if stored_ok else ' -- MISMATCH'}); windows recovered: {col['windows_recovered']} of {total}, the "
          f"last {col['recovered_after_s']:.1f} s after the last request (recovery runs in a lower-priority process, "
          "which each round lets finish before the other server's turn)")
    print(f"goals: single-reading requests/s >= 2000: {res['collector/single']['req_s']:.0f}; batched readings/s "
          f">= 20000: {res['collector/batch']['readings_s']:.0f}; load average {_load()} after the run; "
          f"{time.perf_counter() - began:.0f} s in all")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "kernel": "collector ingest (verify, group-commit store, recover) over HTTP on loopback",
        "peer": "minimal FastAPI endpoint inserting the same rows into the same SQLite table (same writer)",
        "unit": "seconds per reading (wall, acknowledged)", "rows": rows, "slope": None,
        "load_avg": list(os.getloadavg()), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": bool(args.quick), "cores": os.cpu_count(), "sensors": SENSORS, "connections": args.connections,
        "windows": total, "windows_recovered": col["windows_recovered"], "all_in_cpu_ratio": all_in,
        "recovery_per_window": out["recovery"], "recovery_cpu_s_per_window_measured": recovery_window_s,
        "recovered_after_s": col["recovered_after_s"], "rounds": args.rounds,
        "stored": {"collector": col["stored"], "minimal": res["minimal"]["stored"], "expected": out["expected"]},
    }, indent=2) + "\n")
    print(f"results written to {args.json}")


if __name__ == "__main__":
    main()

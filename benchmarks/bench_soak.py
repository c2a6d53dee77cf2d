"""Collector soak: sustained ingest from 1,000 sensors for 60 s, memory and acknowledgement latency tracked.

A real ``dpcloak serve`` process (SQLite WAL, ``synchronous=FULL``) on loopback receives, every
window of 1 s, one signed private report from each of 1,000 sensors (the deployment and model of
``bench_collector.py``: a 50 m x 40 m floor, 40 x 25 people counters), paced: window ``w``'s reports
are released at ``t0 + w`` seconds and sent over keep-alive connections (64), as single-reading
requests (``--mode single``, 1,000 requests/s) or as gateway batches of 100 (``--mode batch``, one
connection per gateway).
Every full window is recovered by the collector's low-priority recovery process meanwhile.

Printed: requests and readings per second achieved against the offered rate, status counts (any
status other than 200/201 is an error), p50/p99/max acknowledgement latency, the collector's RSS
(main process, sampled every second; growth after a warm-up of ``--warmup`` s must stay below 10 %)
and the recovery process's RSS, the windows recovered, the load average.

Run: ``PYTHONPATH=src python benchmarks/bench_soak.py [--seconds 60] [--mode single|batch]``;
``--quick`` is a 20 s run. Bounded: it stops after ``--seconds`` plus at most 60 s of draining.
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
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

SENSORS = 1000
CONNECTIONS = 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _deployment(work: Path) -> Any:
    from dpcloak.service import _network
    from dpcloak.service.config import Deployment, write_deployment

    net = _network.floor_plan_network(width=50.0, height=40.0, sensor_cols=40, sensor_rows=25, epsilon=1.0,
                                      delta=1e-6, budget=(1e4, 1e-5), spacing=4.0, diffusion=8.0, move=4.0)
    dep = Deployment.create(network=net, window_seconds=1.0, period_windows=10**6, start=time.time() - 5,
                            grace_seconds=3600.0)
    write_deployment(work, dep)
    return dep


def _window_reports(work: Path, dep: Any, window: int) -> list[dict[str, Any]]:
    """Signed private reports of every sensor for one window (two crowds of 30 people)."""
    from dpcloak.service.auth import sign_report
    from dpcloak.service.config import load_master_key, sensor_key

    master = load_master_key(work)
    net = dep.network_for_period(0)
    f = np.zeros(net.n_sources)
    f[[5, net.n_sources // 2]] = 30.0
    readings = net.model.matvec(f)
    out = []
    for j in range(dep.n_sensors):
        key = sensor_key(master, deployment_id=dep.deployment_id, sensor=j)
        v = float(net.privatize_reading(j, float(readings[j])))
        rid = secrets.token_hex(16)
        mac = sign_report(key, deployment_id=dep.deployment_id, fingerprint=dep.fingerprint, sensor=j, window=window,
                          report_id=rid, value=v)
        out.append({"deployment": dep.deployment_id, "fingerprint": dep.fingerprint, "sensor": j, "key_id": j,
                    "window": window, "report_id": rid, "value": v, "mac": mac})
    return out


def _rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")


def _request(path: str, body: Any, port: int) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


async def _drive(port: int, schedule: list[tuple[float, list[bytes]]], stats: dict[str, Any],
                 connections: int) -> None:
    """Send each group of requests at its time (monotonic) over ``connections`` keep-alive connections.

    A connection the server closed while idle (keep-alive timeout) is reopened and the request resent
    (a report is idempotent: a resent stored one would be answered 200).
    """
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while (payload := await queue.get()) is not None:
                start = time.perf_counter()
                writer.write(payload)
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    writer.close()
                    stats["reconnects"] += 1
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    start = time.perf_counter()
                    writer.write(payload)
                    head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                await reader.readexactly(length)
                stats["latencies"].append(time.perf_counter() - start)
                stats["statuses"][status] = stats["statuses"].get(status, 0) + 1
        finally:
            writer.close()

    workers = [asyncio.create_task(connection()) for _ in range(connections)]
    for at, payloads in schedule:
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        for p in payloads:
            queue.put_nowait(p)
    for _ in workers:
        queue.put_nowait(None)
    await asyncio.wait_for(asyncio.gather(*workers), timeout=60 + len(schedule))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="windows of 1 s sent (the soak's length)")
    parser.add_argument("--mode", choices=("single", "batch"), default="single")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before the RSS baseline")
    parser.add_argument("--quick", action="store_true", help="a 20 s run")
    args = parser.parse_args()
    seconds = 20 if args.quick else args.seconds
    connections = CONNECTIONS if args.mode == "single" else SENSORS // 100  # batch: one per gateway
    work = Path(tempfile.mkdtemp(prefix="dpcloak-soak-"))
    dep = _deployment(work)
    t_prep = time.perf_counter()
    first = dep.window_at(time.time()) + 3  # leave time for the server to start
    windows = [_window_reports(work, dep, first + k) for k in range(seconds)]
    prep = time.perf_counter() - t_prep
    port = _free_port()
    log = (work / "collector.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--deployment", str(work), "--port",
                             str(port)], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    samples: list[tuple[float, float, float]] = []
    stop = threading.Event()
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"collector exited: {(work / 'collector.log').read_text()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        def sample() -> None:
            t0 = time.monotonic()
            while not stop.is_set():
                with contextlib.suppress(OSError, ValueError):
                    kids = sum(_rss_mb(int(c)) for c in
                               Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
                    samples.append((time.monotonic() - t0, _rss_mb(proc.pid), kids))
                stop.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        # one window per second from now on (no earlier than the collector accepts the first one: now + 1)
        t_mono0 = time.monotonic() + max(0.0, dep.start + (first - 1) * dep.window_seconds - time.time())
        schedule = []
        for k, reports in enumerate(windows):
            if args.mode == "single":
                payloads = [_request("/api/v1/reports", r, port) for r in reports]
            else:
                payloads = [_request("/api/v1/reports/batch", {"reports": reports[i:i + 100]}, port)
                            for i in range(0, SENSORS, 100)]
            schedule.append((t_mono0 + k * dep.window_seconds, payloads))
        stats: dict[str, Any] = {"latencies": [], "statuses": {}, "reconnects": 0}
        t_send = time.monotonic()
        asyncio.run(_drive(port, schedule, stats, connections))
        elapsed = time.monotonic() - t_send
        time.sleep(2.0)
        stop.set()
        sampler.join(5)
        with contextlib.closing(sqlite3.connect(work / "collector.db")) as db:
            stored = int(db.execute("SELECT COUNT(*) FROM reports").fetchone()[0])
            recovered = int(db.execute("SELECT COUNT(*) FROM windows").fetchone()[0])
        alive = proc.poll() is None
    finally:
        stop.set()
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    lat = sorted(stats["latencies"])
    q = statistics.quantiles(lat, n=100)
    readings = SENSORS * seconds
    requests = len(lat)
    errors = sum(n for s, n in stats["statuses"].items() if s not in (200, 201))
    base = [m for t, m, _ in samples if t >= args.warmup]
    growth = (max(base) - base[0]) / base[0] if base else float("nan")
    load = os.getloadavg()
    print(f"soak: {SENSORS} sensors, {seconds} windows of 1 s, mode {args.mode}, {connections} connections; "
          f"reports prepared in {prep:.1f} s; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"offered {readings / seconds:.0f} readings/s; sent {readings} readings in {requests} requests over "
          f"{elapsed:.1f} s ({readings / elapsed:.0f} readings/s, {requests / elapsed:.0f} requests/s achieved, "
          f"ratio achieved/offered {seconds / elapsed:.2f})")
    print(f"statuses {stats['statuses']}; errors {errors}; reconnects {stats['reconnects']}; stored {stored} of "
          f"{readings}; windows recovered {recovered}; collector alive {alive}")
    print(f"ack latency p50 {1e3 * q[49]:.1f} ms, p99 {1e3 * q[98]:.1f} ms, max {1e3 * lat[-1]:.1f} ms")
    if base:
        print(f"collector RSS: {base[0]:.1f} MB after {args.warmup:.0f} s warm-up, max {max(base):.1f} MB, end "
              f"{base[-1]:.1f} MB: growth {100 * growth:.1f} % (goal < 10 %); recovery process RSS "
              f"{samples[-1][2]:.1f} MB at the end")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Collector soak: 1,000 sensors at the collector benchmark's rate for 60 s, memory and acknowledgement latency tracked.

A real ``dpcloak serve`` process (SQLite WAL, ``synchronous=FULL``) on loopback receives one signed
private report per sensor and window from 1,000 sensors (the deployment and model of
``bench_collector.py``: a 50 m x 40 m floor, 40 x 25 people counters, two crowds of 30 people).
The offered rate is ``--rate`` readings/s, by default the collector's rate measured by
``bench_collector.py`` for the same mode (``benchmarks/results/bench_collector.json``:
single-reading requests, 5,200–12,000/s, or gateway batches of 100, 24,800–40,600 readings/s, across
the runs of 2026-11-23 and 24). It is reached by shortening the deployment's windows,
``window_seconds = 1000 / rate`` (still one reading per sensor per window); the grace period is an
hour, so no report is refused as late. Window ``w``'s reports are released all at once at the start
of window ``w`` (sensors report in step) and sent over keep-alive connections: 64 for single-reading
requests (``--mode single``), one per gateway of 100 sensors for batches (``--mode batch``). The
collector recovers every full window meanwhile, in its low-priority recovery process: with the
shortened windows that is 25–40 recoveries per second, far more than a real deployment of 1,000
sensors (one per window of a second or more) asks for, so recovery lagging behind here is reported,
not a goal.

Reports are prepared before the timed run (a sensor's CPU is not the collector's): ``--distinct``
(default 32) windows of privatized readings are drawn (the exact discrete Gaussian from the OS
CSPRNG, every sensor's own privatization) and reused cyclically, window ``w`` getting pool entry
``w mod distinct``; every report is still unique: its own window number, a fresh random report id
and its own HMAC-SHA256 under the sensor's key. (Privatizing 1.2 M readings afresh would take about
a minute of a core; the collector checks each value against the mechanism's grid and range, not
against earlier windows, so the reuse changes nothing it does.) The window numbers must be signed in,
so the first window is chosen after the estimated preparation time; should preparation overrun, the
whole schedule is shifted later (a report is never early; the hour of grace covers the delay).

Printed: readings/s and requests/s achieved against those offered (goal: at least 95 %); the status
of every request and, in batches, of every report (anything other than 200/201 is an error); p50/p99/max acknowledgement
latency (request sent to answer read) and the p99 delay from the report's scheduled time to its
acknowledgement (includes the client's queue when the collector falls behind); the collector's RSS
(main process, sampled every second; growth after a warm-up of ``--warmup`` s must stay below 10 %)
and its recovery process's RSS; acknowledged reports missing from the database (must be 0); windows
recovered and how far recovery lags (full windows not yet recovered); the CPU time of the collector's
two processes and the load generator's share of a core; the load average. One PASS/FAIL
line per goal. Results: ``benchmarks/results/bench_soak_<mode>.json`` (``--json`` elsewhere), in the
results schema: the "peer" is the offered rate, so ``ratio`` is achieved / offered.

Run: ``PYTHONPATH=src python benchmarks/bench_soak.py [--mode single|batch] [--rate R] [--seconds 60]``;
``--quick`` is a 20 s run. Bounded: it stops ``--seconds`` after the first window plus at most 60 s of
draining (``--drain``; requests still unanswered then are counted, a goal of their own), after preparing the
reports (about 15 µs each on an idle core: some 21 s for the 60 s batch soak at 31,500 readings/s;
the first window is placed 1.2x the estimated preparation time ahead) and starting the collector.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _collector_load as shared
from _collector_load import SENSORS

BATCH = 100
CONNECTIONS = 64
DRAIN_SECONDS = 60.0
GRACE_SECONDS = 3600.0
RESULTS = Path(__file__).resolve().parent / "results"
COLLECTOR_RESULTS = RESULTS / "bench_collector.json"
ROW = {"single": 0, "batch": 1}  # rows of bench_collector.json: single-reading requests, batches of 100
OK = (200, 201)


def default_rate(mode: str, path: Path = COLLECTOR_RESULTS) -> float:
    """Readings/s ``bench_collector.py`` measured for ``mode``; a one-line ``SystemExit`` if unavailable."""
    try:
        rate = float(json.loads(path.read_text())["rows"][ROW[mode]]["readings_s"])
    except FileNotFoundError:
        raise SystemExit(f"bench_soak: {path} is missing: run benchmarks/bench_collector.py first, or give --rate"
                         ) from None
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise SystemExit(f"bench_soak: no {mode} readings_s in {path} ({type(exc).__name__}: {exc}); give --rate"
                         ) from None
    if not (math.isfinite(rate) and rate > 0):
        raise SystemExit(f"bench_soak: {path} gives {mode} readings_s = {rate!r}; give --rate")
    return rate


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
        return value

    return parse


def _deployment(work: Path, window_seconds: float) -> Any:
    from dpcloak.service.config import Deployment, write_deployment

    net = shared.floor_network()  # every window releases: W = the releases the budget allows
    dep = Deployment.create(network=net, window_seconds=window_seconds, period_windows=net.max_releases(),
                            start=time.time() - 5.0, grace_seconds=GRACE_SECONDS)
    write_deployment(work, dep)
    return dep


def _private_pool(dep: Any, distinct: int) -> np.ndarray:
    """``distinct`` windows of every sensor's privatized reading (two crowds of 30 people), shape (distinct, m)."""
    net = dep.sensor_network
    return np.asarray(net.privatize(np.tile(shared.crowd_readings(net), (distinct, 1))), dtype=float)


class Signer:
    """Signed report bodies (JSON) of every sensor for a window, from a pool of privatized readings."""

    def __init__(self, work: Path, dep: Any, pool: np.ndarray) -> None:
        self.dep, self.pool = dep, [row.tolist() for row in pool]
        self.keys = shared.sensor_keys(work, dep)

    def window(self, window: int) -> list[str]:
        return [json.dumps(shared.report_body(self.keys[j], self.dep, j, window, v), separators=(",", ":"))
                for j, v in enumerate(self.pool[window % len(self.pool)])]


def _payloads(bodies: list[str], mode: str, port: int) -> list[tuple[bytes, int, int]]:
    """One window's requests: (bytes, first sensor, reports)."""
    if mode == "single":
        return [(shared.post_request("/api/v1/reports", b.encode(), port), j, 1) for j, b in enumerate(bodies)]
    return [(shared.post_request("/api/v1/reports/batch", ('{"reports":[' + ",".join(bodies[i:i + BATCH]) + "]}"
                                                         ).encode(), port), i, len(bodies[i:i + BATCH]))
            for i in range(0, len(bodies), BATCH)]


def _rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")


class Stats:
    """What the load generator saw (filled in its event loop; read by the sampler thread)."""

    def __init__(self, n_windows: int) -> None:
        self.latencies: list[float] = []  # request written -> answer read, s
        self.delays: list[float] = []  # scheduled time -> answer read, s
        self.statuses: dict[int, int] = {}  # per request
        self.report_statuses: dict[int, int] = {}  # per report (batches answer 200 with one status per report)
        self.acked = np.zeros((n_windows, SENSORS), dtype=bool)
        self.acked_per_window = [0] * n_windows
        self.reconnects = 0
        self.in_flight = 0
        self.unsent = 0
        self.unanswered = 0
        self.first_send = math.nan
        self.last_ack = math.nan

    def full_windows(self) -> int:
        return sum(c == SENSORS for c in self.acked_per_window)


async def _drive(port: int, schedule: list[tuple[float, list[tuple[bytes, int, int]]]], stats: Stats,
                 connections: int, deadline: float) -> None:
    """Release each window's requests at its (monotonic) time over ``connections`` keep-alive connections;
    whatever is not answered by ``deadline`` is abandoned and counted.

    A connection the server closed while idle (keep-alive timeout) is reopened and the request resent
    (a report is idempotent: a resent stored one is answered 200).
    """
    queue: asyncio.Queue[tuple[bytes, int, int, int, float] | None] = asyncio.Queue()
    batch = schedule[0][1][0][0].startswith(b"POST /api/v1/reports/batch ")

    async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, payload: bytes
                       ) -> tuple[int, bytes]:
        writer.write(payload)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        return status, await reader.readexactly(length)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while (item := await queue.get()) is not None:
                payload, k, j0, n, due = item
                stats.in_flight += 1
                start = time.perf_counter()
                try:
                    status, body = await exchange(reader, writer, payload)
                except (asyncio.IncompleteReadError, ConnectionError):
                    writer.close()
                    stats.reconnects += 1
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    start = time.perf_counter()
                    status, body = await exchange(reader, writer, payload)
                stats.in_flight -= 1
                now = time.monotonic()
                stats.latencies.append(time.perf_counter() - start)
                stats.delays.append(now - due)
                stats.last_ack = now
                stats.statuses[status] = stats.statuses.get(status, 0) + 1
                if not batch or status not in OK:  # a single report, or a refused request
                    outcomes = [status] * n
                else:  # a batch: one outcome per report, in order
                    outcomes = [int(o["http_status"]) for o in json.loads(body)["results"]]
                for i, s in enumerate(outcomes):
                    stats.report_statuses[s] = stats.report_statuses.get(s, 0) + 1
                    if s in OK and not stats.acked[k, j0 + i]:
                        stats.acked[k, j0 + i] = True
                        stats.acked_per_window[k] += 1
        finally:
            writer.close()

    workers = [asyncio.create_task(connection()) for _ in range(connections)]
    stats.first_send = schedule[0][0]
    for k, (at, payloads) in enumerate(schedule):
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        for payload, j0, n in payloads:
            queue.put_nowait((payload, k, j0, n, at))
    for _ in workers:
        queue.put_nowait(None)
    _, pending = await asyncio.wait(workers, timeout=max(0.0, deadline - time.monotonic()))
    for task in pending:
        task.cancel()
    stats.unanswered = stats.in_flight
    while not queue.empty():
        item = queue.get_nowait()
        stats.unsent += item is not None
    for task in workers:
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise RuntimeError(f"load generator connection failed: {task.exception()!r}")


def _run_loop(coro: Coroutine[Any, Any, None]) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def _wait_ready(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"collector exited: {log.read_text()}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2).status_code == 200:
                return
        time.sleep(0.3)
    raise RuntimeError("collector not ready after 180 s")


def _percentiles(xs: list[float]) -> tuple[float, float, float]:
    """p50, p99, max in ms (NaN when nothing was measured)."""
    if len(xs) < 2:
        return (1e3 * xs[0],) * 3 if xs else (math.nan,) * 3
    q = statistics.quantiles(xs, n=100)
    return 1e3 * q[49], 1e3 * q[98], 1e3 * max(xs)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("single", "batch"), default="single")
    parser.add_argument("--rate", type=_positive(float), default=None,
                        help="readings/s offered (default: bench_collector.json's measured rate for the mode)")
    parser.add_argument("--seconds", type=_positive(float), default=60.0, help="length of the soak (s)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before the RSS baseline")
    parser.add_argument("--distinct", type=_positive(int), default=32, help="windows of privatized readings drawn")
    parser.add_argument("--drain", type=float, default=DRAIN_SECONDS,
                        help=f"seconds after the last window's release to wait for answers (at most {DRAIN_SECONDS:g})")
    parser.add_argument("--quick", action="store_true", help="a 20 s run")
    parser.add_argument("--json", type=Path, default=None,
                        help="results file (default benchmarks/results/bench_soak_<mode>.json)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="directory for the deployment, database and log, kept afterwards (default: a fresh "
                             "temporary directory, removed)")
    args = parser.parse_args()
    if not 0 <= args.drain <= DRAIN_SECONDS:
        raise SystemExit(f"bench_soak: --drain must be in [0, {DRAIN_SECONDS:g}] s, got {args.drain:g}")
    rate = args.rate if args.rate is not None else default_rate(args.mode)
    seconds = 20.0 if args.quick else args.seconds
    window_seconds = SENSORS / rate
    n_windows = max(1, round(seconds / window_seconds))
    connections = CONNECTIONS if args.mode == "single" else SENSORS // BATCH  # batch: one per gateway
    out_path = args.json or RESULTS / f"bench_soak_{args.mode}.json"
    if args.workdir is not None and args.workdir.exists() and any(args.workdir.iterdir()):
        raise SystemExit(f"bench_soak: --workdir {args.workdir} must be empty or not exist yet")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="dpcloak-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    proc: subprocess.Popen[bytes] | None = None
    stop = threading.Event()
    try:
        dep = _deployment(work, window_seconds)
        port = shared.free_port()
        log_path = work / "collector.log"
        with log_path.open("w") as log:  # start the collector now: it comes up while the reports are prepared
            proc = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--deployment", str(work), "--port",
                                     str(port)], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        t_prep = time.perf_counter()
        pool = _private_pool(dep, args.distinct)
        signer = Signer(work, dep, pool)
        t_sign = time.perf_counter()
        _payloads(signer.window(0), args.mode, port)  # a throwaway window, timed, for the estimate
        per_window = time.perf_counter() - t_sign
        first = dep.window_at(time.time() + 1.2 * per_window * n_windows + 3.0) + 1
        windows = [_payloads(signer.window(first + k), args.mode, port) for k in range(n_windows)]
        prep = time.perf_counter() - t_prep
        _wait_ready(proc, port, log_path)
        # window first + k at its start (monotonic clock), or all later by the same shift if preparation overran
        offset = time.time() - time.monotonic()
        t0 = max(dep.start + first * window_seconds - offset, time.monotonic() + 0.5)
        overrun = t0 - (dep.start + first * window_seconds - offset)
        schedule = [(t0 + k * window_seconds, payloads) for k, payloads in enumerate(windows)]
        del windows
        stats = Stats(n_windows)
        samples: list[tuple[float, float, float, int, int]] = []  # t, RSS, recovery RSS, recovered, full windows
        db_path = work / "collector.db"

        def sample() -> None:
            with contextlib.closing(sqlite3.connect(db_path, timeout=5)) as db:
                while not stop.is_set():
                    with contextlib.suppress(OSError, ValueError, sqlite3.Error):
                        kids = sum(_rss_mb(c) for c in shared.children(proc.pid))
                        recovered = int(db.execute("SELECT COUNT(*) FROM windows WHERE \"window\" >= ?",
                                                   (first,)).fetchone()[0])
                        samples.append((time.monotonic() - t0, _rss_mb(proc.pid), kids, recovered,
                                        stats.full_windows()))
                    stop.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        last_due = schedule[-1][0]
        cpu0, server_cpu0 = time.process_time(), shared.cpu_seconds(proc.pid)
        recovery_pids = shared.children(proc.pid)
        recovery_cpu0 = sum(shared.cpu_seconds(c) for c in recovery_pids)
        _run_loop(_drive(port, schedule, stats, connections, deadline=last_due + args.drain))
        t_end = time.monotonic()
        client_cpu_share = (time.process_time() - cpu0) / (t_end - min(t0, t_end - 1e-9))
        server_cpu, recovery_cpu = shared.cpu_seconds(proc.pid) - server_cpu0, math.nan
        with contextlib.suppress(OSError):
            recovery_cpu = sum(shared.cpu_seconds(c) for c in recovery_pids) - recovery_cpu0
        time.sleep(2.0)  # one more sample; recovery keeps running
        stop.set()
        sampler.join(10)
        alive = proc.poll() is None
        with contextlib.closing(sqlite3.connect(db_path, timeout=30)) as db:
            rows = db.execute("SELECT \"window\", sensor_id FROM reports WHERE deployment_id = ? AND \"window\" "
                              "BETWEEN ? AND ?", (dep.deployment_id, first, first + n_windows - 1)).fetchall()
            recovered = int(db.execute("SELECT COUNT(*) FROM windows WHERE deployment_id = ? AND \"window\" BETWEEN "
                                       "? AND ?", (dep.deployment_id, first, first + n_windows - 1)).fetchone()[0])
        stored = np.zeros((n_windows, SENSORS), dtype=bool)
        if rows:
            idx = np.asarray(rows, dtype=np.int64)
            stored[idx[:, 0] - first, idx[:, 1]] = True
        duplicates_stored = len(rows) - int(stored.sum())
        lost = int((stats.acked & ~stored).sum())
    finally:
        stop.set()
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    load = os.getloadavg()
    offered = SENSORS * n_windows
    acknowledged = int(stats.acked.sum())
    requests = sum(stats.statuses.values())
    offered_requests = sum(len(p) for _, p in schedule)
    # from the first window's release to the end of the last window or the last acknowledgement, if later
    span = max(n_windows * window_seconds, stats.last_ack - stats.first_send if math.isfinite(stats.last_ack) else 0)
    achieved = acknowledged / span if span > 0 else 0.0
    achieved_requests = requests / span if span > 0 else 0.0
    offered_requests_s = offered_requests / (n_windows * window_seconds)
    # every answered report has a status (a refused batch counts for each of its reports)
    errors = sum(n for s, n in stats.report_statuses.items() if s not in OK)
    unanswered = stats.unsent + stats.unanswered  # requests unsent or still in flight at the drain limit
    p50, p99, pmax = _percentiles(stats.latencies)
    server_us = 1e6 * server_cpu / acknowledged if acknowledged else math.nan
    d50, d99, dmax = _percentiles(stats.delays)
    base = [s for s in samples if s[0] >= args.warmup]
    growth = (max(s[1] for s in base) - base[0][1]) / base[0][1] if base else math.nan
    during = [s for s in samples if s[0] <= t_end - t0]
    lag_end_of_sending = during[-1][4] - during[-1][3] if during else None
    print(f"soak: {SENSORS} sensors, mode {args.mode}, {n_windows} windows of {1e3 * window_seconds:.1f} ms "
          f"({n_windows * window_seconds:.1f} s), {connections} connections; reports prepared in {prep:.1f} s "
          f"({args.distinct} windows of privatized readings reused, every report signed anew), schedule shifted "
          f"{overrun:.1f} s; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    print(f"offered {rate:.0f} readings/s ({offered_requests_s:.0f} requests/s); achieved {achieved:.0f} readings/s "
          f"({achieved_requests:.0f} requests/s) = {achieved / rate:.2f} of offered; {acknowledged} of {offered} "
          f"readings acknowledged over {span:.1f} s")
    print(f"request statuses {dict(sorted(stats.statuses.items()))}; report statuses "
          f"{dict(sorted(stats.report_statuses.items()))}; unsent {stats.unsent}, unanswered {stats.unanswered} at "
          f"the {args.drain:g} s drain limit; reconnects {stats.reconnects}; reports refused (errors) {errors}; the "
          f"load generator used "
          f"{client_cpu_share:.0%} of a core (on the collector's machine)")
    print(f"collector CPU while sending: {server_cpu:.1f} s ingest process ({server_us:.0f} us per acknowledged "
          f"reading, {server_cpu / span:.0%} of a core), {recovery_cpu:.1f} s recovery process")
    print(f"ack latency (request sent -> answer) p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {pmax:.1f} ms; "
          f"scheduled -> acknowledged p50 {d50:.1f} ms, p99 {d99:.1f} ms, max {dmax:.1f} ms")
    print(f"database: {int(stored.sum())} reports stored, {lost} acknowledged reports missing, "
          f"{duplicates_stored} stored twice; collector alive {alive}")
    print(f"recovery: {recovered} of {n_windows} windows recovered {t_end - t0 + 2 - n_windows * window_seconds:.0f} s "
          f"after the last window's start ({n_windows - recovered} unrecovered); full windows not yet recovered "
          f"when sending ended: {lag_end_of_sending}")
    if base:
        print(f"collector RSS: {base[0][1]:.1f} MB after {args.warmup:.0f} s warm-up, max {max(s[1] for s in base):.1f}"
              f" MB, end {base[-1][1]:.1f} MB: growth {100 * growth:.1f} %; recovery process RSS {base[-1][2]:.1f} MB "
              f"at the end")
    goals = {
        "no error responses (any status other than 200/201)": errors == 0,
        f"every request answered by {args.drain:g} s after the last window's release": unanswered == 0,
        "no acknowledged report lost, collector alive": lost == 0 and duplicates_stored == 0 and alive,
        f"RSS growth after {args.warmup:.0f} s warm-up < 10 %": bool(base) and growth < 0.10,
        "achieved >= 95 % of the offered rate": achieved >= 0.95 * rate,
    }
    for goal, ok in goals.items():
        print(f"{'PASS' if ok else 'FAIL'}: {goal}")
    print(f"p99 acknowledgement latency: {p99:.1f} ms (reported; no goal)")
    peak = max((s[1] for s in samples), default=math.nan)
    doc = {
        "kernel": f"collector soak, {args.mode} ({'batches of 100' if args.mode == 'batch' else 'one reading'} per "
                  f"request), {SENSORS} sensors, SQLite",
        "peer": "offered rate (bench_collector's measured readings/s)",
        "unit": "seconds per reading (wall, acknowledged)",
        "rows": [{"size": f"{n_windows * window_seconds:.0f} s", "n": offered, "ours_s": 1 / achieved if achieved
                  else None, "peer_s": 1 / rate, "peer_finished": True,
                  "ratio": achieved / rate, "peak_rss_mb": _finite(peak)}],
        "slope": None, "load_avg": list(load), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": bool(args.quick), "mode": args.mode, "cores": os.cpu_count(), "sensors": SENSORS,
        "connections": connections, "seconds": n_windows * window_seconds, "window_seconds": window_seconds,
        "windows": n_windows, "offered_rate": rate, "achieved_rate": achieved,
        "offered_requests_s": offered_requests_s, "achieved_requests_s": achieved_requests,
        "statuses": {str(k): v for k, v in sorted(stats.statuses.items())},
        "report_statuses": {str(k): v for k, v in sorted(stats.report_statuses.items())},
        "unsent": stats.unsent, "unanswered": stats.unanswered, "reconnects": stats.reconnects, "errors": errors,
        "unanswered_requests": unanswered,
        "acknowledged": acknowledged, "stored": int(stored.sum()), "lost_acknowledged": lost,
        "stored_twice": duplicates_stored, "collector_alive": alive,
        "p50_ms": _finite(p50), "p99_ms": _finite(p99), "max_ms": _finite(pmax), "scheduled_p50_ms": _finite(d50),
        "scheduled_p99_ms": _finite(d99), "scheduled_max_ms": _finite(dmax),
        "rss_mb": {"baseline": base[0][1] if base else None, "max": max((s[1] for s in base), default=None),
                   "end": base[-1][1] if base else None},
        "rss_growth": _finite(growth), "recovery_rss_mb": base[-1][2] if base else None,
        "windows_recovered": recovered, "windows_unrecovered": n_windows - recovered,
        "unrecovered_full_windows_end_of_sending": lag_end_of_sending, "prep_s": prep, "distinct": args.distinct,
        "schedule_shift_s": overrun, "client_cpu_share": client_cpu_share,
        "server_cpu_us_per_reading": _finite(server_us), "recovery_cpu_s": _finite(recovery_cpu), "goals": goals,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n")
    print(f"results written to {out_path}")


if __name__ == "__main__":
    main()

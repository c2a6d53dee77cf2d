"""The dashboard against 30 days of history: what two open dashboards cost the collector and its sensors.

A deployment of 40 people counters (8 x 5 on a 16 m x 10 m floor, 40 source cells) with 1-minute
windows, started 30 days ago: 43,200 closed windows and their 1,728,000 reports are written straight
into the SQLite store (the collector's own schema, migrated; synthetic maps — the benchmark measures
reads, not recoveries). The collector (``dpcloak serve``, a real process) then takes honest signed
reports for the last 60 windows, left open (a two-hour grace period), at 40 reports a second in two
phases of 30 windows (1,200 reports each): first with no dashboard, then with two dashboards open.
Every full window closes (and is recovered) as it fills, so the dashboards see a new window each second.

A dashboard is emulated request for request as ``assets/app.js`` makes them: the deployment, the newest
page of 120 window summaries, the latest window's map and the sensors, then every 2 s *after the previous
poll ended* the windows closed since its cursor with the newest one's map (``latest=true``: no request of its
own; every 30th poll with the count of closed windows), with the sensors and the health (the policy banner)
fetched side by side, each on a connection of its own. Each dashboard runs in a process of its own, apart
from the sensors' client, so that no client waits for another's interpreter lock: the latencies are the
collector's (and loopback's).
Printed: report acknowledgement latency p50/p99/max per phase, the collector's resident memory (start
of each phase, and its range during the dashboards' phase), each kind of dashboard request's latency
(p50, p95, p99, max) as the client saw it and as the collector timed it (its ``Server-Timing`` header: the rest
is loopback and the client) and its size (max), each whole poll's time and size (max), and the streamed CSV and Parquet
exports of the whole history: time, size and the collector's memory during the stream. Goals (issue 33):
p99 with dashboards within 2x of without, memory flat (within 10 %), every poll within 50 ms and
100 kB (and each kind of poll request's maximum), exports in constant memory, each stated pass or FAIL; the
collector's CPU seconds in each phase and each dashboard client's. Results:
``benchmarks/results/bench_dashboard.json``.

With ``--backend postgresql`` the same on PostgreSQL 15 (a throwaway server in the temporary directory, the
history written by ``COPY``; results ``bench_dashboard_postgresql.json``).

Run: ``PYTHONPATH=src python benchmarks/bench_dashboard.py [--backend postgresql]`` (about three minutes:
under a minute to write the history, one of load, the exports).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import os
import shutil
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _collector_load as shared

DAYS = 30
WINDOW_SECONDS = 60.0
HISTORY = int(DAYS * 86_400 / WINDOW_SECONDS)  # 43,200 windows
OPEN = 60  # the last hour is left open for the live load
RATE = 40.0  # reports a second
POLL_SECONDS = 2.0
PAGE = 120
COUNT_EVERY = 30  # as app.js: every 30th poll also counts the closed windows (a check for out-of-order closes)
RESULTS = Path(__file__).resolve().parent / "results" / "bench_dashboard.json"


def write_history(directory: Path, db_url: str | None = None) -> Any:
    """The deployment and its 30 days of closed windows and reports (:func:`_collector_load.write_history`), in
    ``collector.db`` or the PostgreSQL database ``db_url``."""
    from dpcloak.service.config import Deployment

    now = time.time()
    total = HISTORY + OPEN
    dep = Deployment.create(network=shared.forty_sensor_network(), window_seconds=WINDOW_SECONDS, period_windows=60,
                            start=now - total * WINDOW_SECONDS - 5.0, grace_seconds=7200.0)
    shared.write_history(directory, dep, windows=range(HISTORY), block=2000, db_url=db_url)
    return dep


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Sampler(threading.Thread):
    """The collector's resident memory every 0.2 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop = pid, [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(OSError):
                self.samples.append(rss_mb(self.pid))
            self.stop.wait(0.2)


class Dashboard(threading.Thread):
    """One open dashboard: app.js's requests, in its order, one poll at a time."""

    def __init__(self, url: str, token: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.side = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.third = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.stop, self.requests, self.polls = stop, [], []
        self.cursor: str | None = None
        self.counted = 0
        self.latest = -1
        self.n_polls = 0

    def get(self, kind: str, path: str, client: httpx.Client | None = None) -> Any:
        t0 = time.perf_counter()
        resp = (client or self.client).get(path)
        dt = time.perf_counter() - t0
        resp.raise_for_status()
        self.requests.append((kind, dt, len(resp.content), server_seconds(resp)))
        return resp.json(), dt, len(resp.content)

    def page(self) -> tuple[float, int]:
        data, dt, size = self.get("first page", f"/api/v1/windows?limit={PAGE}")
        self.cursor, self.counted = data["cursor"], data["total"]
        self.latest = max([r["window"] for r in data["windows"]] + [self.latest])
        return dt, size

    def poll(self) -> tuple[float, int, float]:
        """One poll as ``app.js`` makes it: the windows (since, maybe a page, the new map) and, side by side on
        two more connections, the sensors and the health; its time is the wall time until all are done, its
        server time the collector's on its longest path (the windows' requests one after the other, or the
        sensors, or the health)."""
        started, first = time.perf_counter(), len(self.requests)
        sensors: list[int] = []
        beside = threading.Thread(target=lambda: sensors.append(self.sensors()))
        beside.start()
        size = self._poll_windows()
        beside.join()
        elapsed = time.perf_counter() - started
        mine = self.requests[first:]
        windows = sum(t for kind, _, _, t in mine if kind not in ("sensors", "health"))
        server = max([windows, *(t for kind, _, _, t in mine if kind in ("sensors", "health"))])
        return elapsed, size + sensors[0], server

    def sensors(self) -> int:
        """``refreshSensors`` of ``app.js``: the sensors and the health (the policy banner) side by side on
        connections of their own; bytes read."""
        sizes: list[int] = []
        health = threading.Thread(target=lambda: sizes.append(self.get("health", "/api/v1/health", self.third)[2]))
        health.start()
        sizes.append(self.get("sensors", "/api/v1/sensors", self.side)[2])
        health.join()
        return sum(sizes)

    def _poll_windows(self) -> int:
        size, came = 0, -1  # came: the newest window whose map came with the listing (latest=true)
        self.n_polls += 1
        count = "&count=true" if self.n_polls % COUNT_EVERY == 0 else ""
        while True:
            data, _, n = self.get("since (counted)" if count else "since",
                                  f"/api/v1/windows?limit={PAGE}&since={self.cursor}{count}&latest=true")
            size += n
            self.counted += len(data["windows"])
            self.cursor = data["cursor"]
            new = [r["window"] for r in data["windows"]]
            if data["latest"] is not None:
                came = max(came, data["latest"]["window"])
            if not data["more"]:
                break
        if data["total"] is not None and self.counted != data["total"]:
            size += self.page()[1]
        if new and max(new) > self.latest:
            self.latest = max(new)
            if came != self.latest:  # not listed with its map: asked for
                size += self.get("window map", f"/api/v1/windows/{self.latest}")[2]
        return size

    def run(self) -> None:
        self.get("deployment", "/api/v1/deployment")
        self.page()
        self.get("window map", f"/api/v1/windows/{self.latest}")
        self.sensors()
        while not self.stop.wait(POLL_SECONDS):
            self.polls.append(self.poll())


def dashboard_process(url: str, token: str, seconds: float, out: Any, ready: Any, go: Any) -> None:
    """One dashboard in a process of its own (its client shares no interpreter lock with the sensors' client or
    the other dashboard): started on ``go``, stopped after ``seconds``; its requests, polls and the CPU
    seconds its client used go to ``out``."""
    stop = threading.Event()
    dashboard = Dashboard(url, token, stop)
    ready.set()
    go.wait()
    cpu = time.process_time()
    dashboard.start()
    time.sleep(seconds)
    stop.set()
    dashboard.join()
    out.put((dashboard.requests, dashboard.polls, time.process_time() - cpu))


def send_phase(client: httpx.Client, bodies: list[dict[str, Any]]) -> list[float]:
    """Post the reports one at a time at ``RATE`` a second; every acknowledgement's latency in seconds."""
    latencies = []
    t_next = time.perf_counter()
    for body in bodies:
        t_next += 1.0 / RATE
        time.sleep(max(0.0, t_next - time.perf_counter()))
        t0 = time.perf_counter()
        resp = client.post("/api/v1/reports", json=body)
        latencies.append(time.perf_counter() - t0)
        if resp.status_code != 201:
            raise RuntimeError(f"report refused: {resp.status_code} {resp.text}")
    return latencies


def export(url: str, token: str, path: str, pid: int) -> dict[str, Any]:
    """Stream an export to nowhere; its time, size and the collector's memory before and during."""
    sampler = Sampler(pid)
    before = rss_mb(pid)
    sampler.start()
    size, t0 = 0, time.perf_counter()
    with httpx.stream("GET", url + path, headers={"Authorization": f"Bearer {token}"}, timeout=600) as resp:
        resp.raise_for_status()
        for chunk in resp.iter_raw():
            size += len(chunk)
    seconds = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    return {"seconds": round(seconds, 2), "mb": round(size / 2**20, 1), "rss_before_mb": round(before, 1),
            "rss_peak_mb": round(max([*sampler.samples, before]), 1)}


def server_seconds(resp: httpx.Response) -> float:
    """The collector's own time for a request, from its ``Server-Timing: app;dur=<ms>`` header (NaN without it)."""
    for part in resp.headers.get("server-timing", "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name == "app" and dur:
            return float(dur) / 1000
    return float("nan")


def quantiles(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)

    def at(q: float) -> float:
        return round(ms[min(len(ms) - 1, int(q * len(ms)))], 2)

    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p95_ms": at(0.95), "p99_ms": at(0.99),
            "max_ms": round(ms[-1], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    backend = parser.parse_args().backend
    load_start = round(os.getloadavg()[0], 2)  # the machine's load before this run adds its own
    work = Path(tempfile.mkdtemp(prefix="dpcloak-bench-dashboard-"))
    pg = Path(tempfile.mkdtemp(prefix="dpcloak-bench-dashboard-pg-"))  # its own: the server runs as another user
    try:
        with contextlib.ExitStack() as stack:
            db_url = None
            if backend == "postgresql":
                db_url = shared.database(stack.enter_context(shared.postgres_server(pg)), "dpcloak")
            out = measure(work, db_url)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(pg, ignore_errors=True)
    out.update(backend=backend, windows=HISTORY, load_avg_start=load_start, load_avg=round(os.getloadavg()[0], 2),
               date=datetime.date.today().isoformat())
    results = RESULTS if backend == "sqlite" else RESULTS.with_name(f"bench_dashboard_{backend}.json")
    results.parent.mkdir(exist_ok=True)
    results.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    print(f"{backend}: each kind of dashboard request, client (round trip) and server (its Server-Timing), ms")
    for kind, r in out["dashboard_requests"].items():
        srv = r["server"]
        print(f"  {kind:16} n={r['n']:3}  client p50 {r['p50_ms']:6.1f} p95 {r['p95_ms']:6.1f} max {r['max_ms']:6.1f}  "
              f"server p50 {srv['p50_ms']:6.1f} p95 {srv['p95_ms']:6.1f} max {srv['max_ms']:6.1f}  <= {r['max_kb']} kB")
    polls, srv = out["polls"], out["polls"]["server"]
    print(f"  {'whole poll':16} n={polls['n']:3}  client p50 {polls['p50_ms']:6.1f} p95 {polls['p95_ms']:6.1f} max "
          f"{polls['max_ms']:6.1f}  server p50 {srv['p50_ms']:6.1f} p95 {srv['p95_ms']:6.1f} max {srv['max_ms']:6.1f}  "
          f"<= {polls['max_kb']} kB; report p99 ratio (two dashboards / none) "
          f"{out['p99_ratio']}; load average {out['load_avg']}")
    goals = {"report p99 with two dashboards within 2x of none": out["p99_ratio"] <= 2.0,
             "collector memory flat (10 %)": abs(out["rss_mb"]["change_during_pct"]) <= 10.0,
             "every poll <= 50 ms": out["polls"]["max_ms"] <= 50.0,
             "every poll <= 100 kB": out["polls"]["max_kb"] <= 100.0,
             "the collector's time in every poll <= 50 ms": out["polls"]["server"]["max_ms"] <= 50.0,
             **{f"every {kind} request <= 50 ms": r["max_ms"] <= 50.0 for kind, r in out["dashboard_requests"].items()
                if kind not in ("deployment", "first page")}}  # once per page load, not per poll
    for goal, ok in goals.items():
        print(f"goal ({backend}): {goal}: {'pass' if ok else 'FAIL'}")


def measure(work: Path, db_url: str | None) -> dict[str, Any]:
    """Write the history, start the collector, run the two phases and the exports; the measurements."""
    from dpcloak.service.config import ANALYST_FILE

    t0 = time.perf_counter()
    dep = write_history(work, db_url)
    print(f"history: {HISTORY:,} windows, {HISTORY * dep.n_sensors:,} reports written in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    keys = shared.sensor_keys(work, dep)
    first_open = HISTORY
    rng = np.random.default_rng(2)
    net = dep.sensor_network
    bodies = [shared.report_body(keys[j], dep, j, w, float(net.privatize_reading(j, float(v))))
              for w in range(first_open, first_open + OPEN) for j, v in enumerate(rng.uniform(0, 20, dep.n_sensors))]
    half = len(bodies) // 2
    port = shared.free_port()
    url = f"http://127.0.0.1:{port}"
    log = (work / "collector.log").open("w")
    db_args = ["--db", db_url] if db_url else []
    proc = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--deployment", str(work), "--port", str(port),
                             *db_args], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    out: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError((work / "collector.log").read_text())
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url + "/api/v1/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        time.sleep(3.0)  # let the recovery process finish starting
        token = (work / ANALYST_FILE).read_text().strip()
        sensors = httpx.Client(base_url=url, timeout=60)
        sampler = Sampler(proc.pid)
        sampler.start()
        rss0 = rss_mb(proc.pid)
        cpu0 = shared.cpu_seconds(proc.pid, descendants=True)
        alone = send_phase(sensors, bodies[:half])
        cpu1 = shared.cpu_seconds(proc.pid, descendants=True)
        rss1 = rss_mb(proc.pid)
        ctx = multiprocessing.get_context("spawn")
        results, go = ctx.Queue(), ctx.Event()
        readies = [ctx.Event() for _ in range(2)]
        seconds = (len(bodies) - half) / RATE
        dashboards = [ctx.Process(target=dashboard_process, args=(url, token, seconds, results, ready, go))
                      for ready in readies]
        for d in dashboards:
            d.start()
        for ready in readies:
            ready.wait(120)
        mark = len(sampler.samples)
        go.set()
        watched = send_phase(sensors, bodies[half:])
        collected = [results.get(timeout=120) for _ in dashboards]
        for d in dashboards:
            d.join(60)
        cpu2 = shared.cpu_seconds(proc.pid, descendants=True)
        during = sampler.samples[mark:]
        rss2 = rss_mb(proc.pid)
        sampler.stop.set()
        out["reports_alone"] = quantiles(alone)
        out["reports_two_dashboards"] = quantiles(watched)
        out["p99_ratio"] = round(out["reports_two_dashboards"]["p99_ms"] / out["reports_alone"]["p99_ms"], 2)
        out["collector_cpu_s"] = {"alone": round(cpu1 - cpu0, 2), "two_dashboards": round(cpu2 - cpu1, 2)}
        out["dashboard_client_cpu_s"] = [round(c, 2) for _, _, c in collected]
        out["rss_mb"] = {"start": round(rss0, 1), "before_dashboards": round(rss1, 1),
                         "during_min": round(min(during), 1), "during_max": round(max(during), 1),
                         "end": round(rss2, 1),
                         "change_during_pct": round(100 * (max(during) - rss1) / rss1, 1)}
        requests: dict[str, list[tuple[float, int, float]]] = {}
        for reqs, _, _ in collected:
            for kind, dt, size, server in reqs:
                requests.setdefault(kind, []).append((dt, size, server))
        out["dashboard_requests"] = {kind: {**quantiles([dt for dt, _, _ in v]),
                                            "server": quantiles([t for _, _, t in v]),
                                            "max_kb": round(max(s for _, s, _ in v) / 1000, 1)}
                                     for kind, v in requests.items()}
        polls = [p for _, ps, _ in collected for p in ps]
        out["polls"] = {**quantiles([dt for dt, _, _ in polls]), "server": quantiles([t for _, _, t in polls]),
                        "max_kb": round(max(s for _, s, _ in polls) / 1000, 1)}
        out["export_csv"] = export(url, token, "/api/v1/export.csv", proc.pid)
        out["export_parquet"] = export(url, token, "/api/v1/export.parquet", proc.pid)
    finally:
        shared.stop(proc, timeout=60)
        log.close()
    out.update(sensors=dep.n_sensors, sources=dep.sensor_network.n_sources)
    return out


if __name__ == "__main__":
    main()

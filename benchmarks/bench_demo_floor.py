"""The real ``dpcloak serve --demo`` (its 40-sensor floor, as ``serve --demo`` builds it) with a fast clock,
watched in headless Chromium: what it costs per release window, and whether the dashboard keeps up.

1. **Per release window, in this process** (``--rounds`` release windows, interleaved): the 40 nodes'
   releases (exact sampler, HMAC, the durable ledger commit), then their 40 reports delivered to a running
   collector (``dpcloak serve``) either one by one (each node's ``deliver``: 40 requests) or in one batch
   request (``deliver_batch``: what the demo does), alternating between the two from window to window; wall
   and CPU time (this process) of each, and the ratio one-by-one / batch. The collector takes a report until
   ``grace_seconds`` (one window, 2 simulated seconds) after its window's end, so at time scale S the
   deliveries must fit in 2/S real seconds (17 ms at 120x).
2. **The demo run** (skipped with ``--windows 0``): ``dpcloak serve --demo --time-scale S --windows N`` in a
   fresh directory, two dashboards (1280 x 800 and 390 x 844) open in Chromium; every 2 s the API's health and
   what the desktop page shows (its map's window, the policy banner and its status, the renewal). Printed:
   release windows, reports stored of those due, windows closed, the largest gap between closed windows, the
   longest time the page's map stood still, the polls with health ``degraded`` during a budget skip of the
   demo's policy (every 4th window until 360 fill the hour, then 12 minutes of skipping for budget) and
   outside one, the renewals shown. Screenshots go to ``--shots``.

Run: ``PYTHONPATH=src python benchmarks/bench_demo_floor.py --rounds 10 --windows 0`` (part 1 only, under a
minute) or ``--time-scale 6 --windows 2100 --shots /tmp/shots`` (70 simulated minutes in about 12 real ones).
Results: ``benchmarks/results/bench_demo_floor.json``.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from dpcloak.service import demo
from dpcloak.service.config import SENSOR_DIR, load_credential, load_deployment
from dpcloak.service.node import SensorNode, deliver_batch

RESULTS = Path(__file__).resolve().parent / "results" / "bench_demo_floor.json"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
SIZES = {"desktop": ({"width": 1280, "height": 800}, 1), "phone": ({"width": 390, "height": 844}, 2)}
SNAPSHOT = """() => {
    const b = document.getElementById('policy-banner'); const m = document.getElementById('map');
    return {window: m.dataset.window ? Number(m.dataset.window) : null, banner: b.textContent,
            status: b.dataset.status || null, renews: b.dataset.renewsAtWindow || null}; }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            httpx.get(url + "/api/v1/health", timeout=5).raise_for_status()
            return
        except (httpx.TransportError, httpx.HTTPStatusError):
            time.sleep(0.2)
    raise RuntimeError("the collector did not start")


def per_window_costs(base: Path, rounds: int) -> dict[str, float]:
    """The 40 nodes' releases, and their deliveries one by one or in one batch (alternating), against a real
    collector: median wall and CPU milliseconds per release window."""
    directory = base / "costs" / demo.DEMO_DIR
    dep = demo.demo_deployment(directory)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--deployment", str(directory), "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    nodes = []
    client = httpx.Client(base_url=url, timeout=30)
    times: dict[str, list[tuple[float, float]]] = {"release": [], "one_by_one": [], "batch": []}
    try:
        wait_up(url, proc)
        nodes = [SensorNode(deployment=dep, ledger=directory / f"ledger-{j}.db", url=url,
                            credential=load_credential(directory / SENSOR_DIR / f"sensor-{j}.json"))
                 for j in range(dep.n_sensors)]
        done, w = 0, -1
        while done < 2 * rounds:
            w = dep.next_release_window(max(dep.window_at(time.time()), w + 1))  # type: ignore[assignment]
            assert w is not None
            time.sleep(max(0.0, dep.window_start(w) - time.time()))
            readings = demo.demo_readings(dep, w)
            t0, c0 = time.perf_counter(), time.process_time()
            entries = [(node, node.release(float(readings[node.sensor]), window=w)) for node in nodes]
            t1, c1 = time.perf_counter(), time.process_time()
            way = "batch" if done % 2 else "one_by_one"
            if way == "batch":
                delivered = deliver_batch(entries, client=client)
            else:
                delivered = [node.deliver(entry) for node, entry in entries]
            t2, c2 = time.perf_counter(), time.process_time()
            assert [d.outcome for d in delivered] == ["stored"] * len(nodes), delivered
            times["release"].append((t1 - t0, c1 - c0))
            times[way].append((t2 - t1, c2 - c1))
            done += 1
    finally:
        client.close()
        for node in nodes:
            node.close()
        proc.terminate()
        proc.wait(timeout=60)
    out: dict[str, float] = {"rounds_each": rounds}
    for name, pairs in times.items():
        out[f"{name}_40_ms_median"] = 1e3 * statistics.median(t for t, _ in pairs)
        out[f"{name}_40_cpu_ms_median"] = 1e3 * statistics.median(c for _, c in pairs)
        out[f"{name}_40_ms_max"] = 1e3 * max(t for t, _ in pairs)
    out["one_by_one_over_batch_wall"] = out["one_by_one_40_ms_median"] / out["batch_40_ms_median"]
    out["one_by_one_over_batch_cpu"] = out["one_by_one_40_cpu_ms_median"] / out["batch_40_cpu_ms_median"]
    return out


def demo_run(base: Path, scale: float, windows: int, shots: Path | None) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    run_dir = base / "run"
    run_dir.mkdir()
    log = (base / "serve.log").open("w")  # a file, not a pipe nobody reads while it runs: its warnings would fill it
    proc = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--demo", "--port", str(port),
                             "--time-scale", str(scale), "--windows", str(windows)], cwd=run_dir,
                            stdout=subprocess.DEVNULL, stderr=log, text=True)
    seen: list[dict[str, Any]] = []
    taken: set[str] = set()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        try:
            wait_up(url, proc)
            token = (run_dir / demo.DEMO_DIR / "analyst.token").read_text().strip()
            pages = {}
            for name, (size, dpr) in SIZES.items():
                page = browser.new_context(viewport=size, device_scale_factor=dpr).new_page()
                page.goto(f"{url}/dashboard/#token={token}", timeout=60_000)
                pages[name] = page
            started = None
            while proc.poll() is None:
                time.sleep(2.0)
                try:
                    health = httpx.get(url + "/api/v1/health", timeout=10).json()
                except (httpx.TransportError, ValueError):
                    continue
                snap = pages["desktop"].evaluate(SNAPSHOT)
                seen.append({"t": time.monotonic(), "health": health, "page": snap})
                started = started or health["window"]
                state = ("degraded" if snap["status"] == "degraded" else
                         "ok" if snap["status"] == "ok" and "degraded" in taken else None)
                if shots is not None and state and state not in taken:
                    taken.add(state)
                    for name, page in pages.items():
                        page.screenshot(path=str(shots / f"demo-floor-{state}-{name}.png"), full_page=True)
        finally:
            browser.close()
    proc.wait(timeout=180)
    log.close()
    err = (base / "serve.log").read_text()
    db = run_dir / demo.DEMO_DIR / "collector.db"
    dep = load_deployment(run_dir / demo.DEMO_DIR)
    with sqlite3.connect(db) as conn:
        reported = conn.execute("SELECT window, sensor_id FROM reports").fetchall()
        closed = sorted(int(w) for (w,) in conn.execute("SELECT window FROM windows"))
    first = min(w for w, _ in reported)
    last = max(w for w, _ in reported)
    release_windows = sum(1 for w in range(first, last + 1) if dep.is_release_window(w))
    due = release_windows * dep.n_sensors
    shown = [(s["t"], s["page"]["window"]) for s in seen  # while the sensors ran (not while the demo stops)
             if s["page"]["window"] is not None and s["health"]["window"] < first + windows - 10]
    still = 0.0
    for i, (t0, w0) in enumerate(shown):
        later = [t for t, w in shown[i:] if w == w0]
        still = max(still, later[-1] - t0)
    in_skip = [s for s in seen if dep.budget_skip(s["health"]["window"])]
    outside = [s for s in seen if s not in in_skip]
    return {
        "time_scale": scale, "windows": windows, "release_windows": release_windows, "reports_due": due,
        "reports_stored": len(reported), "windows_closed": len(closed),
        "largest_gap_windows": max(b - a for a, b in itertools.pairwise(closed)),
        "page_map_still_longest_s": still, "polls": len(seen),
        "degraded_in_budget_skip": sum(s["health"]["status"] == "degraded" for s in in_skip),
        "polls_in_budget_skip": len(in_skip),
        "all_named_in_budget_skip": sum(len(s["health"]["policy"]["skipping_for_budget"]) == dep.n_sensors
                                        for s in in_skip),
        "degraded_outside_budget_skip": sum(s["health"]["status"] == "degraded" for s in outside),
        "polls_outside_budget_skip": len(outside),
        "page_degraded_banners": sum(s["page"]["status"] == "degraded" for s in seen),
        "renewals_shown": sorted({int(s["page"]["renews"]) for s in seen if s["page"]["renews"]}),
        "policy_banner_example": next((s["page"]["banner"] for s in seen if s["page"]["status"] == "ok"), None),
        "exit_code": proc.returncode, "traceback": "Traceback" in err, "screenshots": sorted(taken)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=6.0)
    parser.add_argument("--windows", type=int, default=2100, help="windows of the demo run in part 2 (0: skip it)")
    parser.add_argument("--rounds", type=int, default=5, help="release windows timed in part 1")
    parser.add_argument("--shots", type=Path, default=None, help="directory for the screenshots")
    args = parser.parse_args()
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(dir=shm if shm.is_dir() else None))
    load = os.getloadavg()
    try:
        costs = per_window_costs(base, args.rounds)
        print(f"40 nodes per release window (median of {args.rounds} each, load {load[0]:.1f} at start): release "
              f"{costs['release_40_ms_median']:.0f} ms wall / {costs['release_40_cpu_ms_median']:.0f} ms CPU; "
              f"deliver one by one {costs['one_by_one_40_ms_median']:.0f} ms / "
              f"{costs['one_by_one_40_cpu_ms_median']:.0f} ms CPU, in one batch {costs['batch_40_ms_median']:.0f} ms "
              f"/ {costs['batch_40_cpu_ms_median']:.0f} ms CPU: one by one / batch = "
              f"{costs['one_by_one_over_batch_wall']:.1f}x wall, {costs['one_by_one_over_batch_cpu']:.1f}x CPU "
              "(the grace at 120x is 17 ms)", flush=True)
        run: dict[str, Any] = {}
        if args.windows > 0:
            if args.shots is not None:
                args.shots.mkdir(parents=True, exist_ok=True)
            run = demo_run(base, args.time_scale, args.windows, args.shots)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for key, value in run.items():
        print(f"{key}: {value}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"costs": costs, "run": run, "load_avg_start": load, "load_avg": os.getloadavg(),
                                   "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")},
                                  indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Restart-to-ready of a collector holding 10^7 stored reports (issue 33: at most 5 s).

A deployment of 40 people counters (8 x 5 on a 16 m x 10 m floor) with 1-minute windows started
250,000 windows (about 174 days) ago: every window closed with its 40 reports (10^7 reports, 250,000
windows), except the last ``OPEN`` windows, which hold reports but were not closed (a collector killed
before closing them: a restart must find and close them). The database is written once with bulk
``executemany`` inserts (the collector's own schema, migrated; synthetic maps) and cached in the temporary
directory (``dpcloak-bench-startup-10m``) for later runs.

Measured: the wall time from starting ``dpcloak serve`` to its first ``200`` of ``GET /api/v1/health``
(ready: migrated, registered, its in-memory state rebuilt, listening) with the CPU seconds the collector's
processes used until then (load-independent), and that the windows left open
(before each start, the two latest windows without reports are given every sensor's report, not closed:
a collector killed before closing them) are found and closed. The first start reads the whole history once
(a database of an earlier version has no restart mark; the collector then stores it), the ``REPEATS``
restarts after it read from the mark. Results: ``benchmarks/results/bench_startup.json``.

With ``--backend postgresql`` the same on PostgreSQL 15: a throwaway server (``initdb`` once, its data
directory cached in ``dpcloak-bench-startup-10m-postgresql``), the history written once by ``COPY``, each
run on a copy of it (``CREATE DATABASE … TEMPLATE``). Results: ``bench_startup_postgresql.json``.

Run: ``PYTHONPATH=src python benchmarks/bench_startup.py [--backend postgresql]`` (several minutes the first
time, to write the database; about a minute afterwards).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _collector_load as shared

WINDOWS = 250_000
SENSORS = 40
OPEN = 3  # the last windows hold reports but are not closed
OPEN_AT_RESTART = 2  # before each restart: windows given every sensor's report, not closed
REPEATS = 3
CACHE = Path(tempfile.gettempdir()) / "dpcloak-bench-startup-10m"
RESULTS = Path(__file__).resolve().parent / "results" / "bench_startup.json"


def build(directory: Path, db_url: str | None = None) -> None:
    """The deployment and its history (:func:`_collector_load.write_history`): ``WINDOWS`` windows, the last
    ``OPEN`` not closed; into ``collector.db``, or the PostgreSQL database ``db_url``."""
    from dpcloak.service.config import Deployment

    directory.mkdir(parents=True, exist_ok=True)
    for leftover in directory.iterdir():
        leftover.unlink()
    now = time.time()
    # the open windows' grace period (two hours) is not over: they are closed as full, not as late
    dep = Deployment.create(network=shared.forty_sensor_network(), window_seconds=60.0, period_windows=60,
                            start=now - (WINDOWS + 10) * 60.0, grace_seconds=7200.0)
    # the newest window holding reports; the windows after it stay free for add_open_windows (a fast build
    # ends within the window it started in, and the restarts then need past windows without reports)
    last = dep.window_at(now) - 1 - OPEN_AT_RESTART * (REPEATS + 1)
    shared.write_history(directory, dep, windows=range(last - WINDOWS + 1, last + 1), open_windows=OPEN,
                         block=2000, db_url=db_url)
    (directory / "built").write_text(json.dumps({"reports": WINDOWS * SENSORS, "windows": WINDOWS,
                                                 "open": list(range(last - OPEN + 1, last + 1))}))


def engine(directory: Path, db_url: str | None) -> Any:
    """A SQLAlchemy engine on the collector's database (``collector.db`` unless ``db_url``)."""
    import sqlalchemy

    from dpcloak.service.store import sqlite_url

    return sqlalchemy.create_engine(db_url or sqlite_url(directory / "collector.db"))


def add_open_windows(directory: Path, deployment: Any, db_url: str | None) -> list[int]:
    """Reports of every sensor for the two latest windows without any, not closed (a collector killed before)."""
    from sqlalchemy import text

    rng = np.random.default_rng()
    eng = engine(directory, db_url)
    with eng.begin() as conn:
        taken = {w for (w,) in conn.execute(text('SELECT DISTINCT "window" FROM reports WHERE "window" >= :w'),
                                            {"w": deployment.window_at(time.time()) - 100})}
        opened = [w for w in range(deployment.window_at(time.time()) - 1, 0, -1) if w not in taken][:OPEN_AT_RESTART]
        conn.execute(text(f"INSERT INTO reports ({shared.REPORT_COLUMNS}) VALUES (:d, :s, :w, :r, :v, :t)"),
                     [{"d": deployment.deployment_id, "s": j, "w": w, "r": f"open-{w:x}-{j}",
                       "v": float(rng.uniform(0, 20)), "t": time.time()} for w in opened for j in range(SENSORS)])
    eng.dispose()
    return opened


def mark(directory: Path, db_url: str | None) -> int | None:
    """The stored restart mark (``collector_state.closed_below``), ``None`` before the collector wrote it."""
    import sqlalchemy

    eng = engine(directory, db_url)
    try:
        with eng.connect() as conn:
            row = conn.execute(sqlalchemy.text("SELECT closed_below FROM collector_state")).first()
            return None if row is None else int(row[0])
    except (sqlalchemy.exc.ProgrammingError, sqlalchemy.exc.OperationalError):  # before the table's migration
        return None
    finally:
        eng.dispose()


def restart(directory: Path, opened: list[int], db_url: str | None) -> dict[str, Any]:
    """Start ``dpcloak serve`` on ``directory``; seconds to ready, whether the ``opened`` windows then close, and
    (waited for) the restart mark it stores."""
    from dpcloak.service.config import ANALYST_FILE

    before = mark(directory, db_url)
    port = shared.free_port()
    url = f"http://127.0.0.1:{port}"
    log = (directory / "collector.log").open("w")
    t0 = time.perf_counter()
    db = ["--db", db_url] if db_url else []
    proc = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--deployment", str(directory), "--port",
                             str(port), *db], stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError((directory / "collector.log").read_text())
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url + "/api/v1/health", timeout=5).status_code == 200:
                    break
            time.sleep(0.02)
        ready = time.perf_counter() - t0
        cpu = shared.cpu_seconds(proc.pid, descendants=True)  # what the start cost, whatever the machine's load
        token = (directory / ANALYST_FILE).read_text().strip()
        deadline = time.monotonic() + 300
        closed = False
        while time.monotonic() < deadline and not (closed and mark(directory, db_url) is not None):
            closed = all(httpx.get(url + f"/api/v1/windows/{w}", headers={"Authorization": f"Bearer {token}"},
                                   timeout=10).status_code == 200 for w in opened)
            time.sleep(0.2)
        return {"mark_before": before, "ready_s": round(ready, 3), "ready_cpu_s": round(cpu, 2), "open_windows": opened,
                "open_windows_closed": closed, "mark_after": mark(directory, db_url)}
    finally:
        shared.stop(proc, timeout=60)
        log.close()


def runs_on(directory: Path, db_url: str | None) -> list[dict[str, Any]]:
    """The first start (no mark yet) and ``REPEATS`` restarts of a collector on ``directory`` (and ``db_url``)."""
    from dpcloak.service.config import load_deployment

    dep = load_deployment(directory)
    runs = []
    for _ in range(REPEATS + 1):  # the first start reads the whole history once (no mark yet)
        runs.append(restart(directory, add_open_windows(directory, dep, db_url), db_url))
        print(runs[-1], flush=True)
    return runs


def sqlite_runs() -> list[dict[str, Any]]:
    """On a copy of the cached SQLite deployment (written the first time)."""
    if not (CACHE / "built").exists():
        t0 = time.perf_counter()
        build(CACHE)
        print(f"built {WINDOWS * SENSORS:,} reports in {time.perf_counter() - t0:.0f} s "
              f"({(CACHE / 'collector.db').stat().st_size / 2**30:.2f} GiB)")
    with tempfile.TemporaryDirectory(prefix="dpcloak-bench-startup-") as work:
        directory = Path(work) / "deployment"
        shutil.copytree(CACHE, directory)
        return runs_on(directory, None)


def postgresql_runs() -> list[dict[str, Any]]:
    """On a copy (``CREATE DATABASE … TEMPLATE``) of the cached PostgreSQL 15 database (written the first time,
    by ``COPY``), served by a throwaway PostgreSQL server whose data directory is the cache."""
    import psycopg

    cache = CACHE.with_name(CACHE.name + "-postgresql")
    directory = cache / "deployment"
    with shared.postgres_server(cache / "pg") as server:
        url = shared.database(server, "dpcloak")
        if not (directory / "built").exists():
            t0 = time.perf_counter()
            build(directory, url)
            print(f"built {WINDOWS * SENSORS:,} reports by COPY in {time.perf_counter() - t0:.0f} s", flush=True)
        admin = server.replace("postgresql+psycopg", "postgresql") + "/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS run")
            t0 = time.perf_counter()
            conn.execute("CREATE DATABASE run TEMPLATE dpcloak")
            print(f"copied the database in {time.perf_counter() - t0:.0f} s", flush=True)
        with tempfile.TemporaryDirectory(prefix="dpcloak-bench-startup-") as work:
            run_dir = Path(work) / "deployment"
            shutil.copytree(directory, run_dir)
            try:
                return runs_on(run_dir, server + "/run")
            finally:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute("DROP DATABASE IF EXISTS run WITH (FORCE)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    backend = parser.parse_args().backend
    runs = sqlite_runs() if backend == "sqlite" else postgresql_runs()
    first, runs = runs[0], runs[1:]
    ready = [r["ready_s"] for r in runs]
    out = {"backend": backend, "reports": WINDOWS * SENSORS, "windows": WINDOWS, "first_start_without_mark": first,
           "runs": runs, "ready_median_s": round(statistics.median(ready), 3), "ready_max_s": round(max(ready), 3),
           "ready_cpu_max_s": max(r["ready_cpu_s"] for r in runs),
           "load_avg": round(os.getloadavg()[0], 2), "date": datetime.date.today().isoformat()}
    results = RESULTS if backend == "sqlite" else RESULTS.with_name(f"bench_startup_{backend}.json")
    results.parent.mkdir(exist_ok=True)
    results.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    print(f"goal ({backend}): ready within 5 s: {'yes' if out['ready_max_s'] <= 5.0 else 'NO'}")


if __name__ == "__main__":
    main()

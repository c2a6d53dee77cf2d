"""Shared pieces of the collector benchmarks (``bench_collector.py``, ``bench_soak.py``, ``bench_startup.py``,
``bench_dashboard.py``).

The 1,000-sensor floor the load benchmarks use (50 m x 40 m, 40 x 25 people counters), its readings (two
crowds of 30 people), the 40-sensor floor of the long-history benchmarks and the one builder of their
synthetic history (:func:`write_history`), the sensors' keys and signed report bodies, raw HTTP/1.1
request bytes, a free loopback port, and CPU accounting of the collector's processes from Linux ``/proc``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

SENSORS = 1000


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def floor_network() -> Any:
    """The benchmarks' deployment network: 1,000 counters on a 50 m x 40 m floor, a 1,000 x 130 model."""
    from dpcloak.service import _network

    return _network.floor_plan_network(width=50.0, height=40.0, sensor_cols=40, sensor_rows=25, epsilon=1.0,
                                       delta=1e-6, budget=(1e4, 1e-5), spacing=4.0, diffusion=8.0, move=4.0)


def forty_sensor_network() -> Any:
    """The long-history benchmarks' network: 40 people counters (8 x 5) on a 16 m x 10 m floor, 40 source cells."""
    from dpcloak.service import _network

    return _network.floor_plan_network(width=16.0, height=10.0, sensor_cols=8, sensor_rows=5, epsilon=1.0,
                                       delta=1e-6, budget=(1e4, 1e-5), spacing=2.0, diffusion=4.0, move=2.0,
                                       reading_high=200.0)


def write_history(directory: Path, deployment: Any, *, windows: range, open_windows: int = 0,
                  block: int = 5000, seed: int = 1, db_url: str | None = None) -> Path:
    """Write ``deployment`` to ``directory`` and a synthetic history into its database; returns ``collector.db``.

    Every window of ``windows`` gets every sensor's report (uniform values in [0, 20), received a second
    before the window's end), and every one but the last ``open_windows`` a closed-window record (a
    synthetic map, closed half a second after its end), as a collector that stopped before closing those
    would have left them. The collector's own schema (migrated), one transaction per ``block`` windows:
    into ``collector.db`` by sqlite3 ``executemany`` with ``synchronous=OFF`` (the WAL checkpointed at the
    end), or, with ``db_url`` (PostgreSQL), by ``COPY … FROM STDIN``.
    """
    from dpcloak.service.config import write_deployment
    from dpcloak.service.store import Store, sqlite_url

    write_deployment(directory, deployment)
    db = directory / "collector.db"
    store = Store(db_url or sqlite_url(db))
    store.migrate()
    store.register(deployment)
    store.dispose()
    rng = np.random.default_rng(seed)
    did, m, n_src = deployment.deployment_id, deployment.n_sensors, deployment.sensor_network.n_sources
    last_closed = windows[-1] - open_windows if len(windows) else -1
    blocks = (windows[start:start + block] for start in range(0, len(windows), block))

    def rows(ws: range) -> tuple[Any, Any]:
        values = rng.uniform(0, 20, (len(ws), m))
        closed = [w for w in ws if w <= last_closed]
        maps = rng.gamma(0.3, 4.0, (len(closed), n_src))
        return (((did, j, w, f"{w:x}-{j}", float(values[i, j]), deployment.window_end(w) - 1.0)
                 for i, w in enumerate(ws) for j in range(m)),
                ((did, w, deployment.window_end(w) + 0.5, json.dumps([round(float(x), 6) for x in row]), 1.2, 2.3,
                  json.dumps(list(range(m))), 0, 4.7, 1.0, 1e-6, 5.0, 1e-5, (w % 60) + 1, True, "converged")
                 for w, row in zip(closed, maps, strict=True)))

    if db_url is not None:
        import psycopg

        with psycopg.connect(db_url.replace("postgresql+psycopg", "postgresql")) as conn:
            for ws in blocks:
                reports, closed = rows(ws)
                with conn.cursor() as cur:
                    with cur.copy(f"COPY reports ({REPORT_COLUMNS}) FROM STDIN") as copy:
                        for row in reports:
                            copy.write_row(row)
                    with cur.copy(f"COPY windows ({WINDOW_COLUMNS}) FROM STDIN") as copy:
                        for row in closed:
                            copy.write_row(row)
                conn.commit()
        with psycopg.connect(db_url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        return db
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-400000")
        for ws in blocks:
            reports, closed = rows(ws)
            conn.executemany(f"INSERT INTO reports ({REPORT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", reports)
            conn.executemany(f"INSERT INTO windows ({WINDOW_COLUMNS}) VALUES "
                             "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", closed)
            conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


REPORT_COLUMNS = 'deployment_id, sensor_id, "window", report_id, value, received_at'
WINDOW_COLUMNS = ('deployment_id, "window", closed_at, source_map, uncertainty, uncertainty_90, reporting, missing, '
                  "sigma, epsilon_window, delta_window, epsilon_period, delta_period, releases_in_period, converged, "
                  "message")
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _pg_command(args: list[str]) -> list[str]:
    """Run as the ``postgres`` user when we are root (PostgreSQL refuses to run as root)."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextlib.contextmanager
def postgres_server(base: Path) -> Iterator[str]:
    """A PostgreSQL 15 server on 127.0.0.1 (a free port) whose data directory is ``base/data``: created by
    ``initdb`` unless it exists (a cache between benchmark runs); yields its URL (``postgresql+psycopg://``,
    no database). Stopped on exit. Also the service tests' server (``tests/service/conftest.py``)."""
    data, port = base / "data", free_port()
    base.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    if not (data / "PG_VERSION").exists():
        subprocess.run(_pg_command([str(PG_BIN / "initdb"), "-D", str(data), "-U", "dpcloak", "--auth=trust",
                                    "-E", "UTF8", "--no-sync"]), check=True, capture_output=True, timeout=120)
    subprocess.run(_pg_command([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w",
                                "-t", "60", "-o", f"-p {port} -k {base} -c listen_addresses=127.0.0.1", "start"]),
                   check=True, capture_output=True, timeout=120)
    try:
        yield f"postgresql+psycopg://dpcloak@127.0.0.1:{port}"
    finally:
        subprocess.run(_pg_command([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "60",
                                    "stop"]), capture_output=True, timeout=120)


def database(server: str, name: str) -> str:
    """The URL of database ``name`` on ``server`` (from :func:`postgres_server`), created if absent."""
    import psycopg

    with psycopg.connect(server.replace("postgresql+psycopg", "postgresql") + "/postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"


def crowd_readings(network: Any) -> np.ndarray:
    """Every sensor's true count with two crowds of 30 people."""
    f = np.zeros(network.n_sources)
    f[[5, network.n_sources // 2]] = 30.0
    return np.asarray(network.model.matvec(f), dtype=float)


def sensor_keys(directory: Path, deployment: Any) -> list[bytes]:
    """Each sensor's report key, derived from the master key written in ``directory``."""
    from dpcloak.service.config import load_master_key, sensor_key

    master = load_master_key(directory)
    return [sensor_key(master, deployment_id=deployment.deployment_id, sensor=j) for j in range(deployment.n_sensors)]


def report_body(key: bytes, deployment: Any, sensor: int, window: int, value: float) -> dict[str, Any]:
    """A sensor's signed report (JSON-ready), with a fresh report id."""
    from dpcloak.service.auth import sign_report

    dep_id, fp, rid = deployment.deployment_id, deployment.fingerprint, secrets.token_hex(16)
    mac = sign_report(key, deployment_id=dep_id, fingerprint=fp, sensor=sensor, window=window, report_id=rid,
                      value=value)
    return {"deployment": dep_id, "fingerprint": fp, "sensor": sensor, "key_id": sensor, "window": window,
            "report_id": rid, "value": value, "mac": mac}


def post_request(path: str, data: bytes, port: int) -> bytes:
    """The bytes of an HTTP/1.1 keep-alive POST of JSON ``data`` to ``path`` on 127.0.0.1."""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def stop(proc: Any, *, timeout: float = 30.0) -> None:
    """Terminate a server process and wait for it (killed after ``timeout`` seconds)."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


def children(pid: int) -> list[int]:
    """Child processes of ``pid`` (any of its threads)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(c) for c in (task / "children").read_text().split()]
    return out


def cpu_seconds(pid: int, *, descendants: bool = False) -> float:
    """User + system CPU seconds of a live process (all its threads) and, with ``descendants``, of all its
    live descendants (a descendant that exits meanwhile counts 0)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for child in children(pid) if descendants else ():
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += cpu_seconds(child, descendants=True)
    return total

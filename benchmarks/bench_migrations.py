"""How long the collector's SQLite schema upgrades take on a large history, and the disk they need.

A SQLite database at revision 0002 (the schema before the slot index) is filled with ``--reports``
reports (default 2,000,000: 40 sensors, 50,000 one-minute windows, about 35 days) and 50,000 closed
windows, written straight into the store's tables. Then each upgrade is timed as the collector runs it
(:meth:`dpcloak.service.store.Store.migrate`), with the database file's size before and its peak
(database + WAL, polled every 50 ms) during the upgrade:

* 0002 → 0003 replaces two unique constraints by the slot index. SQLite cannot drop a table's
  constraint in place: Alembic rebuilds the reports table (copy, drop, rename): **an offline step**
  whose time grows with the history (stop the collector; ``dpcloak serve`` runs it at start-up).
* 0003 → 0005 (security events table, the windows' closing-order index) and 0005 → 0006
  (``windows.outliers``, ``ALTER TABLE … ADD COLUMN``): no row of ``reports`` rewritten.

Results: ``benchmarks/results/bench_migrations.json``. Run:
``PYTHONPATH=src python benchmarks/bench_migrations.py [--reports N]`` (about a minute at 2,000,000 on an
idle 2-core machine: most of it writing the history).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "bench_migrations.json"
SENSORS = 40


def _size(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


def _timed_upgrade(store: Any, db: Path, revision: str) -> dict[str, float]:
    """Seconds to migrate to ``revision``, the size before and the peak size during it (MB)."""
    before, peak, done = _size(db), [_size(db)], threading.Event()

    def watch() -> None:
        while not done.is_set():
            with contextlib.suppress(FileNotFoundError):
                peak[0] = max(peak[0], _size(db))
            done.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    t0 = time.perf_counter()
    store.migrate(revision)
    seconds = time.perf_counter() - t0
    done.set()
    watcher.join()
    return {"seconds": round(seconds, 2), "size_before_mb": round(before / 1e6, 1),
            "peak_mb": round(max(peak[0], _size(db)) / 1e6, 1), "peak_over_before": round(peak[0] / before, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=2_000_000)
    args = parser.parse_args()
    from dpcloak.service.store import Store, sqlite_url

    windows = args.reports // SENSORS
    out: dict[str, Any] = {"reports": windows * SENSORS, "windows": windows,
                           "load_average": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "collector.db"
        store = Store(sqlite_url(db))
        store.migrate("0002")
        t0 = time.perf_counter()
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("INSERT INTO deployments (deployment_id, fingerprint, config, created_at) "
                         "VALUES ('bench', 'f', '{}', 0)")
            for first in range(0, windows, 5000):
                ws = range(first, min(first + 5000, windows))
                conn.executemany(
                    "INSERT INTO reports (deployment_id, sensor_id, window, report_id, value, received_at) "
                    "VALUES ('bench', ?, ?, ?, ?, ?)",
                    ((j, w, os.urandom(16).hex(), 1.5, 60.0 * w) for w in ws for j in range(SENSORS)))
                conn.executemany(
                    "INSERT INTO windows (deployment_id, window, closed_at, source_map, uncertainty, uncertainty_90, "
                    "reporting, missing, sigma, epsilon_window, delta_window, epsilon_period, delta_period, "
                    "releases_in_period, converged, message) VALUES ('bench', ?, ?, '[1.0]', 1, 2, '[]', 0, 4.7, "
                    "1, 1e-6, 5, 1e-5, 1, 1, 'converged')", ((w, 60.0 * w + 61) for w in ws))
                conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        out["write_history_seconds"] = round(time.perf_counter() - t0, 1)
        out["0002_to_0003_rebuild"] = _timed_upgrade(store, db, "0003")
        out["0003_to_0005"] = _timed_upgrade(store, db, "0005")
        out["0005_to_0006_add_column"] = _timed_upgrade(store, db, "0006")
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM reports").scalar_one() == windows * SENSORS
        store.dispose()
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

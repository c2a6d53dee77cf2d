"""Crash safety: SIGKILL the collector while 100 sensors send, restart it, let the retries drain.

Oracle: the sensors' ledgers (every acknowledged report) against the database after the run —
0 acknowledged reports lost, 0 duplicates — and SQLite's own ``PRAGMA integrity_check``.
Bounded: a fixed number of kills, every wait has a deadline, the collector is stopped at the end.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.ledger import LedgerEntry
from dpcloak.service.node import DeliveryError, SensorNode
from dpcloak.service.store import sqlite_url

from .conftest import CollectorProcess

KILLS = 5
WINDOWS = 5
SENSORS = 100


class Restarting:
    """A collector process on a fixed port that a killer thread SIGKILLs and restarts."""

    def __init__(self, directory: Path, db_url: str) -> None:
        self.directory, self.db_url = directory, db_url
        self.proc = CollectorProcess(directory, db_url, directory / "collector-0.log")
        self.kills = 0

    def kill_and_restart(self) -> None:
        self.proc.proc.send_signal(signal.SIGKILL)
        self.proc.proc.wait(timeout=30)
        self.proc.stop()
        self.kills += 1
        self.proc = CollectorProcess(self.directory, self.db_url, self.directory / f"collector-{self.kills}.log",
                                     port=self.proc.port)


def _sensor(directory: Path, url: str, sensor: int, stop: threading.Event) -> list[LedgerEntry]:
    node = SensorNode(deployment=load_deployment(directory),
                      credential=load_credential(directory / "sensors" / f"sensor-{sensor}.json"),
                      ledger=directory / f"ledger-{sensor}.db", url=url, attempts=30, backoff=0.05, timeout=5.0)
    try:
        for w in range(WINDOWS):
            entry = node.release(1.0 + sensor % 7, window=w)
            with contextlib.suppress(DeliveryError):  # stays pending; flushed below
                node.deliver(entry)
        deadline = time.monotonic() + 180
        while node.ledger.pending() and time.monotonic() < deadline and not stop.is_set():
            with contextlib.suppress(DeliveryError):
                node.flush()
        return node.ledger.all()
    finally:
        node.close()


@pytest.mark.slow
def test_sigkill_loses_no_acknowledged_report_sqlite(tmp_path: Path) -> None:
    from .conftest import make_deployment

    dep = make_deployment(tmp_path, sensor_rows=10, sensor_cols=10, width=20.0, height=20.0)
    assert dep.n_sensors == SENSORS
    db_path = tmp_path / "collector.db"
    collector = Restarting(tmp_path, sqlite_url(db_path))
    stop = threading.Event()
    try:
        with ThreadPoolExecutor(max_workers=10) as pool:
            futures = [pool.submit(_sensor, tmp_path, collector.proc.url, j, stop) for j in range(SENSORS)]
            while collector.kills < KILLS and not all(f.done() for f in futures):
                time.sleep(0.5)
                collector.kill_and_restart()
            ledgers = [f.result(timeout=600) for f in futures]
    finally:
        stop.set()
        collector.proc.stop()
    assert collector.kills >= 3, "the sensors finished before the collector could be killed a few times"
    acked = {(e.window, j, e.report_id, e.value) for j, entries in enumerate(ledgers) for e in entries
             if e.acknowledged}
    pending = [e for entries in ledgers for e in entries if not e.acknowledged]
    assert pending == []  # every release was eventually acknowledged
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        stored = db.execute("SELECT window, sensor_id, report_id, value FROM reports").fetchall()
    assert len(stored) == len(set(stored)) == len(acked) == SENSORS * WINDOWS
    assert set(stored) == acked

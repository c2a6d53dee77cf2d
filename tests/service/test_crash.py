"""Crash safety: SIGKILL the collector at random points while 100 sensors send, on SQLite and PostgreSQL.

Every sensor is a real :class:`~dpcloak.service.node.SensorNode` (its own write-ahead ledger, retries
with the same report id) sending one report per window every 0.5 s; the collector is a real
``dpcloak serve`` process (forked from a pre-imported parent, :mod:`._zygote`) killed with SIGKILL
``KILLS`` times (random uptimes between kills) and restarted on the same port. Then the sensors stop
releasing, their retries drain, the windows nobody completed are closed by the analyst, and the oracles
are checked:

* the sensors' ledgers against the database: 0 acknowledged reports lost, 0 duplicates, no report
  the sensors never released, every release eventually acknowledged;
* every window recovered exactly once, from exactly the sensors that released for it;
* the database's own checkers: SQLite ``PRAGMA integrity_check`` / ``foreign_key_check``,
  PostgreSQL ``amcheck`` on every index.

Bounded: a fixed number of kills (``DPCLOAK_CRASH_KILLS``, default 12; 21 before the suite-time cut, set it
higher for a longer run), every wait has a deadline. About 90 s per backend with 21 kills at load 2-7.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.ledger import LedgerEntry
from dpcloak.service.node import DeliveryError, SensorNode
from dpcloak.service.store import sqlite_url

from ._reliability import audit, fast_deployment, integrity_problems, stored_windows
from .conftest import CollectorProcess

KILLS = int(os.environ.get("DPCLOAK_CRASH_KILLS", "12"))
SENSORS = 100
PERIOD = 0.5
"""Seconds between two windows of one sensor."""


class Restarting:
    """A collector process on a fixed port that the test SIGKILLs and restarts."""

    def __init__(self, directory: Path, db_url: str) -> None:
        self.directory, self.db_url = directory, db_url
        self.proc = CollectorProcess(directory, db_url, directory / "collector-0.log")
        self.kills = 0
        self.children: list[str] = []

    def orphans(self) -> list[str]:
        """Children of killed collectors still running (after a few seconds' grace)."""
        deadline = time.monotonic() + 10
        while (alive := [c for c in self.children if Path(f"/proc/{c}").exists()]) and time.monotonic() < deadline:
            time.sleep(0.5)
        return alive

    def kill_and_restart(self) -> None:
        pid = self.proc.proc.pid
        with contextlib.suppress(OSError):  # its recovery process and resource tracker must die with it
            self.children += Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        self.proc.proc.send_signal(signal.SIGKILL)
        self.proc.proc.wait(timeout=30)
        self.proc.stop()
        self.kills += 1
        self.proc = CollectorProcess(self.directory, self.db_url, self.directory / f"collector-{self.kills}.log",
                                     port=self.proc.port)


def _sensor(directory: Path, url: str, sensor: int, stop: threading.Event, t0: float) -> list[LedgerEntry]:
    node = SensorNode(deployment=load_deployment(directory),
                      credential=load_credential(directory / "sensors" / f"sensor-{sensor}.json"),
                      ledger=directory / f"ledger-{sensor}.db", url=url, attempts=20, backoff=0.05, timeout=10.0)
    try:
        w = 0
        while not stop.is_set():
            entry = node.release(1.0 + sensor % 7, window=w)
            with contextlib.suppress(DeliveryError):  # stays pending; flushed below
                node.deliver(entry)
            w += 1
            time.sleep(max(0.0, t0 + w * PERIOD - time.monotonic()))
        deadline = time.monotonic() + 120
        while node.ledger.pending() and time.monotonic() < deadline:
            with contextlib.suppress(DeliveryError):
                node.flush()
            time.sleep(0.05)
        return node.ledger.all()
    finally:
        node.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sigkill_loses_no_acknowledged_report(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    dep = fast_deployment(tmp_path)
    assert dep.n_sensors == SENSORS
    db_url = sqlite_url(tmp_path / "collector.db") if backend == "sqlite" else request.getfixturevalue("postgres_url")
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    collector = Restarting(tmp_path, db_url)
    stop = threading.Event()
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=SENSORS) as pool:
            t0 = time.monotonic()
            futures = [pool.submit(_sensor, tmp_path, collector.proc.url, j, stop, t0) for j in range(SENSORS)]
            try:
                while collector.kills < KILLS:
                    time.sleep(rng.uniform(0.1, 1.5))  # a random point of the collector's life
                    collector.kill_and_restart()
            finally:
                stop.set()  # also on failure, so that the sensors stop and the pool can close
            ledgers = {j: f.result(timeout=300) for j, f in enumerate(futures)}
        released = {e.window for entries in ledgers.values() for e in entries}
        with collector.proc.analyst() as analyst:  # windows that some sensor never completed
            for w in sorted(released):
                assert analyst.post(f"/api/v1/windows/{w}/close").status_code == 200
            deadline = time.monotonic() + 60
            while len(analyst.get("/api/v1/windows").json()["windows"]) < len(released):
                assert time.monotonic() < deadline, "windows not all recovered within 60 s"
                time.sleep(0.2)
            log = "".join((tmp_path / f"collector-{k}.log").read_text() for k in range(collector.kills + 1))
    finally:
        stop.set()
        collector.proc.stop()
    counts = audit(db_url, ledgers)
    elapsed = time.monotonic() - started
    print(f"\n{backend}: {collector.kills} SIGKILLs, {SENSORS} sensors, {len(released)} windows, {counts}, "
          f"{elapsed:.0f} s, load {os.getloadavg()[0]:.1f}")
    assert collector.kills == KILLS
    assert counts["lost"] == counts["duplicates"] == counts["unknown"] == counts["pending"] == 0
    assert counts["stored"] == counts["acknowledged"] == counts["released"] >= SENSORS * KILLS // 2
    windows = stored_windows(db_url)
    assert [w for w, _ in windows] == sorted(released)  # each window recovered exactly once
    for w, reporting in windows:
        assert reporting == sorted(j for j, entries in ledgers.items() if any(e.window == w for e in entries))
    assert integrity_problems(db_url) == []
    assert "Traceback" not in log
    assert collector.orphans() == []  # no recovery process outlived its collector


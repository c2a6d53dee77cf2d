"""Storage at start-up: collectors starting together, and the history a database is expected to hold.

Oracles: the database's own catalogue (Alembic's version table, the tables present), the exceptions
raised in each starter, and the stored rows.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpcloak.service.store import Store, sqlite_url

from .conftest import make_deployment

TRIALS = 5


def _start_together(url: str, deployment: Any, n: int = 2) -> list[BaseException | None]:
    """``n`` collectors' start-up (migrate, register) released at the same instant; each one's exception."""
    barrier = threading.Barrier(n)
    errors: list[BaseException | None] = [None] * n

    def start(i: int) -> None:
        store = Store(url)
        try:
            barrier.wait(timeout=30)
            store.migrate()
            store.register(deployment)
        except BaseException as exc:
            errors[i] = exc
        finally:
            store.dispose()

    threads = [threading.Thread(target=start, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    return errors


def _fresh_database(server: str) -> str:
    import psycopg

    name = "t" + uuid.uuid4().hex[:12]
    with psycopg.connect(server.replace("postgresql+psycopg", "postgresql") + "/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"


def test_two_collectors_start_together_on_an_empty_postgresql_database(postgres_server: str,
                                                                      tmp_path: Path) -> None:
    """Issue 33 item 4: both come up, every time (one of them crashed in 3 of 5 trials)."""
    deployment = make_deployment(tmp_path, sensor_rows=1, sensor_cols=3)
    for _ in range(TRIALS):
        url = _fresh_database(postgres_server)
        assert _start_together(url, deployment) == [None, None]
        store = Store(url)
        assert store.window_count(deployment.deployment_id) == 0 and store.report_counts(deployment.deployment_id) == {}
        store.dispose()


def test_two_collectors_start_together_on_an_empty_sqlite_database(tmp_path: Path) -> None:
    deployment = make_deployment(tmp_path, sensor_rows=1, sensor_cols=3)
    for trial in range(TRIALS):
        assert _start_together(sqlite_url(tmp_path / f"c{trial}.db"), deployment) == [None, None]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_last_windows_read_backwards_match_brute_force_and_stop_early(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    """Each sensor's last window from ``first_window`` on, read backwards in doubling spans (``n_sensors``),
    equals the brute-force maximum over the stored reports and the one-query answer, with sensors gone
    silent at different depths; and when every sensor reported in the newest windows, the older windows are
    not read at all (told there are 3 sensors, a sensor seen only further back is not found)."""
    url = sqlite_url(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("postgres_url")
    dep = make_deployment(tmp_path, sensor_rows=2, sensor_cols=3)
    store = Store(url)
    store.migrate()
    store.register(dep)
    did = dep.deployment_id
    rng = np.random.default_rng(5)
    silent_since = {0: 300, 1: 295, 2: 250, 3: 100, 4: 0, 5: 300}  # sensor 4 never reports
    rows = [{"deployment_id": did, "sensor_id": j, "window": w, "report_id": f"{w}-{j}", "value": 1.0,
             "received_at": float(w)}
            for w in range(300) for j in range(6) if w < silent_since[j] and rng.random() < 0.7]
    store.insert_reports(rows)
    try:
        for first in (0, 90, 120, 260, 299, 400):
            brute: dict[int, int] = {}
            for r in rows:
                if r["window"] >= first:
                    brute[r["sensor_id"]] = max(brute.get(r["sensor_id"], -1), r["window"])
            assert store.last_windows(did, first_window=first, n_sensors=6) == brute, first
            assert store.last_windows(did, first_window=first) == brute, first
        # bounded: once n_sensors are found the scan stops. Sensors 0, 1 and 5 reported in the newest span
        # (windows 284 on); told there are 3 sensors, the scan does not reach sensor 2's reports (to window 249)
        recent = store.last_windows(did, first_window=284)
        assert sorted(recent) == [0, 1, 5]
        assert store.last_windows(did, first_window=0, n_sensors=3) == recent
        assert 2 in store.last_windows(did, first_window=0)
    finally:
        store.dispose()

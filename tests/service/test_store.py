"""Storage at start-up: collectors starting together, and the history a database is expected to hold.

Oracles: the database's own catalogue (Alembic's version table, the tables present), the exceptions
raised in each starter, and the stored rows.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

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

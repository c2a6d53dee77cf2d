"""``dpcloak._files``: owner-only files (the collector's database, a sensor's ledger, the keys).

Oracle: ``os.stat`` of every file after the library opened or wrote it (with a umask that would give 0644).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy", reason="the service extra is not installed: pip install 'dpcloak[service]'")

from dpcloak.privacy.ledger import Ledger
from dpcloak.service.config import load_master_key
from dpcloak.service.examples import two_sensor_deployment
from dpcloak.service.store import Store, sqlite_url


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)  # what a service usually runs with: new files 0644
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_new_database_and_its_wal_files_are_0600(tmp_path: Path, open_umask: None) -> None:
    store = Store(sqlite_url(tmp_path / "collector.db"))
    store.migrate()
    store.register(two_sensor_deployment())
    files = sorted(tmp_path.glob("collector.db*"))
    assert {p.name for p in files} >= {"collector.db", "collector.db-wal", "collector.db-shm"}
    assert {p.name: _mode(p) for p in files} == {p.name: 0o600 for p in files}
    store.dispose()
    (tmp_path / "plain.db").touch()  # the oracle's side: without the library, the umask gives 0644
    assert _mode(tmp_path / "plain.db") == 0o644


def test_existing_0644_database_is_made_0600(tmp_path: Path, open_umask: None) -> None:
    first = Store(sqlite_url(tmp_path / "collector.db"))
    first.migrate()
    first.dispose()
    for p in tmp_path.glob("collector.db*"):
        p.chmod(0o644)
    again = Store(sqlite_url(tmp_path / "collector.db"))
    again.register(two_sensor_deployment())
    assert {p.name: _mode(p) for p in tmp_path.glob("collector.db*")} == {
        p.name: 0o600 for p in tmp_path.glob("collector.db*")}
    again.dispose()


def test_ledger_is_0600_new_or_existing(tmp_path: Path, open_umask: None) -> None:
    ledger = Ledger(tmp_path / "ledger.db", key=bytes(32), binding={"sensor": 0})
    ledger.close()
    files = list(tmp_path.glob("ledger.db*"))
    assert files and all(_mode(p) == 0o600 for p in files)
    for p in files:
        p.chmod(0o644)  # copied in from a backup
    Ledger(tmp_path / "ledger.db", key=bytes(32), binding={"sensor": 0}).close()
    assert all(_mode(p) == 0o600 for p in tmp_path.glob("ledger.db*"))


def test_collector_key_copied_in_with_0644_is_made_0600(tmp_path: Path, open_umask: None) -> None:
    from dpcloak.service.config import write_deployment

    write_deployment(tmp_path, two_sensor_deployment(), master_key=bytes(range(32)))
    key = tmp_path / "collector.key"
    assert _mode(key) == 0o600 and _mode(tmp_path / "analyst.token") == 0o600
    key.chmod(0o644)  # e.g. restored from a backup or copied with cp
    assert load_master_key(tmp_path) == bytes(range(32))
    assert _mode(key) == 0o600

"""Schema migration, storage durability settings, report MACs and the deployment's fingerprint.

Oracles: Alembic's own schema comparison (migration vs. the tables), SQLite's PRAGMA answers,
an independent HMAC computation over the documented canonical string, the defining inequality of
the release count that fits the budget, the direct count of the windows holding stored reports.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import time
from pathlib import Path

import pytest
from alembic.migration import MigrationContext
from sqlalchemy import event, text

from dpcloak.errors import InvalidParameterError
from dpcloak.service.auth import KeyedVerifier, sign_report, verify_report
from dpcloak.service.config import Deployment, load_deployment
from dpcloak.service.schema import metadata
from dpcloak.service.store import Store, sqlite_url


def _migrated(url: str) -> Store:
    store = Store(url)
    store.migrate()
    return store


def _schema_diff(store: Store) -> list[object]:
    from alembic.autogenerate import compare_metadata

    with store.engine.connect() as conn:
        return list(compare_metadata(MigrationContext.configure(conn), metadata))


def test_migration_creates_exactly_the_tables_sqlite(tmp_path: Path) -> None:
    store = _migrated(sqlite_url(tmp_path / "m.db"))
    assert _schema_diff(store) == []
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL: fsync at every commit
    store.migrate()  # idempotent
    store.dispose()


def test_migration_creates_exactly_the_tables_postgresql(postgres_url: str) -> None:
    store = _migrated(postgres_url)
    assert _schema_diff(store) == []
    store.dispose()


def _upgrade_from_0001(url: str) -> None:
    """A database at revision 0001 holding reports upgrades to head: rows kept, the window index added and
    used for the per-window reads, and the schema then equal to the tables."""
    from sqlalchemy import inspect

    from dpcloak.service.schema import WINDOW_INDEX, deployments

    store = Store(url)
    store.migrate("0001")
    with store.engine.connect() as conn:
        assert WINDOW_INDEX not in {ix["name"] for ix in inspect(conn).get_indexes("reports")}
    with store.engine.begin() as conn:
        conn.execute(deployments.insert().values(deployment_id="d", fingerprint="f", config="{}", created_at=0.0))
    rows = [{"deployment_id": "d", "sensor_id": s, "window": w, "report_id": f"{w}-{s}", "value": float(s),
             "received_at": 0.0} for w in range(4) for s in range(3) if (s, w) != (2, 3)]
    assert len(store.insert_reports(rows)) == len(rows)
    store.migrate()
    with store.engine.connect() as conn:
        assert WINDOW_INDEX in {ix["name"] for ix in inspect(conn).get_indexes("reports")}
    assert _schema_diff(store) == []
    assert store.window_readings("d", 3) == [(0, 0.0), (1, 1.0)]
    assert store.windows_with_reports("d", first_window=1, last_window=3) == [1, 2, 3]
    assert store.windows_with_reports("d", first_window=3, last_window=3) == [3]
    assert store.windows_with_reports("d", first_window=5, last_window=9) == []
    if store.dialect == "sqlite":  # the store's own query reads the range through the window index
        seen: list[tuple[str, object]] = []

        def record(_conn: object, _cur: object, statement: str, params: object, *_: object) -> None:
            seen.append((statement, params))

        event.listen(store.engine, "before_cursor_execute", record)
        store.windows_with_reports("d", first_window=1, last_window=3)
        event.remove(store.engine, "before_cursor_execute", record)
        with store.engine.connect() as conn:
            plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + seen[-1][0],
                                                                     seen[-1][1]))  # type: ignore[arg-type]
        assert WINDOW_INDEX in plan and "autoindex" not in plan, plan
    store.dispose()


def test_migration_upgrades_from_0001_sqlite(tmp_path: Path) -> None:
    _upgrade_from_0001(sqlite_url(tmp_path / "old.db"))


def test_migration_upgrades_from_0001_postgresql(postgres_url: str) -> None:
    _upgrade_from_0001(postgres_url)


def _upgrade_from_0006(url: str) -> None:
    """A database at 0006 holding a closed window upgrades to 0007: the window is kept, of unknown status (its
    columns NULL, said "n/a" and not "not stated"), a window closed after it keeps its status, misfit, residual
    and radius, and the schema then equals the tables; the downgrade drops the four columns again."""
    from sqlalchemy import inspect

    from dpcloak.service.schema import deployments
    from dpcloak.service.store import WindowRecord

    store = Store(url)
    store.migrate("0006")
    old = {"window": 0, "closed_at": 1.0, "source_map": [1.0, 2.0], "uncertainty": None, "uncertainty_90": None,
           "reporting": [0, 1], "missing": 0, "sigma": 3.0, "epsilon_window": 1.0, "delta_window": 1e-6,
           "epsilon_period": 1.0, "delta_period": 1e-6, "releases_in_period": 1, "converged": True, "message": "ok"}
    with store.engine.begin() as conn:
        conn.execute(deployments.insert().values(deployment_id="d", fingerprint="f", config="{}", created_at=0.0))
        conn.execute(text("INSERT INTO windows (deployment_id, \"window\", closed_at, source_map, uncertainty, "
                          "uncertainty_90, reporting, missing, sigma, epsilon_window, delta_window, epsilon_period, "
                          "delta_period, releases_in_period, converged, message) VALUES ('d', 0, 1.0, '[1.0, 2.0]', "
                          "NULL, NULL, '[0, 1]', 0, 3.0, 1.0, 1e-6, 1.0, 1e-6, 1, :yes, 'ok')"), {"yes": True})
    store.migrate()
    assert _schema_diff(store) == []
    new = WindowRecord(**{**old, "window": 1, "closed_at": 2.0}, status="least-residual", misfit=0.25,
                       residual=1333.0, radius=1.96)
    assert store.save_window("d", new)
    before, after = list(store.windows("d"))
    assert before == WindowRecord(**old) and before.as_dict()["uncertainty_text"] == "n/a"
    assert (before.status, before.misfit, before.residual, before.radius) == (None, None, None, None)
    assert after == new and after.as_dict()["uncertainty_text"] == "not stated: model misfit 25 %"
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", "dpcloak.service:migrations")
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0006")
    with store.engine.connect() as conn:
        kept = {c["name"] for c in inspect(conn).get_columns("windows")}
    assert kept.isdisjoint({"status", "misfit", "residual", "radius"}) and "outliers" in kept
    store.dispose()


def test_migration_upgrades_from_0006_sqlite(tmp_path: Path) -> None:
    _upgrade_from_0006(sqlite_url(tmp_path / "old6.db"))


def test_migration_upgrades_from_0006_postgresql(postgres_url: str) -> None:
    _upgrade_from_0006(postgres_url)


def _charged(store: Store, did: str, window: int, span: int) -> int:
    """The oracle: windows among ``window − span + 1 … window`` holding a report, from every stored report."""
    return len({r.window for r in store.all_reports(did) if window - span < r.window <= window})


def test_policy_releases_equal_the_count_over_the_sliding_window(tmp_path: Path,
                                                                 deployment_dir: tuple[Path, Deployment]) -> None:
    """The incremental count equals the direct count over every stored report (the oracle), with windows
    closed out of order, windows nobody reported for, late reports to open windows and a restart."""
    import numpy as np

    from dpcloak.service.windows import PolicyReleases

    dep = dataclasses.replace(deployment_dir[1], period_windows=6, policy_releases=None)
    store = _migrated(sqlite_url(tmp_path / "p.db"))
    store.register(dep)
    rng = np.random.default_rng(7)
    m, did = dep.n_sensors, dep.deployment_id

    def put(window: int, sensors: np.ndarray) -> None:
        store.insert_reports([{"deployment_id": did, "sensor_id": int(j), "window": window,
                               "report_id": f"{window}-{j}", "value": 0.0, "received_at": 0.0} for j in sensors])

    order = [0, 1, 3, 2, 4, 7, 6, 8, 9, 11, 10, 13, 14, 20]  # 5, 12, 15-19 stay empty; 3 closes before 2
    for w in order:
        put(w, rng.choice(m, size=int(rng.integers(1, m)), replace=False))
    tracker = PolicyReleases(dep, store, closed=())
    closed: list[int] = []
    for i, w in enumerate(order):
        if i == 6:  # a restart: a new tracker that knows the windows closed so far
            tracker = PolicyReleases(dep, store, closed=closed)
        if w + 1 not in closed and w + 1 not in (5, 12):  # a late report to the next window, still open
            put(w + 1, np.array([m - 1]))
        assert tracker.releases(w, final_below=max(0, max(closed, default=0) - 1)) == _charged(store, did, w, 6), w
        tracker.closed(w)
        closed.append(w)
    store.dispose()


def _releases_past_empty_windows(tmp_path: Path, dep: Deployment, final_lag: int | None,
                                 weakened: bool = False) -> tuple[int, int]:
    """Closes windows 5-59 in order, as the collector does, and returns (windows the tracker read, windows held).

    Windows 0-4 are empty (sensors switched on late), 20 and 35 too, and window 20 gets a late first
    report while still in grace (closed after 22). Windows more than ``final_lag`` behind the latest
    closed one are past grace (``None``: the tracker is not told). Every count is checked against the
    oracle, the direct count over the stored reports. ``weakened``: the tracker caches nothing (every
    earlier window read again at every close).
    """
    import numpy as np

    from dpcloak.service.windows import PolicyReleases

    store = _migrated(sqlite_url(tmp_path / f"q-{final_lag}-{weakened}.db"))
    store.register(dep)
    rng = np.random.default_rng(11)
    m, did = dep.n_sensors, dep.deployment_id

    def put(window: int, sensors: np.ndarray, tag: str = "") -> None:
        store.insert_reports([{"deployment_id": did, "sensor_id": int(j), "window": window,
                               "report_id": f"{window}-{j}{tag}", "value": 0.0, "received_at": 0.0}
                              for j in sensors])

    for w in range(5, 60):
        if w not in (20, 35):
            put(w, rng.choice(m, size=int(rng.integers(1, m)), replace=False))
    direct = store.windows_with_reports
    read = 0

    def counting(deployment_id: str, *, first_window: int, last_window: int) -> list[int]:
        nonlocal read
        out = direct(deployment_id, first_window=first_window, last_window=last_window)
        read += len(out)
        return out

    store.windows_with_reports = counting  # type: ignore[method-assign]
    tracker = PolicyReleases(dep, store, closed=())
    order = [w for w in range(5, 60) if w not in (20, 35)]
    order.insert(order.index(22) + 1, 20)
    latest = 0
    for w in order:
        latest = max(latest, w)
        if w == 22:
            put(20, np.array([0]), "late")
        final_below = None if final_lag is None or weakened else latest - final_lag
        if weakened:
            tracker = PolicyReleases(dep, store, closed=())
        assert tracker.releases(w, final_below=final_below) == _charged(store, did, w, dep.period_windows), w
        tracker.closed(w)
    held = len(direct(did, first_window=0, last_window=59))
    store.dispose()
    return read, held


@pytest.mark.parametrize("final_lag", [2, None])
def test_policy_releases_read_each_window_about_once(
        tmp_path: Path, deployment_dir: tuple[Path, Deployment], final_lag: int | None) -> None:
    """Closed windows are never read again, final ones once: the tracker reads only the windows that were holes.

    Both sides: a tracker that caches nothing rereads the sliding window at every close."""
    dep = dataclasses.replace(deployment_dir[1], period_windows=800, policy_releases=None)
    read, held = _releases_past_empty_windows(tmp_path, dep, final_lag)
    assert read <= 2  # measured: 1 window read (window 20, a hole until its late report) for 54 held
    read_weak, _ = _releases_past_empty_windows(tmp_path, dep, final_lag, weakened=True)
    assert read_weak > 10 * held


def test_unreachable_database_is_a_clear_error() -> None:
    with pytest.raises(InvalidParameterError, match="must be sqlite or postgresql"):
        Store("mysql://x@127.0.0.1/db")
    with pytest.raises(InvalidParameterError, match="SQLAlchemy URL"):
        Store("not a url")


def test_mac_is_hmac_sha256_of_the_documented_encoding() -> None:
    key = bytes(range(32))
    fields = {"deployment_id": "abc123", "fingerprint": "f" * 64, "sensor": 7, "window": 42,
              "report_id": "0123456789abcdef", "value": 0.1}
    msg = f"dpcloak-report/v1\nabc123\n{'f' * 64}\n7\n42\n0123456789abcdef\n{(0.1).hex()}".encode()
    expected = hmac.new(key, msg, hashlib.sha256).hexdigest()
    assert sign_report(key, **fields) == expected
    assert verify_report(key, expected, **fields)
    keyed = KeyedVerifier([bytes(32), key])  # the collector's verifier: each key keyed once, reused
    for _ in range(2):
        assert keyed.verify(1, expected, **fields) and keyed.verify(1, expected.upper(), **fields)
    assert not keyed.verify(0, expected, **fields)
    for name, other in (("deployment_id", "abc124"), ("fingerprint", "e" * 64), ("sensor", 8), ("window", 43),
                        ("report_id", "0123456789abcdee"), ("value", 0.1 + 2**-55)):
        assert not verify_report(key, expected, **{**fields, name: other}), name
        assert not keyed.verify(1, expected, **{**fields, name: other}), name
    assert not verify_report(bytes(32), expected, **fields)


def test_fingerprint_binds_every_privacy_parameter(deployment_dir: tuple[Path, Deployment]) -> None:
    directory, dep = deployment_dir
    assert load_deployment(directory).fingerprint == dep.fingerprint  # stable through the file
    for change in ({"window_seconds": 2.0}, {"period_windows": 900}, {"policy_releases": 5},
                   {"lifetime_releases": 10**6}, {"clock_skew_seconds": 0.5}, {"start": dep.start + 1}):
        assert dataclasses.replace(dep, **change).fingerprint != dep.fingerprint, change
    assert dataclasses.replace(dep, deployment_id="other1").fingerprint == dep.fingerprint


def test_releases_per_period_fit_the_budget(deployment_dir: tuple[Path, Deployment]) -> None:
    _, dep = deployment_dir
    net = dep.sensor_network
    long = dataclasses.replace(dep, period_windows=10**6, policy_releases=None)
    k = long.policy_releases  # the budget binds: the largest count that fits
    assert k is not None and long.releases_per_period <= k
    assert dep.guarantee(k)[0] <= net.budget[0] < dep.guarantee(k + 1)[0]
    assert dep.releases_per_period == min(dep.period_windows, k)
    assert dataclasses.replace(dep, period_windows=3, policy_releases=None).releases_per_period == 3  # W binds


def test_existing_deployment_directory_is_not_overwritten(deployment_dir: tuple[Path, Deployment]) -> None:
    from dpcloak.service.config import write_deployment

    directory, dep = deployment_dir
    with pytest.raises(InvalidParameterError, match="already holds a deployment"):
        write_deployment(directory, Deployment.create(network=dep.sensor_network, window_seconds=1.0,
                                                      period_windows=10, start=time.time()))
    assert (directory / "collector.key").stat().st_mode & 0o077 == 0

"""Helpers of the reliability tests: a fast-recovering deployment, signed reports, database audits.

The audits are the oracles of the crash, scale-out and overload tests: they read the database
directly (sqlite3 / psycopg), not through the collector.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any

from dpcloak.service import _network
from dpcloak.service.auth import sign_report
from dpcloak.service.config import Deployment, load_master_key, sensor_key, write_deployment


def fast_deployment(directory: Path, *, cols: int = 10, rows: int = 10, window_seconds: float = 1.0,
                    past_windows: int = 2000, grace_seconds: float = 3600.0) -> Deployment:
    """``cols x rows`` people counters on a 20 m x 20 m floor with sources every 4 m (recovery in ~0.1 s).

    Window 0 started ``past_windows`` windows ago, so a test may use windows ``0 … past_windows``;
    the long grace period means a window closes when every sensor reported or the analyst closes it.
    """
    net = _network.floor_plan_network(width=20.0, height=20.0, sensor_cols=cols, sensor_rows=rows, epsilon=1.0,
                                      delta=1e-6, budget=(1e4, 1e-5), spacing=4.0, diffusion=8.0, move=4.0,
                                      reading_high=100.0)
    # W = the releases the budget allows: every window is a release window
    dep = Deployment.create(network=net, window_seconds=window_seconds, period_windows=net.max_releases(),
                            start=time.time() - past_windows * window_seconds, grace_seconds=grace_seconds)
    write_deployment(directory, dep)
    return dep


class Signer:
    """Signs reports of any sensor of a deployment directory (what the sensors would send)."""

    def __init__(self, directory: Path, deployment: Deployment) -> None:
        self.dep = deployment
        master = load_master_key(directory)
        self.keys = [sensor_key(master, deployment_id=deployment.deployment_id, sensor=j)
                     for j in range(deployment.n_sensors)]
        self.step = _network.grid_step(deployment.sensor_network)

    def report(self, sensor: int, window: int, *, cells: int = 0, report_id: str | None = None) -> dict[str, Any]:
        """A valid report of ``sensor`` for ``window`` whose value is ``cells`` grid steps."""
        value = float(cells * self.step)
        rid = report_id or secrets.token_hex(16)
        mac = sign_report(self.keys[sensor], deployment_id=self.dep.deployment_id, fingerprint=self.dep.fingerprint,
                          sensor=sensor, window=window, report_id=rid, value=value)
        return {"deployment": self.dep.deployment_id, "fingerprint": self.dep.fingerprint, "sensor": sensor,
                "key_id": sensor, "window": window, "report_id": rid, "value": value, "mac": mac}


def _psycopg_url(db_url: str) -> str:
    return db_url.replace("postgresql+psycopg", "postgresql")


def stored_reports(db_url: str) -> list[tuple[int, int, str, float]]:
    """Every stored report as (window, sensor, report id, value)."""
    sql = "SELECT \"window\", sensor_id, report_id, value FROM reports"
    if db_url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(db_url.removeprefix("sqlite:///"))) as db:
            return [(int(w), int(s), str(r), float(v)) for w, s, r, v in db.execute(sql)]
    import psycopg

    with psycopg.connect(_psycopg_url(db_url)) as conn:
        return [(int(w), int(s), str(r), float(v)) for w, s, r, v in conn.execute(sql)]


def stored_windows(db_url: str) -> list[tuple[int, list[int]]]:
    """Every stored window as (window, reporting sensors), one entry per row."""
    import json

    sql = "SELECT \"window\", reporting FROM windows ORDER BY \"window\""
    if db_url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(db_url.removeprefix("sqlite:///"))) as db:
            return [(int(w), list(json.loads(r))) for w, r in db.execute(sql)]
    import psycopg

    with psycopg.connect(_psycopg_url(db_url)) as conn:
        return [(int(w), list(r if isinstance(r, list) else json.loads(r))) for w, r in conn.execute(sql)]


def integrity_problems(db_url: str) -> list[str]:
    """What the database's own checkers report (empty when healthy).

    SQLite: ``PRAGMA integrity_check`` and ``PRAGMA foreign_key_check``. PostgreSQL: ``amcheck``'s
    ``bt_index_check`` with ``heapallindexed`` on every index of the service's tables (the B-trees and
    that every heap tuple is indexed), plus the foreign keys re-checked by query.
    """
    problems: list[str] = []
    if db_url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(db_url.removeprefix("sqlite:///"))) as db:
            rows = [r[0] for r in db.execute("PRAGMA integrity_check")]
            if rows != ["ok"]:
                problems += rows
            problems += [f"foreign key: {r}" for r in db.execute("PRAGMA foreign_key_check")]
        return problems
    import psycopg

    with psycopg.connect(_psycopg_url(db_url), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        indexes = conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t "
            "ON t.oid = i.indrelid WHERE t.relname IN ('reports', 'windows', 'sensors', 'deployments')").fetchall()
        if not indexes:
            problems.append("no index found on the service's tables")
        for (name,) in indexes:
            try:
                conn.execute("SELECT bt_index_check(%s::regclass, true)", (name,))
            except psycopg.Error as exc:
                problems.append(f"index {name}: {exc}")
        orphans = conn.execute("SELECT count(*) FROM reports r LEFT JOIN deployments d "
                               "ON d.deployment_id = r.deployment_id WHERE d.deployment_id IS NULL").fetchone()
        if orphans and orphans[0]:
            problems.append(f"{orphans[0]} reports without their deployment")
    return problems


def audit(db_url: str, ledgers: dict[int, list[Any]]) -> dict[str, int]:
    """Compare the sensors' ledgers with the database: counts of acknowledged, lost, duplicate, unknown rows.

    ``ledgers`` maps a sensor id to its :class:`~dpcloak.service.ledger.LedgerEntry` list.
    """
    acked = {(e.window, j, e.report_id, e.value) for j, entries in ledgers.items() for e in entries if e.acknowledged}
    released = {(e.window, j, e.report_id, e.value) for j, entries in ledgers.items() for e in entries}
    stored = stored_reports(db_url)
    slots = [(w, s) for w, s, _, _ in stored]
    return {"acknowledged": len(acked), "released": len(released), "stored": len(stored),
            "lost": len(acked - set(stored)), "duplicates": len(stored) - len(set(slots)),
            "unknown": len(set(stored) - released), "pending": len(released) - len(acked)}

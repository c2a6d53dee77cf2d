"""The collector's in-memory state stays bounded over a long deployment (months of windows).

Before: ``counts`` kept every window ever reported and ``closed`` every window ever recovered,
and each closing tick scanned all of them — after a month of 1 s windows, 2.6 million entries
four times a second. Oracle: the deployment's clock arithmetic (a window whose grace period is
over is refused by the verifier whatever the collector remembers) and the database.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

from dpcloak.service import _network
from dpcloak.service.auth import sign_report
from dpcloak.service.collector import Collector
from dpcloak.service.config import Deployment, sensor_key, write_deployment
from dpcloak.service.ingest import ReportIn
from dpcloak.service.store import Store, sqlite_url

WINDOWS, GRACE = 30, 5.0


def _report(dep: Deployment, master: bytes, sensor: int, window: int) -> ReportIn:
    value = float(dep.sensor_network.privatize_reading(sensor, 1.0))
    rid = secrets.token_hex(16)
    mac = sign_report(sensor_key(master, deployment_id=dep.deployment_id, sensor=sensor),
                      deployment_id=dep.deployment_id, fingerprint=dep.fingerprint, sensor=sensor, window=window,
                      report_id=rid, value=value)
    return ReportIn(deployment=dep.deployment_id, fingerprint=dep.fingerprint, sensor=sensor, key_id=sensor,
                    window=window, report_id=rid, value=value, mac=mac)


def test_closed_windows_leave_memory_and_stay_refused(tmp_path: Path) -> None:
    net = _network.floor_plan_network(width=12.0, height=8.0, sensor_cols=3, sensor_rows=2, epsilon=1.0,
                                      delta=1e-6, budget=(50.0, 1e-5), reading_high=100.0)
    dep = Deployment.create(network=net, window_seconds=1.0, period_windows=10, start=0.0, grace_seconds=GRACE)
    master = secrets.token_bytes(32)
    write_deployment(tmp_path, dep, master_key=master)
    store = Store(sqlite_url(tmp_path / "collector.db"))
    now = [0.5]
    collector = Collector(dep, store, master_key=master, clock=lambda: now[0], close_interval=3600.0)
    kept: dict[int, ReportIn] = {}

    async def run() -> list[tuple[int, dict[str, Any]]]:
        await collector.start()
        try:
            for w in range(WINDOWS):
                now[0] = w + 0.5
                reports = [_report(dep, master, j, w) for j in range(dep.n_sensors) if (j, w) != (5, 3)]
                assert all(status == 201 for status, _ in await collector.ingest(reports))
                kept[w] = reports[0]
                await collector.close_due()
                assert len(collector.counts) <= GRACE + 1 and len(collector.closed) <= GRACE + 2
            now[0] = WINDOWS + GRACE + 1.0
            await collector.close_due()
            late = [kept[3], _report(dep, master, 5, 3)]  # a lost acknowledgement's retry; a new report
            return await collector.ingest(late)
        finally:
            await collector.stop()

    (retry_status, retry_body), (new_status, new_body) = asyncio.run(run())
    assert collector.counts == {} and collector.closed == set()
    assert store.closed_windows(dep.deployment_id) == list(range(WINDOWS))  # window 3 closed by its grace
    assert (retry_status, retry_body["status"]) == (200, "duplicate")
    assert (new_status, new_body["error"]) == (409, "window_closed")
    assert store.report_counts(dep.deployment_id, unclosed=True) == {}
    assert sum(store.report_counts(dep.deployment_id).values()) == WINDOWS * dep.n_sensors - 1
    store.dispose()


def test_a_restart_reads_reports_from_the_stored_mark_only(tmp_path: Path) -> None:
    """The closer stores the window below which every window holding reports is closed (closing first what
    another collector left open there); a restart counts open windows' reports from it, not from the start.

    Oracle: the deployment's clock arithmetic for the mark (the window whose grace period ended
    ``CLOSED_BELOW_MARGIN`` seconds ago) and the rows written straight into the database."""
    from dpcloak.service.collector import CLOSED_BELOW_MARGIN

    net = _network.floor_plan_network(width=8.0, height=4.0, sensor_cols=2, sensor_rows=1, epsilon=1.0,
                                      delta=1e-6, budget=(50.0, 1e-5), reading_high=100.0)
    dep = Deployment.create(network=net, window_seconds=1.0, period_windows=10, start=0.0, grace_seconds=GRACE)
    master = secrets.token_bytes(32)
    write_deployment(tmp_path, dep, master_key=master)
    store = Store(sqlite_url(tmp_path / "collector.db"))

    def written(window: int) -> None:  # every sensor's report, stored by another collector that then stopped
        store.insert_reports([{"deployment_id": dep.deployment_id, "sensor_id": j, "window": window,
                               "report_id": f"r-{window}-{j}", "value": 1.0, "received_at": window + 0.5}
                              for j in range(dep.n_sensors)])

    now = [1000.0]
    first = Collector(dep, store, master_key=master, clock=lambda: now[0], close_interval=3600.0)
    target = int((now[0] - GRACE - CLOSED_BELOW_MARGIN) // dep.window_seconds)

    async def run_first() -> list[int]:
        await first.start()
        marks = []
        try:
            written(100)  # below the mark's target, not closed: left by the other collector
            await first.close_due()  # finds window 100: it joins the windows to close and holds the mark
            marks.append(store.closed_below(dep.deployment_id))
            await first.close_due()  # closes it
            now[0] += 1.0
            await first.close_due()  # the next window's pass: nothing left open below the target
            marks.append(store.closed_below(dep.deployment_id))
        finally:
            await first.stop()
        return marks

    assert asyncio.run(run_first()) == [100, target + 1]
    assert store.closed_windows(dep.deployment_id) == [100]
    written(target - 5)  # below the mark: cannot happen (refused by the clock); shows that part is not read
    written(target + 50)
    second = Collector(dep, store, master_key=master, clock=lambda: now[0], close_interval=3600.0)

    async def run_second() -> dict[int, int]:
        await second.start()
        try:
            return dict(second.counts)
        finally:
            await second.stop()

    assert asyncio.run(run_second()) == {target + 50: dep.n_sensors}
    store.dispose()

"""The collector when its database cannot write (issue 33 item 4: a full disk) and at the edges of its windows.

Oracles: SQLite's own SQLITE_FULL (a real size limit, ``PRAGMA max_page_count``, not a mocked error), the
HTTP answers, the database's rows and the log records counted.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from dpcloak.service.app import create_app
from dpcloak.service.auth import sign_report
from dpcloak.service.collector import STORAGE_RETRY_AFTER, Collector
from dpcloak.service.config import analyst_token, load_deployment, load_master_key, sensor_key
from dpcloak.service.store import Store, sqlite_url

from .conftest import make_deployment


class Site:
    """One collector in-process (its real app and SQLite file), with a clock the test sets."""

    def __init__(self, directory: Path) -> None:
        self.deployment = load_deployment(directory)
        self.master = load_master_key(directory)
        self.store = Store(sqlite_url(directory / "c.db"))
        self.now = self.deployment.window_start(3) + 1.0
        self.collector = Collector(self.deployment, self.store, master_key=self.master, clock=lambda: self.now,
                                   flood_rate=1e6, flood_burst=10**6)  # this test sends faster than a sensor
        token = analyst_token(self.master, deployment_id=self.deployment.deployment_id)
        self.auth = {"Authorization": f"Bearer {token}"}
        self.client = TestClient(create_app(self.collector, analyst_token=token), raise_server_exceptions=False)

    def report(self, sensor: int, window: int, value: float = 0.0) -> dict[str, Any]:
        dep, rid = self.deployment, secrets.token_hex(16)
        key = sensor_key(self.master, deployment_id=dep.deployment_id, sensor=sensor)
        return {"deployment": dep.deployment_id, "fingerprint": dep.fingerprint, "sensor": sensor, "key_id": sensor,
                "window": window, "report_id": rid, "value": value,
                "mac": sign_report(key, deployment_id=dep.deployment_id, fingerprint=dep.fingerprint, sensor=sensor,
                                   window=window, report_id=rid, value=value)}

    def stored(self) -> int:
        return len(self.store.all_reports(self.deployment.deployment_id))


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    make_deployment(tmp_path, sensor_rows=2, sensor_cols=3, window_seconds=60.0)
    s = Site(tmp_path)
    with s.client:
        yield s
    s.store.dispose()


def _fill_database(site: Site) -> Any:
    """Cap the database file at its current size (``PRAGMA max_page_count`` on every new connection) and fill
    the free space left in its pages with filler reports until SQLite itself answers SQLITE_FULL ("database
    or disk is full"); returns the listener (remove it to free the space again) and the filler count."""
    store = site.store
    with store.engine.connect() as conn:
        pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar_one())
    store.engine.dispose()

    def cap(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(store.engine, "connect", cap)
    did = site.deployment.deployment_id
    for i in range(20_000):  # bounded: a page holds a few dozen reports
        row = {"deployment_id": did, "sensor_id": i % 6, "window": 10**6 + i // 6, "report_id": f"{i:032x}",
               "value": 0.0, "mac": "0" * 64, "received_at": 0.0}
        try:
            store.insert_reports([row])
        except OperationalError as exc:
            assert "database or disk is full" in str(exc)
            return cap, i
    raise AssertionError("the capped database never filled up")


def test_a_full_disk_answers_503_with_retry_after_and_a_bounded_log(site: Site,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """Issue 33 item 4: 200 requests on a full disk are 200 answers of 503 + Retry-After and one log line (it
    was 500 and a traceback each); nothing is acknowledged; once there is space, the next report is stored."""
    assert site.client.post("/api/v1/reports", json=site.report(0, 2)).status_code == 201
    cap, fillers = _fill_database(site)
    batch = {"reports": [site.report(j, w) for w in (0, 1, 2) for j in range(6) if (j, w) != (0, 2)]}
    with caplog.at_level(logging.INFO, logger="dpcloak.service"):
        answers = [site.client.post("/api/v1/reports/batch", json=batch) for _ in range(100)]
        answers += [site.client.post("/api/v1/reports", json=site.report(1, 2)) for _ in range(100)]
    for resp in answers:
        assert resp.status_code == 503 and resp.headers["retry-after"] == str(STORAGE_RETRY_AFTER), resp.text
        assert resp.json()["error"] == "storage_full"
    assert site.stored() == 1 + fillers
    records = [r for r in caplog.records if r.name.startswith("dpcloak")]
    assert len(records) == 1 and "cannot write" in records[0].getMessage(), [r.getMessage() for r in records]
    assert "database or disk is full" in records[0].getMessage()
    assert not any(r.exc_info for r in caplog.records) and "Traceback" not in caplog.text
    event.remove(site.store.engine, "connect", cap)
    site.store.engine.dispose()  # new connections: no size cap (space freed)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dpcloak.service"):
        assert site.client.post("/api/v1/reports", json=site.report(1, 2)).status_code == 201
    assert "writes again" in caplog.text and site.stored() == 2 + fillers


def test_closing_a_window_nobody_reported_for_loses_no_later_report(site: Site) -> None:
    """Issue 33 item 5: the analyst's close of an empty window is 404 and leaves it open; the honest reports
    that arrive afterwards are all stored and recovered (they were refused as window_closed: lost)."""
    closed = site.client.post("/api/v1/windows/1/close", headers=site.auth)
    assert closed.status_code == 404
    bodies = [site.report(j, 1) for j in range(6)]
    answers = [site.client.post("/api/v1/reports", json=body) for body in bodies]
    assert [a.status_code for a in answers] == [201] * 6, [a.text for a in answers]
    record = site.client.post("/api/v1/windows/1/close", headers=site.auth)
    assert record.status_code == 200 and record.json()["reporting"] == list(range(6))
    assert site.client.post("/api/v1/reports", json=bodies[0]).status_code == 200  # a resend: a duplicate
    assert site.stored() == 6


def test_a_clock_stepping_back_reopens_no_recovered_window(site: Site) -> None:
    """Issue 33 item 5: window 2 is recovered once its grace period is over; the collector's clock then steps
    back into that grace period. A report for window 2 is refused (409 window_closed) instead of being stored
    where no map will ever read it (it was 201: stored and lost), and so is window 3, whose grace period was
    over before the step too."""
    import time

    dep = site.deployment
    assert site.client.post("/api/v1/reports", json=site.report(0, 2)).status_code == 201
    site.now = dep.window_end(2) + dep.grace_seconds + 1.0  # window 2's grace is over: the closer recovers it
    deadline = time.monotonic() + 120
    while 2 not in site.store.closed_windows(dep.deployment_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert site.store.closed_windows(dep.deployment_id) == [2]
    site.now = dep.window_end(3) + dep.grace_seconds + 1.0  # later still: window 2 leaves the in-memory set
    time.sleep(1.0)  # a few closer ticks
    site.now = dep.window_end(2) + 1.0  # the clock steps back into window 2's grace period
    late = site.client.post("/api/v1/reports", json=site.report(1, 2))
    assert late.status_code == 409 and late.json()["error"] == "window_closed", late.text
    assert site.client.post("/api/v1/reports", json=site.report(1, 3)).status_code == 409  # 3's grace was over too
    assert site.stored() == 1


def test_recovery_ready_is_false_only_while_the_warm_recovery_process_starts(tmp_path: Path) -> None:
    """``Collector.recovery_ready`` (what ``dpcloak serve`` waits on before it accepts reports). Oracle: the recovery
    process itself (its pid, seen alive through the pool, and ``worker_ready`` answering in it) and the states of the
    warm-up future. Not warmed: ``True`` at once, and no process is started. Warmed: ``False`` right after
    ``start`` (spawning and importing takes far longer than a zero timeout), ``True`` once ``worker_ready`` ran in
    the process. A failed or cancelled warm-up is ``True`` (nothing left to wait for), a pending one ``False``."""
    import asyncio
    from concurrent.futures import Future

    make_deployment(tmp_path, sensor_rows=1, sensor_cols=2, window_seconds=60.0)
    dep, master = load_deployment(tmp_path), load_master_key(tmp_path)
    cold = Collector(dep, Store(sqlite_url(tmp_path / "cold.db")), master_key=master)
    assert cold.recovery_ready(0.0) and not cold._recovery_process._processes  # type: ignore[attr-defined]
    cold._recovery_process.shutdown()
    cold._reader_thread.shutdown()

    warm = Collector(dep, Store(sqlite_url(tmp_path / "warm.db")), master_key=master, warm_recovery=True)

    async def scenario() -> tuple[bool, bool, bool]:
        await warm.start()
        try:
            early = warm.recovery_ready(0.0)
            ready = warm.recovery_ready(120.0)
            alive = all(p.is_alive() for p in warm._recovery_process._processes.values())  # type: ignore[attr-defined]
            return early, ready, alive and warm._warm is not None and warm._warm.result() is True
        finally:
            await warm.stop()

    early, ready, worker_answered = asyncio.run(scenario())
    assert (early, ready, worker_answered) == (False, True, True)
    pending: Future[bool] = Future()
    warm._warm = pending
    assert warm.recovery_ready(0.01) is False  # still starting: worth waiting for again
    failed: Future[bool] = Future()
    failed.set_exception(RuntimeError("the recovery process broke"))
    cancelled: Future[bool] = Future()
    cancelled.cancel()
    for future in (failed, cancelled):
        warm._warm = future
        assert warm.recovery_ready(0.01) is True  # the first window's recovery reports the failure
    pending.set_result(True)
    warm._warm = pending
    assert warm.recovery_ready(0.0) is True


def test_a_closed_window_still_refuses_reports_without_a_continual_counter(site: Site) -> None:
    """Issue 30: catch-ups are a continual deployment's only: here window 0's grace period is over and a report
    for it is refused (409 window_closed) and not stored, as before."""
    dep = site.deployment
    site.now = dep.window_end(0) + dep.grace_seconds + 1.0
    late = site.client.post("/api/v1/reports", json=site.report(0, 0))
    assert late.status_code == 409 and late.json()["error"] == "window_closed", late.text
    assert site.stored() == 0


def test_a_continual_collector_takes_a_catch_up_for_a_closed_window_into_its_slot_only(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 30: with a continual counter, windows 0 and 1 were recovered from sensors 0 and 1 (in-process, before the
    collector starts: it reads its closed windows from the database); sensor 2's output for it arrives after the
    window closed (a catch-up): stored in its slot (201, ``catch_up``), the window's map record unchanged and not
    recovered again; the same report again is a duplicate (200); a different value for the filled slot is
    refused as a conflict (409), kept as a security event and logged. Oracle: the stored rows and the window
    record read back from the database."""
    from dpcloak.service.config import write_deployment
    from dpcloak.service.examples import counting_deployment
    from dpcloak.service.windows import WindowRecovery

    write_deployment(tmp_path, counting_deployment())
    site = Site(tmp_path)
    dep = site.deployment
    counter = dep.counter
    assert counter is not None
    streams = [counter.stream() for _ in range(3)]
    outputs = [[s.push(3) * counter.grid for _ in range(2)] for s in streams]
    site.store.migrate()
    site.store.register(dep)
    site.store.insert_reports([{"deployment_id": dep.deployment_id, "sensor_id": j, "window": w,
                                "report_id": f"r-{j}-{w}", "value": outputs[j][w], "mac": "00",
                                "received_at": dep.window_start(w)} for j in (0, 1) for w in (0, 1)])
    recovery = WindowRecovery(dep, site.store)
    recovery.close(0)
    closed = recovery.close(1)
    assert closed is not None and closed.reporting == [0, 1]
    before = list(site.store.windows(dep.deployment_id, window=1))
    with site.client:
        site.now = dep.window_end(1) + dep.grace_seconds + 60.0  # window 1 is closed and its grace over
        body = site.report(2, 1, outputs[2][1])
        late = site.client.post("/api/v1/reports", json=body)
        assert late.status_code == 201 and late.json() == {"status": "stored", "report_id": body["report_id"],
                                                           "catch_up": True}, late.text
        assert site.client.post("/api/v1/reports", json=body).json()["status"] == "duplicate"
        with caplog.at_level(logging.WARNING, logger="dpcloak.service"):
            other = site.client.post("/api/v1/reports", json=site.report(2, 1, outputs[2][1] + counter.grid))
        assert other.status_code == 409 and other.json()["error"] == "conflict", other.text
        assert "security event" in caplog.text
        assert [e["window"] for e in site.store.security_events(dep.deployment_id)] == [1]
        assert list(site.store.windows(dep.deployment_id, window=1)) == before  # the map record is untouched
        assert site.store.closed_windows(dep.deployment_id) == [0, 1]
        slot = site.store.find_reports(dep.deployment_id, [(2, 1)])
        assert [(s.report_id, s.value) for s in slot] == [(body["report_id"], outputs[2][1])]


def test_a_continual_collector_refuses_counter_outputs_no_honest_sensor_can_send(tmp_path: Path) -> None:
    """Issue 33 item 1 for continual counters: with counts declared in [0, 50] a stolen key cannot send a
    running total beyond what 50 counts per window and the noise can produce. Oracle: the encoder's largest
    output replayed on the all-50 stream plus the discrete Gaussian tail cells at 2⁻⁶⁴ (tail_cells_bound, checked
    against mpmath in test_poisoning); the interval's ends are accepted and one grid step beyond is refused
    (422 out_of_range), as are 1e154 and a value off the counter's grid; without an upper reading limit large
    values pass (nothing was declared)."""
    from dpcloak.sensors import SensorNetwork
    from dpcloak.sensors.config import network_to_dict
    from dpcloak.service.config import write_deployment
    from dpcloak.service.examples import counting_deployment
    from dpcloak.service.poisoning import tail_cells_bound

    net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [10.0, 0.0], [20.0, 0.0]], measurement="counts",
                                         epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), reading_range=(0.0, 50.0))
    dep = counting_deployment(network=network_to_dict(net))
    write_deployment(tmp_path, dep)
    site = Site(tmp_path)
    counter = dep.counter
    assert counter is not None
    encoder = counter.stream()._encoder  # replay the all-50 stream: its last output is the largest (monotone)
    top = max(encoder.step(round(50.0 / counter.grid)) for _ in range(counter.horizon))
    t = tail_cells_bound(max(counter.noise_variances()))
    g = counter.grid
    with site.client:
        site.now = dep.window_start(1) + 1.0
        cases = [((top + t) * g, 201), (-t * g, 201), ((top + t + 1) * g, 422), ((-t - 1) * g, 422), (1e154, 422),
                 (g / 3, 422)]
        for j, (value, status) in enumerate(cases):
            resp = site.client.post("/api/v1/reports", json=site.report(j % 3, j // 3, value))
            assert resp.status_code == status, (value, resp.text)
            if status == 422:
                assert resp.json()["error"] == "out_of_range" and resp.json()["field"] == "value"
    site.store.dispose()
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    write_deployment(open_dir, counting_deployment())  # counts declared in [0, no limit]
    site = Site(open_dir)
    with site.client:
        site.now = 1.0
        assert site.client.post("/api/v1/reports", json=site.report(0, 0, 1e12 * g)).status_code == 201
    site.store.dispose()

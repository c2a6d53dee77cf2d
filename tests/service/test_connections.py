"""Idle connections do not starve honest requests (issue 33 item 4), against a real collector process.

The collector runs with the common limit of 1,024 open files (soft and hard, so it cannot raise it);
1,000 TCP connections to it on 127.0.0.1 send nothing. Oracle: honest requests on new connections are
answered (the health check, and a signed report stored in the database), and the same app served by
plain uvicorn (its default HTTP/1.1 protocol) under the same limit leaves them unanswered — the
test fails on the unbounded server.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.connections import IDLE_SECONDS
from dpcloak.service.node import SensorNode
from dpcloak.service.store import Store, sqlite_url

from .conftest import CollectorProcess, free_port, make_deployment

FILE_LIMIT = 1024
IDLE = 1000


@contextlib.contextmanager
def _idle_connections(port: int, n: int) -> Iterator[list[socket.socket]]:
    """``n`` connections that send nothing (bounded: 60 s to open them all)."""
    socks: list[socket.socket] = []
    deadline = time.monotonic() + 60
    try:
        while len(socks) < n and time.monotonic() < deadline:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        assert len(socks) == n
        time.sleep(1.0)  # let the server accept what it can
        yield socks
    finally:
        for s in socks:
            s.close()


def _honest_answers(url: str, tries: int = 10) -> int:
    """How many of ``tries`` health checks on new connections are answered within 5 s each."""
    answered = 0
    for _ in range(tries):
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url + "/api/v1/health", timeout=5.0).status_code == 200:
                answered += 1
    return answered


@pytest.mark.slow
def test_a_thousand_idle_connections_leave_honest_requests_served(tmp_path: Path) -> None:
    make_deployment(tmp_path, sensor_rows=1, sensor_cols=3, window_seconds=5.0)
    db = sqlite_url(tmp_path / "c.db")
    collector = CollectorProcess(tmp_path, db, tmp_path / "log", file_limit=FILE_LIMIT)
    try:
        with _idle_connections(collector.port, IDLE) as idle:
            assert _honest_answers(collector.url) == 10
            dep = load_deployment(tmp_path)
            node = SensorNode(deployment=dep, credential=load_credential(tmp_path / "sensors" / "sensor-0.json"),
                              ledger=tmp_path / "ledger-0.db", url=collector.url, attempts=3)
            try:
                assert node.submit(3.0).outcome == "stored"
            finally:
                node.close()
            idle[-1].settimeout(IDLE_SECONDS + 10)  # the newest idle connection is closed by the idle timer
            assert idle[-1].recv(1) == b""
        store = Store(db)
        assert len(store.all_reports(dep.deployment_id)) == 1
        store.dispose()
    finally:
        collector.stop()
    assert "Traceback" not in collector.log()


@pytest.mark.slow
def test_plain_uvicorn_is_starved_by_the_same_idle_connections(tmp_path: Path) -> None:
    """The other side: uvicorn's own protocol never closes a connection that sent nothing."""
    make_deployment(tmp_path, sensor_rows=1, sensor_cols=3, window_seconds=5.0)
    port = free_port()
    script = ("import sys, uvicorn; from pathlib import Path; from dpcloak.service.server import build_app; "
              f"uvicorn.run(build_app(Path({str(tmp_path)!r}), db_url={sqlite_url(tmp_path / 'w.db')!r}), "
              f"host='127.0.0.1', port={port}, http='h11', log_level='warning')")
    weak = CollectorProcess(tmp_path, "", tmp_path / "weak.log", port=port, file_limit=FILE_LIMIT,
                            cmd=[sys.executable, "-c", script])
    try:
        with _idle_connections(port, IDLE):
            assert _honest_answers(weak.url, tries=3) == 0
    finally:
        weak.stop()

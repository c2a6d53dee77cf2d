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
from typing import Any

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
              "from dpcloak.service.settings import Settings; "
              f"uvicorn.run(build_app(Settings(directory=Path({str(tmp_path)!r}), "
              f"db_url={sqlite_url(tmp_path / 'w.db')!r})), "
              f"host='127.0.0.1', port={port}, http='h11', log_level='warning')")
    weak = CollectorProcess(tmp_path, "", tmp_path / "weak.log", port=port, file_limit=FILE_LIMIT,
                            cmd=[sys.executable, "-c", script])
    try:
        with _idle_connections(port, IDLE):
            assert _honest_answers(weak.url, tries=3) == 0
    finally:
        weak.stop()


def _ok_app() -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


def _get(sock: socket.socket) -> bytes:
    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while not data.endswith(b"ok"):
        chunk = sock.recv(4096)
        assert chunk, "closed while a request was answered"
        data += chunk
    return data


def test_the_idle_timer_counts_from_the_last_response(monkeypatch: pytest.MonkeyPatch) -> None:
    """The idle timer is re-armed when it fires, not at every response: a connection that keeps sending
    requests more often than the idle limit stays open past it, one that falls silent after a response is
    closed about the idle limit later (oracle: the socket's own view, with the limit lowered to 0.6 s)."""
    import threading

    import uvicorn

    import dpcloak.service.connections as connections

    idle = 0.6
    monkeypatch.setattr(connections, "IDLE_SECONDS", idle)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_ok_app(), host="127.0.0.1", port=port, log_level="warning",
                                           http=connections.BoundedHttpProtocol, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started
        busy = socket.create_connection(("127.0.0.1", port), timeout=5)
        quiet = socket.create_connection(("127.0.0.1", port), timeout=5)
        with busy, quiet:
            _get(quiet)
            silent_from = time.monotonic()
            for _ in range(6):  # 1.5 s of requests every 0.25 s: 2.5 idle limits, never idle for one
                assert b" 200 " in _get(busy)
                time.sleep(0.25)
            quiet.settimeout(idle + 5)
            assert quiet.recv(1) == b""  # closed by the server ...
            assert time.monotonic() - silent_from >= idle  # ... not before the limit
            assert b" 200 " in _get(busy)  # the busy one is still served
    finally:
        server.should_exit = True
        thread.join(timeout=10)

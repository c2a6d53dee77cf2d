"""A sensor node killed mid-send never undercounts its budget.

``dpcloak sensor run`` (a real process, readings on stdin, windows of 0.25 s) sends to a real collector
through a loopback proxy that holds every answer back for 0.15 s, so most of the node's time is
spent with a report in flight. The node is SIGKILLed ``KILLS`` times a random moment after it
printed a delivery, and restarted (it resends its pending releases first). Oracles:

* after every kill, every report the collector stored for the sensor is in the ledger with the same
  report id and value, and the ledger's count per period is at least the collector's — a release
  that may have left is counted as spent;
* after a last restart with no new readings (a flush), ledger and database hold the same releases.

The restarts' "resent" lines tell where the kills landed: after the collector stored the report
but before the node recorded the acknowledgement ("duplicate"), or before it reached the collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dpcloak.service.config import load_credential
from dpcloak.service.ledger import SensorLedger
from dpcloak.service.store import sqlite_url

from ._reliability import fast_deployment, stored_reports
from .conftest import CollectorProcess, free_port

KILLS = 8
DELAY = 0.15


class SlowProxy:
    """TCP proxy on 127.0.0.1 that forwards requests at once and answers after ``DELAY`` seconds."""

    def __init__(self, upstream_port: int) -> None:
        self.port, self.upstream = free_port(), upstream_port
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", self.port))
        ready.set()
        with contextlib.suppress(RuntimeError):
            self.loop.run_forever()
        server.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                await asyncio.sleep(delay)
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, up_writer, 0.0), self._pipe(up_reader, writer, DELAY))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class Node:
    """``dpcloak sensor run`` reading from a pipe we feed; its output lines collected."""

    def __init__(self, directory: Path, url: str, *, feed: bool) -> None:
        cmd = [sys.executable, "-m", "dpcloak", "sensor", "run", "--config",
               str(directory / "sensors" / "sensor-0.json"), "--deployment", str(directory / "deployment.json"),
               "--url", url, "--ledger", str(directory / "ledger-0.db"), "--input", "-"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
        self.lines: list[str] = []
        self.delivered = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if feed:
            threading.Thread(target=self._feed, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            if line.startswith("window"):
                self.delivered.set()

    def _feed(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            while self.proc.poll() is None:
                self.proc.stdin.write("3\n")
                self.proc.stdin.flush()
                time.sleep(0.02)


def _ledger_rows(directory: Path) -> set[tuple[int, str, float]]:
    credential = load_credential(directory / "sensors" / "sensor-0.json")
    ledger = SensorLedger(directory / "ledger-0.db", credential=credential)
    try:
        return {(e.window, e.report_id, e.value) for e in ledger.all()}
    finally:
        ledger.close()


@pytest.mark.slow
def test_sensor_killed_mid_send_never_undercounts(tmp_path: Path) -> None:
    fast_deployment(tmp_path, cols=2, rows=2, window_seconds=0.25)
    db_url = sqlite_url(tmp_path / "collector.db")
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    collector = CollectorProcess(tmp_path, db_url, tmp_path / "collector.log")
    proxy = SlowProxy(collector.port)
    url = f"http://127.0.0.1:{proxy.port}"
    outputs: list[str] = []
    try:
        for _ in range(KILLS):
            node = Node(tmp_path, url, feed=True)
            assert node.delivered.wait(120), f"the node delivered nothing: {node.lines}"
            time.sleep(rng.uniform(0.0, 0.6))
            node.proc.send_signal(signal.SIGKILL)
            node.proc.wait(timeout=30)
            outputs += node.lines
            ledger = _ledger_rows(tmp_path)
            stored = {(w, r, v) for w, s, r, v in stored_reports(db_url) if s == 0}
            assert stored <= ledger  # whatever reached the collector was recorded as spent first
        last = Node(tmp_path, url, feed=False)  # a flush: resend the pending releases, nothing new
        assert last.proc.wait(timeout=120) == 0, last.lines
        time.sleep(0.2)
        outputs += last.lines
    finally:
        proxy.close()
        collector.stop()
    ledger = _ledger_rows(tmp_path)
    stored = {(w, r, v) for w, s, r, v in stored_reports(db_url) if s == 0}
    resent = [line for line in outputs if line.startswith("resent")]
    mid_send = sum("duplicate" in line for line in resent)
    print(f"\nsensor node: {KILLS} SIGKILLs, {len(ledger)} releases in the ledger, {len(stored)} stored, "
          f"{len(resent)} resent after a restart ({mid_send} had reached the collector before the kill), "
          f"load {os.getloadavg()[0]:.1f}")
    assert ledger == stored  # after the flush: nothing undercounted, nothing lost
    assert len(ledger) >= KILLS
    assert not [line for line in outputs if "Traceback" in line or "Error" in line]

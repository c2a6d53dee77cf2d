"""A sensor node killed mid-send never undercounts its budget.

``dpcloak sensor run`` (a real process, forked from a pre-imported parent: :mod:`._zygote`; readings on
stdin, windows of 0.25 s) sends to a real collector through a loopback proxy that holds every answer back
for 0.15 s, so most of the node's time is spent with a report in flight. The node is SIGKILLed ``KILLS``
times a random moment after it printed a delivery, and restarted (it resends its pending releases first).
Oracles:

* after every kill, every report the collector stored for the sensor is in the ledger with the same
  report id and value, and the ledger's count per period is at least the collector's — a release
  that may have left is counted as spent;
* after a last restart with no new readings (a flush), ledger and database hold the same releases.

The restarts' "resent" lines tell where the kills landed: after the collector stored the report
but before the node recorded the acknowledgement ("duplicate"), or before it reached the collector.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import hmac
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import pytest

from dpcloak.service import _network
from dpcloak.service.config import Deployment, load_credential, write_deployment
from dpcloak.service.ledger import SensorLedger
from dpcloak.service.store import sqlite_url

from ._reliability import fast_deployment, stored_reports
from ._zygote import ForkedProcess, zygote
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
        self.proc = zygote().popen(cmd, stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
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


POLICY_KILLS = 50
SENSORS = 5  # node processes run side by side: POLICY_KILLS / SENSORS restarts of each


def _policy_node(directory: Path, sensor: int, url: str) -> tuple[ForkedProcess, threading.Event]:
    """``dpcloak sensor run`` of ``sensor``, fed a reading every 20 ms; the event is set at its first output line."""
    cmd = [sys.executable, "-m", "dpcloak", "sensor", "run", "--config",
           str(directory / "sensors" / f"sensor-{sensor}.json"), "--deployment", str(directory / "deployment.json"),
           "--url", url, "--ledger", str(directory / f"ledger-{sensor}.db"), "--input", "-"]
    proc = zygote().popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ))
    running = threading.Event()

    def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            while proc.poll() is None:
                proc.stdin.write("3\n")
                proc.stdin.flush()
                time.sleep(0.02)

    def read() -> None:
        assert proc.stdout is not None
        for _ in proc.stdout:
            running.set()

    threading.Thread(target=feed, daemon=True).start()
    threading.Thread(target=read, daemon=True).start()
    return proc, running


def _replayed_windows(directory: Path, sensor: int) -> list[int]:
    """The release windows in a sensor's ledger, replayed by the independent oracle (sqlite3 + HMAC chain)."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "privacy"))
    from _ledger_oracle import replay

    cred = json.loads((directory / "sensors" / f"sensor-{sensor}.json").read_text())
    key = hmac.new(bytes.fromhex(cred["key"]), b"dpcloak/service/ledger-key/v1", "sha256").digest()
    return [int(body["window"]) for kind, body in replay(directory / f"ledger-{sensor}.db", key)[1:]
            if kind == "release"]


@pytest.mark.slow
def test_the_policy_holds_across_fifty_node_kills(tmp_path: Path) -> None:
    """``SENSORS`` real ``dpcloak sensor run`` processes side by side on a policy deployment (windows of 0.1 s,
    any 12 consecutive windows hold at most 3 release windows: every 4th) are SIGKILLed ``POLICY_KILLS`` times in
    all, at random moments (during start-up, mid-release, mid-send) and restarted. Oracle: the ledgers replayed
    independently (HMAC chain); every window in which any sensor released counts as one vector release (the deployment's
    statement), and in every sliding window of 12 the count is at most 3 and its exact zCDP ρ (fractions) is at
    most the declared one, the windows are multiples of 4, no window twice: 0 violations."""
    net = _network.floor_plan_network(width=20.0, height=20.0, sensor_cols=SENSORS, sensor_rows=1, epsilon=1.0,
                                      delta=1e-6, budget=(10.0, 1e-5), spacing=4.0, diffusion=8.0, move=4.0,
                                      reading_high=100.0)
    dep = Deployment.create(network=net, window_seconds=0.1, period_windows=12, policy_releases=3,
                            start=time.time() - 5.0, grace_seconds=3600.0)
    write_deployment(tmp_path, dep)
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    collector = CollectorProcess(tmp_path, sqlite_url(tmp_path / "collector.db"), tmp_path / "collector.log")
    kills, started = 0, time.monotonic()
    try:
        while kills < POLICY_KILLS:
            assert time.monotonic() - started < 900, f"only {kills} kills in 900 s"
            nodes = [_policy_node(tmp_path, j, collector.url) for j in range(SENSORS)]
            for proc, running in nodes:  # most kills land while the node runs (releasing, sending), some in start-up
                if rng.random() < 0.8:
                    running.wait(120)
                time.sleep(rng.uniform(0.0, 0.8))
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                kills += 1
    finally:
        collector.stop()
    released = {j: _replayed_windows(tmp_path, j) for j in range(SENSORS) if (tmp_path / f"ledger-{j}.db").exists()}
    windows = sorted({w for ws in released.values() for w in ws})
    mech = dep.release_spec.mechanism
    rho_one = Fraction(mech.grid_sensitivity) ** 2 / (2 * Fraction(mech.sigma2))
    statement = dep.policy_statement()
    assert (statement.span_windows, statement.span_releases) == (12, 3)
    declared_rho = statement.span_releases * rho_one  # the span statement: at most 3 vector releases in any 12
    violations = [f"window {w} is not a multiple of 4" for w in windows if w % 4]
    violations += [f"sensor {j} released a window twice" for j, ws in released.items() if len(set(ws)) != len(ws)]
    for i, w in enumerate(windows):
        count = bisect.bisect_right(windows, w + 11) - i
        if count * rho_one > declared_rho:
            violations.append(f"windows {w}..{w + 11}: {count} release windows")
    print(f"\npolicy under kills: {kills} SIGKILLs of node processes, {sum(map(len, released.values()))} releases "
          f"in {len(windows)} release windows, load {os.getloadavg()[0]:.1f}")
    assert not violations and len(windows) >= 10

"""Shared pieces of the collector benchmarks (``bench_collector.py``, ``bench_soak.py``).

The 1,000-sensor floor both load (50 m x 40 m, 40 x 25 people counters), its readings (two crowds
of 30 people), the sensors' keys and signed report bodies, raw HTTP/1.1 request bytes, a free
loopback port, and CPU accounting of the collector's processes from Linux ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

SENSORS = 1000


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def floor_network() -> Any:
    """The benchmarks' deployment network: 1,000 counters on a 50 m x 40 m floor, a 1,000 x 130 model."""
    from dpcloak.service import _network

    return _network.floor_plan_network(width=50.0, height=40.0, sensor_cols=40, sensor_rows=25, epsilon=1.0,
                                       delta=1e-6, budget=(1e4, 1e-5), spacing=4.0, diffusion=8.0, move=4.0)


def crowd_readings(network: Any) -> np.ndarray:
    """Every sensor's true count with two crowds of 30 people."""
    f = np.zeros(network.n_sources)
    f[[5, network.n_sources // 2]] = 30.0
    return np.asarray(network.model.matvec(f), dtype=float)


def sensor_keys(directory: Path, deployment: Any) -> list[bytes]:
    """Each sensor's report key, derived from the master key written in ``directory``."""
    from dpcloak.service.config import load_master_key, sensor_key

    master = load_master_key(directory)
    return [sensor_key(master, deployment_id=deployment.deployment_id, sensor=j) for j in range(deployment.n_sensors)]


def report_body(key: bytes, deployment: Any, sensor: int, window: int, value: float) -> dict[str, Any]:
    """A sensor's signed report (JSON-ready), with a fresh report id."""
    from dpcloak.service.auth import sign_report

    dep_id, fp, rid = deployment.deployment_id, deployment.fingerprint, secrets.token_hex(16)
    mac = sign_report(key, deployment_id=dep_id, fingerprint=fp, sensor=sensor, window=window, report_id=rid,
                      value=value)
    return {"deployment": dep_id, "fingerprint": fp, "sensor": sensor, "key_id": sensor, "window": window,
            "report_id": rid, "value": value, "mac": mac}


def post_request(path: str, data: bytes, port: int) -> bytes:
    """The bytes of an HTTP/1.1 keep-alive POST of JSON ``data`` to ``path`` on 127.0.0.1."""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def stop(proc: Any, *, timeout: float = 30.0) -> None:
    """Terminate a server process and wait for it (killed after ``timeout`` seconds)."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


def children(pid: int) -> list[int]:
    """Child processes of ``pid`` (any of its threads)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(c) for c in (task / "children").read_text().split()]
    return out


def cpu_seconds(pid: int, *, descendants: bool = False) -> float:
    """User + system CPU seconds of a live process (all its threads) and, with ``descendants``, of all its
    live descendants (a descendant that exits meanwhile counts 0)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for child in children(pid) if descendants else ():
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += cpu_seconds(child, descendants=True)
    return total

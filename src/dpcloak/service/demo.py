"""``dpcloak serve --demo``: a collector and simulated sensors on a floor plan, on this machine only.

Two crowds wander across a 16 m x 10 m floor; 40 people counters on a lattice measure them (the
heat model: a person at distance d counts exp(-d²/4T)), privatize their readings on the "device"
(the same :class:`~dpcloak.service.node.SensorNode` a real sensor runs, with its own ledger) and
send them to the collector over HTTP on the loopback interface. The deployment, the SQLite
database and the ledgers live in ``./dpcloak-demo``.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from dpcloak.errors import BudgetExceededError
from dpcloak.service import _network
from dpcloak.service.config import SENSOR_DIR, Deployment, load_credential, load_deployment, write_deployment
from dpcloak.service.node import DeliveryError, SensorNode

__all__ = ["DEMO_DIR", "demo_deployment", "demo_readings", "simulate"]

DEMO_DIR = "dpcloak-demo"
WIDTH, HEIGHT = 16.0, 10.0


def demo_deployment(directory: Path, *, window_seconds: float = 2.0) -> Deployment:
    """Load the demo deployment in ``directory``, creating it (with fresh keys) the first time.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> deployment = demo_deployment(directory)
    >>> deployment.window_seconds, deployment.network_for_period(0).n_sensors
    (2.0, 40)
    >>> demo_deployment(directory) == deployment  # loaded, not re-created, the second time
    True
    >>> tmp.cleanup()
    """
    if (directory / "deployment.json").exists():
        return load_deployment(directory)
    network = _network.floor_plan_network(width=WIDTH, height=HEIGHT, sensor_cols=8, sensor_rows=5, epsilon=1.0,
                                          delta=1e-6, budget=(30.0, 1e-5), reading_high=200.0)
    dep = Deployment.create(network=network, window_seconds=window_seconds, period_windows=1800,
                            start=math.floor(time.time()), grace_seconds=window_seconds)
    write_deployment(directory, dep)
    return dep


def demo_readings(deployment: Deployment, window: int) -> NDArray[np.float64]:
    """True (raw) counts of every sensor in ``window``: two crowds (40 and 25 people) moving along smooth paths.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> deployment = demo_deployment(directory)
    >>> counts = demo_readings(deployment, 0)
    >>> counts.shape, bool(counts.min() >= 0)
    ((40,), True)
    >>> bool(np.allclose(counts, demo_readings(deployment, 0)))  # a function of the window
    True
    >>> tmp.cleanup()
    """
    net = deployment.sensor_network
    sources = _network.source_positions(net)
    f = np.zeros(net.n_sources)
    phase = 2 * math.pi * window / 60.0
    crowds = ((40.0, 0.5 + 0.35 * math.cos(phase), 0.5 + 0.3 * math.sin(phase)),
              (25.0, 0.5 + 0.3 * math.sin(0.7 * phase), 0.5 - 0.25 * math.cos(1.3 * phase)))
    for people, u, v in crowds:
        x, y = WIDTH * u, HEIGHT * v
        f[int(np.argmin(np.hypot(sources[:, 0] - x, sources[:, 1] - y)))] += people
    return np.asarray(net.model.matvec(f), dtype=float)


def simulate(directory: Path, *, url: str, stop: threading.Event, windows: int | None = None) -> int:
    """Run every demo sensor until ``stop`` is set or ``windows`` windows have passed; returns releases sent.

    Examples
    --------
    With ``windows=0`` nothing is released (a real run points ``url`` at a collector); the sensors'
    ledgers are created in ``directory``:

    >>> import tempfile
    >>> import threading
    >>> from pathlib import Path
    >>> from dpcloak.service.config import write_deployment
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, two_sensor_deployment())
    >>> simulate(directory, url="http://127.0.0.1:9", stop=threading.Event(), windows=0)
    0
    >>> sorted(p.name for p in (directory / "ledgers").iterdir())
    ['sensor-0.db', 'sensor-1.db']
    >>> tmp.cleanup()
    """
    dep = load_deployment(directory)
    ledgers = directory / "ledgers"
    ledgers.mkdir(exist_ok=True)
    nodes = [SensorNode(deployment=dep, credential=load_credential(directory / SENSOR_DIR / f"sensor-{j}.json"),
                        ledger=ledgers / f"sensor-{j}.db", url=url, attempts=3) for j in range(dep.n_sensors)]
    sent, first = 0, dep.window_at(time.time())
    try:
        for node in nodes:
            node.flush()
        while not stop.is_set():
            w = dep.window_at(time.time())
            if windows is not None and w >= first + windows:
                break
            readings = demo_readings(dep, w)
            for node in nodes:
                if node.ledger.entry(w) is None and not stop.is_set():
                    try:
                        node.submit(float(readings[node.sensor]), window=w)
                        sent += 1
                    except (DeliveryError, BudgetExceededError):
                        pass  # pending in the ledger (flushed next run), or the period is spent
            stop.wait(max(0.05, dep.window_end(w) - time.time()))
    finally:
        for node in nodes:
            node.close()
    return sent

"""``dpcloak serve --demo``: a collector and simulated sensors on a floor plan, on this machine only.

Two crowds wander across a 16 m x 10 m floor; 40 people counters on a lattice measure them (the
heat model: a person at distance d counts exp(-d²/4T)), privatize their readings on the "device"
(the same :class:`~dpcloak.service.node.SensorNode` a real sensor runs, with its own ledger) and
send them to the collector over HTTP on the loopback interface, at the end of each window. The
deployment's policy is the network's budget (30, 10⁻⁵) over any 1,800 consecutive two-second windows
(an hour): every fifth window is a release window, so the demo runs indefinitely within it. To show
what the dashboard and ``/api/v1/health`` say when sensors skip release windows the policy lets them
use, sensor 0 is switched off for 20 minutes of every two hours (:func:`switched_off`): health is
``degraded`` then, ``ok`` once it reports again. The deployment, the SQLite database and the ledgers
live in ``./dpcloak-demo``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.service import _network
from dpcloak.service.config import (
    DEPLOYMENT_VERSION,
    SENSOR_DIR,
    Deployment,
    load_credential,
    load_deployment,
    write_deployment,
)
from dpcloak.service.node import DeliveryError, SensorNode

__all__ = ["DEMO_DIR", "OUTAGE", "DemoClock", "demo_deployment", "demo_readings", "simulate", "switched_off"]

log = logging.getLogger("dpcloak.service")

DEMO_DIR = "dpcloak-demo"
WIDTH, HEIGHT = 16.0, 10.0
OUTAGE = (0, 1200.0, 2400.0, 7200.0)
"""(sensor, off from, on again at, every): the simulated outage, in seconds since the sensors started."""


def switched_off(sensor: int, seconds: float) -> bool:
    """Whether the demo's ``sensor`` is switched off ``seconds`` after the simulated sensors started.

    Sensor 0 is off from minute 20 to minute 40 of every two hours (:data:`OUTAGE`): it releases
    nothing then, as a sensor whose battery ran out would.

    Examples
    --------
    >>> [switched_off(0, 60.0 * m) for m in (0, 19, 20, 39, 40, 140)], switched_off(1, 1800.0)
    ([False, False, True, True, False, True], False)
    """
    who, off, on, every = OUTAGE
    return sensor == who and off <= seconds % every < on


class DemoClock:
    """Simulated Unix time running ``scale`` times faster than the wall clock from now on (tests, fast demos).

    The collector, the simulated sensors' nodes and their waits all read this one clock
    (``dpcloak serve --demo --time-scale``), so a test can run hours of windows in a minute.

    Examples
    --------
    >>> clock = DemoClock(60.0)
    >>> start = clock()
    >>> time.sleep(0.05)
    >>> 2.0 < clock() - start < 60.0  # about 3 simulated seconds for 50 ms
    True
    """

    def __init__(self, scale: float) -> None:
        if not (math.isfinite(scale) and scale >= 1.0):
            raise InvalidParameterError(f"scale must be a finite number >= 1, got {scale!r}", parameter="scale")
        self.scale = float(scale)
        self._wall, self._mono = time.time(), time.monotonic()

    def __call__(self) -> float:
        return self._wall + (time.monotonic() - self._mono) * self.scale


def demo_deployment(directory: Path, *, window_seconds: float = 2.0) -> Deployment:
    """Load the demo deployment in ``directory``, creating it (with fresh keys) the first time.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> deployment = demo_deployment(directory)
    >>> deployment.window_seconds, deployment.n_sensors
    (2.0, 40)
    >>> demo_deployment(directory) == deployment  # loaded, not re-created, the second time
    True
    >>> tmp.cleanup()
    """
    if (directory / "deployment.json").exists():
        if json.loads((directory / "deployment.json").read_text()).get("version") == DEPLOYMENT_VERSION:
            return load_deployment(directory)
        aside = directory.with_name(f"{directory.name}.v-old-{int(time.time())}")
        directory.rename(aside)  # an earlier version's demo (its keys and ledgers) is kept, not reused
        log.warning("moved the demo of an earlier deployment version to %s; starting a new demo", aside)
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


def simulate(directory: Path, *, url: str, stop: threading.Event, windows: int | None = None,
             clock: Callable[[], float] | None = None) -> int:
    """Run every demo sensor until ``stop`` is set or ``windows`` windows have passed; returns releases sent.

    ``clock`` (default: the wall clock) is the time the sensors' nodes and the loop's waits follow; a
    :class:`DemoClock` makes them run faster (the collector must follow the same clock).

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
    now = time.time if clock is None else clock
    scale = clock.scale if isinstance(clock, DemoClock) else 1.0

    def wait(seconds: float) -> None:  # simulated seconds
        stop.wait(seconds / scale)

    ledgers = directory / "ledgers"
    ledgers.mkdir(exist_ok=True)
    nodes: list[SensorNode] = []
    sent = 0
    try:
        for j in range(dep.n_sensors):  # each node opens a ledger and an HTTP client: seconds on a busy machine
            if stop.is_set():
                return sent
            nodes.append(SensorNode(deployment=dep, ledger=ledgers / f"sensor-{j}.db", url=url, attempts=3,
                                    credential=load_credential(directory / SENSOR_DIR / f"sensor-{j}.json"),
                                    clock=clock))
        first = dep.window_at(now())  # windows count from when the sensors are ready
        began = dep.window_start(first)
        for node in nodes:
            node.flush()
        while not stop.is_set():
            w = dep.window_at(now())
            if windows is not None and w >= first + windows:
                break
            nxt = dep.next_release_window(w)
            if nxt is None:  # the lifetime cap is reached: nothing more to send
                wait(dep.window_seconds)
                continue
            if nxt != w:  # not a release window: the sensors skip it
                wait(max(0.05 * scale, dep.window_start(nxt) - now()))
                continue
            readings = demo_readings(dep, w)
            released = []
            for node in nodes:
                if node.ledger.entry(w) is None and not stop.is_set() and not switched_off(node.sensor, now() - began):
                    with contextlib.suppress(BudgetExceededError, InvalidParameterError):  # refused: nothing left
                        released.append((node, node.release(float(readings[node.sensor]), window=w)))
            wait(max(0.0, dep.window_end(w) - now()))  # reports leave at the window's end
            for node, entry in released:
                with contextlib.suppress(DeliveryError):  # pending in the ledger, flushed next run
                    node.deliver(entry)
                    sent += 1
    finally:
        for node in nodes:
            node.close()
    return sent

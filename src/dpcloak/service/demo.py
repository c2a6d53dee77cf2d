"""``dpcloak serve --demo``: a collector and simulated sensors on a floor plan, on this machine only.

Two crowds wander across a 16 m x 10 m floor; 40 people counters on a lattice measure them (the
heat model: a person at distance d counts exp(-d²/4T)), privatize their readings on the "device"
(the same :class:`~dpcloak.service.node.SensorNode` a real sensor runs, with its own ledger) and
send them to the collector over HTTP on the loopback interface at the end of each window, all in one
request (:func:`~dpcloak.service.node.deliver_batch`, as a gateway forwards them). The
deployment's policy is the network's budget (30, 10⁻⁵) over any 1,800 consecutive two-second windows
(an hour), at most 360 release windows in them, every 4th window (:data:`STRIDE`): the sliding window
fills after 48 minutes, then every sensor skips for budget (``/api/v1/health`` says ``degraded``, naming
them and when they release again) until it renews on the hour, and so on indefinitely within the policy.
A restarted demo resumes its clock after the last window its sensors' ledgers hold (a fast demo's clock
runs ahead of the wall clock). The deployment, the SQLite database and the ledgers live in
``./dpcloak-demo``.
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

import httpx
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
from dpcloak.service.node import DeliveryError, SensorNode, deliver_batch

__all__ = ["DEMO_DIR", "STRIDE", "DemoClock", "demo_deployment", "demo_readings", "simulate"]

log = logging.getLogger("dpcloak.service")

DEMO_DIR = "dpcloak-demo"
WIDTH, HEIGHT = 16.0, 10.0
STRIDE = 4
"""The demo's release stride: every 4th window until 360 fill the hour's sliding window (48 min), then 12 min of
skipping for budget."""


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

    def resume_at(self, t: float) -> None:
        """Move the clock forward to read ``t`` now if it reads earlier (never back): a restarted demo's sensors resume
        after the last window their ledgers hold.

        Examples
        --------
        >>> clock = DemoClock(1.0)
        >>> clock.resume_at(clock() + 3600.0)
        >>> 3599.0 < clock() - time.time() < 3601.0
        True
        >>> clock.resume_at(0.0)  # never back
        >>> clock() > time.time() + 3599.0
        True
        """
        behind = t - self()
        if behind > 0:
            self._wall += behind


def demo_deployment(directory: Path, *, window_seconds: float = 2.0) -> Deployment:
    """Load the demo deployment in ``directory``, creating it (with fresh keys) the first time.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> deployment = demo_deployment(directory)
    >>> deployment.window_seconds, deployment.n_sensors, deployment.releases_per_period, deployment.fills_up
    (2.0, 40, 360, True)
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
                            start=math.floor(time.time()), grace_seconds=window_seconds, policy_releases=360,
                            stride=STRIDE)
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
    :class:`DemoClock` makes them run faster (the collector must follow the same clock), and is moved forward
    past the last window the sensors' ledgers hold (:meth:`DemoClock.resume_at`).

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
    client = httpx.Client(base_url=url, timeout=10.0)  # one batch per window for all the sensors (a gateway's)
    try:
        for j in range(dep.n_sensors):  # each node opens a ledger and an HTTP client: seconds on a busy machine
            if stop.is_set():
                return sent
            nodes.append(SensorNode(deployment=dep, ledger=ledgers / f"sensor-{j}.db", url=url, attempts=3,
                                    credential=load_credential(directory / SENSOR_DIR / f"sensor-{j}.json"),
                                    clock=clock))
        last = max((node.last_window for node in nodes), default=-1)
        if isinstance(clock, DemoClock) and last >= 0:  # a restart: the ledgers may be ahead of the wall clock
            clock.resume_at(dep.window_start(last + 1))
        first = dep.window_at(now())  # windows count from when the sensors are ready
        for node in nodes:
            node.flush()
        done = first - 1
        while not stop.is_set():
            w = dep.window_at(now())
            if windows is not None and w >= first + windows:
                break
            # the oldest release window whose reports the collector still takes (a loop that fell behind catches up)
            nxt = dep.next_release_window(max(done + 1, dep.window_at(now() - dep.grace_seconds) + 1))
            if nxt is None:  # the lifetime cap is reached: nothing more to send
                wait(dep.window_seconds)
                continue
            if nxt > w:  # not a release window (by schedule, or for budget): the sensors skip to the next one
                wait(max(0.05 * scale, dep.window_start(nxt) - now()))
                continue
            readings = demo_readings(dep, nxt)
            released = []
            for node in nodes:
                if node.ledger.entry(nxt) is None and not stop.is_set():
                    with contextlib.suppress(BudgetExceededError, InvalidParameterError):  # refused: nothing left
                        released.append((node, node.release(float(readings[node.sensor]), window=nxt)))
            done = nxt
            wait(max(0.0, dep.window_end(nxt) - now()))  # reports leave at the window's end
            if released:
                with contextlib.suppress(DeliveryError):  # pending in the ledgers, flushed next run
                    sent += sum(d.outcome != "rejected" for d in deliver_batch(released, client=client))
    finally:
        client.close()
        for node in nodes:
            node.close()
    return sent

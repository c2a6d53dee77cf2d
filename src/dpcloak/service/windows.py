"""Closing a window: recover its map from the reports that arrived, warm-started from the previous window.

A window closes when every sensor has reported for it, when its grace period after its end is
over, or when the analyst closes it. Its stored record holds the recovered source map, the
EMD-scale uncertainty (metres), the sensors that reported (missing ones are flagged and their rows dropped
from the model), σ and the privacy spent: one window's (ε, δ) and the composed (ε, δ) of its
budget period so far.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak.sensors import NetworkRecovery
from dpcloak.service import _network
from dpcloak.service.config import Deployment
from dpcloak.service.store import Store, WindowRecord

__all__ = ["recover_window_record", "PeriodReleases", "WindowRecovery", "start_worker", "close_in_worker",
           "worker_ready"]


def recover_window_record(deployment: Deployment, store: Store, window: int,
                          warm_start: NetworkRecovery | None = None,
                          releases: PeriodReleases | None = None, *,
                          final_below: int | None = None) -> tuple[WindowRecord, NetworkRecovery] | None:
    """Recover ``window`` from its stored reports; ``None`` when no sensor reported.

    Returns the record and the network's recovery result (the next window's warm start). ``releases``
    counts the period's reports incrementally (default: read the period's rows up to ``window``);
    windows before ``final_below`` take no more reports (see :class:`PeriodReleases`).

    Examples
    --------
    >>> from dpcloak.service.config import Deployment
    >>> from dpcloak.service.store import Store, sqlite_url
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> from dpcloak.sensors.config import network_to_dict
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> deployment = Deployment(deployment_id="abc123", network=network_to_dict(net), window_seconds=60.0,
    ...                         start=0.0, period_windows=10)
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> store = Store(sqlite_url(directory / "collector.db"))
    >>> store.migrate()
    >>> store.register(deployment)
    >>> recover_window_record(deployment, store, 0) is None  # nobody reported
    True
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": 0, "window": 0, "report_id": "r-0",
    ...                         "value": 10.0, "mac": "00", "received_at": 30.0}])
    >>> record, recovery = recover_window_record(deployment, store, 0)
    >>> record.reporting, record.missing, record.releases_in_period, recovery.sources.shape
    ([0], 1, 1, (2,))
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    rows = store.window_readings(deployment.deployment_id, window)
    if not rows:
        return None
    network = deployment.sensor_network
    sensors, readings = zip(*rows, strict=True)
    values = np.zeros(deployment.n_sensors)
    present = np.zeros(deployment.n_sensors, dtype=bool)
    values[list(sensors)] = readings
    present[list(sensors)] = True
    result = _network.recover_window(network, values, present, warm_start)
    if releases is None:
        releases = PeriodReleases(deployment, store, closed=())
    n_releases = releases.releases(window, present, final_below=final_below)
    eps_period, delta_period = deployment.guarantee(n_releases)
    record = WindowRecord(
        window=window, closed_at=time.time(), source_map=[float(v) for v in result.sources],
        uncertainty=_finite(result.uncertainty), uncertainty_90=_finite(result.uncertainty_90),
        reporting=[int(j) for j in np.flatnonzero(present)], missing=int(deployment.n_sensors - present.sum()),
        sigma=float(network.sigma), epsilon_window=float(network.epsilon), delta_window=float(network.delta),
        epsilon_period=eps_period, delta_period=delta_period, releases_in_period=n_releases,
        converged=bool(result.recovery.converged), message=str(result.recovery.message))
    return record, result


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


class PeriodReleases:
    """The busiest sensor's number of reports in a budget period up to a window, kept incrementally.

    :meth:`releases` equals the largest ``Store.reports_per_sensor`` count over the period's windows
    ``first … window``, without reading the whole period at every close. A closed (recovered) window
    takes no more reports (the collector answers 409), so its counts are final: closed windows are
    added once, in order, to a cached prefix of the period, and only the windows after that prefix are
    read (through the window index) — normally none, the closing window's own reports being at hand.
    A window nobody reported for never closes; the caller says which windows take no more reports
    (``final_below``: the collector's oldest window still in its grace period, older ones are refused
    by the clock), and the prefix moves past them, read once. Without it such a window kept the range
    open from it, and every later close read every report since: measured in the 60 s batch soak,
    41 % of the recovery process's time went to these reads, and it recovered 490 of 2,275 windows.
    ``closed`` are the windows recovered before (e.g. by an earlier process).

    Examples
    --------
    Sensor 0 reports in windows 0 and 1, sensor 1 only in window 1; window 0 is closed:

    >>> from dpcloak.service.config import Deployment
    >>> from dpcloak.service.store import Store, sqlite_url
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> from dpcloak.sensors.config import network_to_dict
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> deployment = Deployment(deployment_id="abc123", network=network_to_dict(net), window_seconds=60.0,
    ...                         start=0.0, period_windows=10)
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> store = Store(sqlite_url(directory / "collector.db"))
    >>> store.migrate()
    >>> store.register(deployment)
    >>> import numpy as np
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": w, "report_id": f"r-{j}-{w}",
    ...                         "value": 5.0, "mac": "00", "received_at": 60.0 * w + 30}
    ...                        for j, w in [(0, 0), (0, 1), (1, 1)]])
    >>> releases = PeriodReleases(deployment, store, closed=[0])
    >>> releases.releases(1, present=np.array([True, True]))  # sensor 0: one report in window 0, one in 1
    2
    >>> releases.closed(1, np.array([True, True]))
    >>> releases.releases(2, present=np.array([False, True]))  # window 2 (same period): sensor 1 reaches 2 too
    2
    >>> releases.releases(10, present=np.array([True, False]))  # window 10 starts the next period
    1
    >>> releases.releases(13, present=np.array([True, False]), final_below=12)  # 10-11 take no more reports
    1
    >>> releases._upto  # the prefix moved past them (window 12 may still receive reports)
    11
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    def __init__(self, deployment: Deployment, store: Store, closed: Iterable[int]) -> None:
        self._dep, self._store = deployment, store
        self._closed = set(closed)
        self._period = -1
        self._upto = -1  # the cached prefix is the period's windows first … _upto, all closed
        self._counts = np.zeros(deployment.n_sensors, dtype=np.int64)

    def releases(self, window: int, present: NDArray[np.bool_], *, final_below: int | None = None) -> int:
        """The largest number of reports one sensor stored in ``window``'s period up to it (``present``: who
        reported for ``window``). Windows before ``final_below`` take no more reports, closed or not."""
        dep = self._dep
        period = dep.period_of(window)
        if period != self._period or window <= self._upto:  # a new period, or a window closed out of order
            if period > self._period:  # earlier periods' windows are never read again: memory stays bounded
                self._closed = {w for w in self._closed if w >= period * dep.period_windows}
            self._period, self._upto = period, period * dep.period_windows - 1
            self._counts = np.zeros(dep.n_sensors, dtype=np.int64)
        end = self._upto
        if final_below is not None and min(final_below, window) - 1 > end:
            end = min(final_below, window) - 1
            self._closed = {w for w in self._closed if w > end}  # inside the prefix: never looked up again
        while end + 1 < window and end + 1 in self._closed:
            end += 1
            self._closed.discard(end)
        if end > self._upto:  # closed windows not yet in the prefix (after a start): one range read
            for sensor, n in self._store.reports_per_sensor(dep.deployment_id, first_window=self._upto + 1,
                                                            last_window=end).items():
                self._counts[sensor] += n
            self._upto = end
        counts = self._counts + present
        for sensor, n in self._store.reports_per_sensor(dep.deployment_id, first_window=self._upto + 1,
                                                        last_window=window - 1).items():
            counts[sensor] += n
        return int(counts.max())

    def closed(self, window: int, present: NDArray[np.bool_]) -> None:
        """Record that ``window`` (with these sensors reporting) is closed: its counts are final."""
        if window == self._upto + 1 and self._dep.period_of(window) == self._period:
            self._counts += present
            self._upto = window
        elif window > self._upto:
            self._closed.add(window)


class WindowRecovery:
    """Closes windows in order and keeps the previous recovery for the warm start.

    Examples
    --------
    >>> from dpcloak.service.config import Deployment
    >>> from dpcloak.service.store import Store, sqlite_url
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> from dpcloak.sensors.config import network_to_dict
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> deployment = Deployment(deployment_id="abc123", network=network_to_dict(net), window_seconds=60.0,
    ...                         start=0.0, period_windows=10)
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> store = Store(sqlite_url(directory / "collector.db"))
    >>> store.migrate()
    >>> store.register(deployment)
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": w, "report_id": f"r-{j}-{w}",
    ...                         "value": 5.0, "mac": "00", "received_at": 60.0 * w + 30}
    ...                        for j in range(2) for w in range(2)])
    >>> closer = WindowRecovery(deployment, store)
    >>> [closer.close(w).window for w in range(2)], store.closed_windows("abc123")
    ([0, 1], [0, 1])
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    def __init__(self, deployment: Deployment, store: Store) -> None:
        self.deployment = deployment
        self.store = store
        self._previous: NetworkRecovery | None = None
        self._releases = PeriodReleases(deployment, store, store.closed_windows(deployment.deployment_id))

    def close(self, window: int, final_below: int | None = None) -> WindowRecord | None:
        """Recover and store ``window`` (once); ``None`` when nobody reported for it. Windows before
        ``final_below`` take no more reports (see :class:`PeriodReleases`)."""
        out = recover_window_record(self.deployment, self.store, window, self._previous, self._releases,
                                    final_below=final_below)
        if out is None:
            return None
        record, recovery = out
        self.store.save_window(self.deployment.deployment_id, record)
        self._releases.closed(window, recovery.present)
        self._previous = recovery
        return record


_WORKER: WindowRecovery | None = None
"""The recovery state of a recovery worker process (set by :func:`start_worker`; one per process)."""


def start_worker(deployment: dict[str, Any], db_url: str, niceness: int) -> None:
    """Initializer of the recovery process: its own deployment, database connection and lower priority.

    Recovery is CPU-bound; in its own process it does not hold the ingest process's GIL, and at a
    lower scheduling priority it yields the cores to acknowledgements. Its BLAS runs one thread (the
    solves are small dense kernels; a second thread only spins against the ingest process), and the
    network's dense model is built here, once, so the first window's recovery pays no start-up cost.

    Examples
    --------
    The collector's recovery process, here on a two-sensor deployment whose window 0 has two reports:

    >>> from dpcloak.service.config import Deployment
    >>> from dpcloak.service.store import Store, sqlite_url
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> from dpcloak.sensors.config import network_to_dict
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...                                      epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> deployment = Deployment(deployment_id="abc123", network=network_to_dict(net), window_seconds=60.0,
    ...                         start=0.0, period_windows=10)
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> store = Store(sqlite_url(directory / "collector.db"))
    >>> store.migrate()
    >>> store.register(deployment)
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": 0, "report_id": f"r-{j}",
    ...                         "value": 5.0, "mac": "00", "received_at": 30.0} for j in range(2)])
    >>> import multiprocessing
    >>> from concurrent.futures import ProcessPoolExecutor
    >>> pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
    ...                            initializer=start_worker, initargs=(deployment.public_dict(), store.url, 0))
    >>> pool.submit(worker_ready).result(timeout=120)
    True
    >>> pool.submit(close_in_worker, 0).result(timeout=120), store.closed_windows("abc123")
    (True, [0])
    >>> pool.submit(close_in_worker, 1).result(timeout=120)  # nobody reported for window 1
    False
    >>> pool.shutdown()
    >>> store.dispose()
    >>> tmp.cleanup()
    """
    global _WORKER
    _exit_with_parent()
    if niceness:
        os.nice(niceness)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    dep = Deployment.from_public_dict(deployment)
    dep.sensor_network.dense_model()
    _WORKER = WindowRecovery(dep, Store(db_url))


def worker_ready() -> bool:
    """A no-op run in the recovery process at start-up: starts it (imports, model) before the first window.

    Examples
    --------
    ``True`` in a process started with :func:`start_worker` (see its example), ``False`` elsewhere:

    >>> worker_ready()
    False
    """
    return _WORKER is not None


def _exit_with_parent() -> None:
    """End this worker when the collector that started it dies, even by SIGKILL.

    Without it a killed collector leaves its recovery process (and its database connections) behind,
    one more after every crash.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)  # a recovery cut short stored nothing: each window is stored in one transaction

    threading.Thread(target=watch, name="dpcloak-parent-watch", daemon=True).start()


def close_in_worker(window: int, final_below: int | None = None) -> bool:
    """Recover and store ``window`` in the recovery process; whether anybody reported for it.

    Windows before ``final_below`` take no more reports (see :class:`PeriodReleases`).

    Examples
    --------
    Run in a process started with :func:`start_worker` (see its example); anywhere else it refuses:

    >>> close_in_worker(0)
    Traceback (most recent call last):
        ...
    RuntimeError: close_in_worker runs in a process started with start_worker
    """
    if _WORKER is None:
        raise RuntimeError("close_in_worker runs in a process started with start_worker")
    return _WORKER.close(window, final_below) is not None

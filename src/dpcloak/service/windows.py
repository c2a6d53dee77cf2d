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
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
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
    sensors, readings = (list(column) for column in zip(*rows, strict=True))
    values = np.zeros(deployment.n_sensors)
    present = np.zeros(deployment.n_sensors, dtype=bool)
    values[sensors] = readings
    present[sensors] = True
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
    ``first … window``, without reading the whole period at every close. The counts of *final*
    windows are read once and cached: a closed (recovered) window takes no more reports (the
    collector answers 409), nor does a window past its grace period (``final_below``: the
    collector's oldest window still in grace; older ones are refused by the clock). The other windows
    before the closing one — *holes*: nobody has reported for them yet, or they are still open — are
    read at every close through the window index, which costs what they hold (usually nothing), until
    they become final. Before, the cached part was only the run of closed windows from the period's
    first, so one empty window (the sensors switched on late, a night without reports) kept the range
    open and every later close reread every report since: in the 60 s batch soak that was 41–56 % of
    the recovery process's time. Closed windows are kept as intervals and pruned once final by the
    clock, so the state stays small over months. ``closed`` are the windows recovered before (e.g. by
    an earlier process).

    Examples
    --------
    Sensor 0 reports in windows 0 and 1, sensor 1 only in window 1; window 0 is closed:

    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
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
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    def __init__(self, deployment: Deployment, store: Store, closed: Iterable[int]) -> None:
        self._dep, self._store = deployment, store
        self._closed: list[tuple[int, int]] = []  # closed windows, as sorted disjoint intervals
        for w in sorted(set(closed)):
            self._add_closed(w)
        self._period = -1
        self._upto = -1  # windows first … _upto are final (in _counts) or holes
        self._counts = np.zeros(deployment.n_sensors, dtype=np.int64)
        self._holes: list[tuple[int, int]] = []

    def releases(self, window: int, present: NDArray[np.bool_], *, final_below: int | None = None) -> int:
        """The largest number of reports one sensor stored in ``window``'s period up to it (``present``: who
        reported for ``window``). Windows before ``final_below`` take no more reports, closed or not."""
        dep = self._dep
        period = dep.period_of(window)
        first = period * dep.period_windows
        if period != self._period or window <= self._upto:  # a new period, or a hole closed after later windows
            self._period, self._upto, self._holes = period, first - 1, []
            self._counts = np.zeros(dep.n_sensors, dtype=np.int64)
        final = first if final_below is None else max(first, final_below)
        self._closed = [(a, b) for a, b in self._closed if b >= final or b >= first + dep.period_windows]
        holes, self._holes = self._holes, []
        for a, b in holes:  # holes that became final are read once more, into the cache
            if a < final:
                self._add_counts(self._counts, a, min(b, final - 1))
            if b >= final:
                self._holes.append((max(a, final), b))
        if window - 1 > self._upto:
            for a, b, is_final in self._split(self._upto + 1, window - 1, final):
                if is_final:
                    self._add_counts(self._counts, a, b)
                else:
                    self._holes.append((a, b))
            self._upto = window - 1
        counts = self._counts + present
        for a, b in self._holes:
            self._add_counts(counts, a, b)
        return int(counts.max())

    def closed(self, window: int, present: NDArray[np.bool_]) -> None:
        """Record that ``window`` (with these sensors reporting) is closed: its counts are final."""
        self._add_closed(window)
        if self._dep.period_of(window) != self._period:
            return
        if window == self._upto + 1:
            self._counts += present
            self._upto = window
        elif any(a <= window <= b for a, b in self._holes):  # a hole, closed: final from now on
            self._counts += present
            self._holes = [(x, y) for a, b in self._holes for x, y in ((a, min(b, window - 1)), (max(a, window + 1), b))
                           if x <= y]

    def _add_closed(self, window: int) -> None:
        out: list[tuple[int, int]] = []
        lo = hi = window
        for a, b in self._closed:
            if b < lo - 1 or a > hi + 1:
                out.append((a, b))
            else:
                lo, hi = min(lo, a), max(hi, b)
        out.append((lo, hi))
        self._closed = sorted(out)

    def _split(self, first: int, last: int, final: int) -> list[tuple[int, int, bool]]:
        """``first … last`` cut into runs of final windows (closed, or before ``final``) and holes."""
        runs: list[tuple[int, int, bool]] = []
        at = first
        if at < final:
            runs.append((at, min(last, final - 1), True))
            at = final
        for a, b in self._closed:
            if at > last:
                break
            if b < at:
                continue
            if a > at:
                runs.append((at, min(a - 1, last), False))
            if a <= last:
                runs.append((max(a, at), min(b, last), True))
            at = b + 1
        if at <= last:
            runs.append((at, last, False))
        return runs

    def _add_counts(self, counts: NDArray[np.int64], first: int, last: int) -> None:
        for sensor, n in self._store.reports_per_sensor(self._dep.deployment_id, first_window=first,
                                                        last_window=last).items():
            counts[sensor] += n


class WindowRecovery:
    """Closes windows in order and keeps the previous recovery for the warm start.

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
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

    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
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

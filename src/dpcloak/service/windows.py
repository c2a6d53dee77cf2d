"""Closing a window: recover its map from the reports that arrived, warm-started from the previous window.

A window closes when every sensor has reported for it, when its grace period after its end is
over, or when the analyst closes it. Its stored record holds the recovered source map, the
EMD-scale uncertainty (metres), the map's status and misfit (the residual against the one the noise
allows), the sensors that reported (missing ones are flagged and their rows dropped from the model), the
sensor the others contradict, if any (flagged as an outlier and its reading left out:
:func:`dpcloak.service.poisoning.robust_recover`), σ and the privacy spent: one window's (ε, δ) and the
composed (ε, δ) of the release windows that received reports among the policy's sliding window ending at
it (``releases_in_period`` of them: ``period_windows`` consecutive windows, at most the policy's
``releases_per_period``).
"""

from __future__ import annotations

import importlib
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from dpcloak.errors import InvalidParameterError
from dpcloak.sensors import NetworkRecovery
from dpcloak.service.config import Deployment
from dpcloak.service.poisoning import robust_recover
from dpcloak.service.store import Store, WindowRecord

log = logging.getLogger("dpcloak.service")

__all__ = ["recover_window_record", "continual_increments", "ContinualStreams", "PolicyReleases", "WindowRecovery",
           "start_worker", "close_in_worker", "worker_ready"]


def recover_window_record(deployment: Deployment, store: Store, window: int,
                          warm_start: NetworkRecovery | None = None,
                          releases: PolicyReleases | None = None, *, final_below: int | None = None,
                          streams: ContinualStreams | None = None) -> tuple[WindowRecord, NetworkRecovery] | None:
    """Recover ``window`` from its stored reports; ``None`` when no sensor reported.

    With a continual counter (``deployment.continual``) the reports are the counters' outputs, not the window's
    counts: the map is recovered from each sensor's decoded count of the window (:func:`continual_increments`;
    a sensor whose stream cannot be decoded up to the window is missing) with that count's own noise as σ, and
    the record states the counters' guarantee (one window; the policy's sliding window), not the per-window
    mechanism's.

    Returns the record and the network's recovery result (the next window's warm start). ``releases``
    counts the sliding window's release windows incrementally (default: read its rows up to ``window``);
    windows before ``final_below`` take no more reports (see :class:`PolicyReleases`); ``streams`` keeps a continual
    deployment's streams through them (:class:`ContinualStreams`).

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
    sigma, eps_window, delta_window = float(network.sigma), float(network.epsilon), float(network.delta)
    if deployment.counter is None:
        values[sensors] = readings
        present[sensors] = True
    else:
        increments, sigma = continual_increments(deployment, store, window, sensors, streams=streams,
                                                 final_below=final_below)
        if math.isnan(sigma):  # not a position of the counters (ingest refuses such reports)
            return None
        for j, increment in increments.items():
            values[j] = increment
            present[j] = True
        eps_window, delta_window = deployment.guarantee(1)
    robust = robust_recover(network, values, present, warm_start=warm_start,
                            noise_std=None if deployment.counter is None else sigma)
    result = robust.recovery
    if releases is None:
        releases = PolicyReleases(deployment, store, closed=())
    n_releases = releases.releases(window, final_below=final_below)
    eps_period, delta_period = deployment.guarantee(n_releases)
    record = WindowRecord(
        window=window, closed_at=time.time(), source_map=[float(v) for v in result.sources],
        uncertainty=_finite(result.uncertainty), uncertainty_90=_finite(result.uncertainty_90),
        reporting=[int(j) for j in np.flatnonzero(present)], missing=int(deployment.n_sensors - present.sum()),
        sigma=sigma, epsilon_window=eps_window, delta_window=delta_window,
        epsilon_period=eps_period, delta_period=delta_period, releases_in_period=n_releases,
        converged=bool(result.recovery.converged), message=str(result.recovery.message),
        outliers=[] if robust.outlier is None else [{"sensor": robust.outlier, "z": robust.outlier_z}],
        status=result.status, misfit=_finite(result.misfit), residual=_finite(result.recovery.residual),
        radius=_finite(result.radius))
    if robust.outlier is not None:
        log.warning("window %d: sensor %d's reading %.6g is %.1f sigma from what the other sensors predict: "
                    "flagged as an outlier (a faulty sensor or a stolen key) and left out of the map", window,
                    robust.outlier, values[robust.outlier], robust.outlier_z)
    return record, result


class ContinualStreams:
    """The counter streams' final part, kept across window closes so that a close reads only the windows still open.

    Windows before ``final_below`` take no new reports except catch-ups (:class:`PolicyReleases`;
    :mod:`dpcloak.service.ingest`): each sensor's decodable run of released integers through them
    (:meth:`~dpcloak.service.config.Deployment.counter_run`) is kept. A run ended by a missing final position
    takes nothing more until a catch-up fills that position's slot: every call looks up the slots of the kept runs'
    missing positions (one read through the slot index) and extends a run whose slot is filled from it through the
    kept windows. :meth:`runs` reads the rest (the windows after the kept part, up to the one being closed): the
    same runs as reading every stream from its start.

    Examples
    --------
    Sensor 0 reports windows 0-3 and sensor 1 misses window 1; windows 0-1 are final (no more reports):

    >>> import tempfile
    >>> from dpcloak.service.examples import counting_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> dep, store = counting_store(tmp.name, sensors=[0, 1], windows=4, count=5, lost=[(1, 1)])
    >>> kept = ContinualStreams(dep)
    >>> runs = kept.runs(store, [0, 1], 3, final_below=2)
    >>> kept.through, len(runs[0]), len(runs[1])  # sensor 1's run ends at its missing position 1
    (1, 4, 1)

    Sensor 1's node sends its output of window 1 late (a catch-up): the kept run goes on from it.

    >>> stream = dep.counter.stream()
    >>> late = [stream.push(5) * dep.counter.grid for _ in range(2)][1]  # a stand-in for the node's output
    >>> _ = store.insert_reports([{"deployment_id": dep.deployment_id, "sensor_id": 1, "window": 1,
    ...                            "report_id": "late-1-1", "value": late, "mac": "00", "received_at": 999.0}])
    >>> len(kept.runs(store, [1], 3, final_below=2)[1])
    4
    >>> store.dispose(); tmp.cleanup()
    """

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.through = -1  # the last final window read
        self._runs: dict[int, list[int]] = {j: [] for j in range(deployment.n_sensors)}

    def runs(self, store: Store, sensors: Iterable[int], window: int, final_below: int | None) -> dict[int, list[int]]:
        """Each sensor's decodable run of released integers through ``window`` (its stream read from position 0)."""
        dep = self.deployment
        final = -1 if final_below is None else min(int(final_below) - 1, int(window))
        if final > self.through:  # keep the newly final windows of every sensor
            read = store.sensor_streams(dep.deployment_id, sorted(self._runs), first_window=self.through + 1,
                                        last_window=final)
            self._extend(read)
            self.through = final
        self._heal(store)
        wanted = sorted({int(j) for j in sensors})
        rest = store.sensor_streams(dep.deployment_id, wanted, first_window=self.through + 1, last_window=window)
        return {j: self._runs[j] + dep.counter_run(rest[j], start=len(self._runs[j])) for j in wanted}

    def _heal(self, store: Store) -> None:
        """Extend each kept run whose missing position's slot a catch-up has filled since (class docstring)."""
        dep = self.deployment
        assert dep.counter is not None  # a ContinualStreams is made for a continual deployment only
        kept = min(dep.counter_position(self.through + 1), dep.counter.horizon)  # positions in the kept windows
        gaps = {j: dep.counter_window(len(run)) for j, run in self._runs.items() if len(run) < kept}
        if not gaps:
            return
        for found in store.find_reports(dep.deployment_id, list(gaps.items())):
            j = found.sensor_id
            self._extend(store.sensor_streams(dep.deployment_id, [j], first_window=gaps[j], last_window=self.through))

    def _extend(self, read: dict[int, list[tuple[int, float]]]) -> None:
        for j, rows in read.items():  # a run ended by a missing final position takes nothing more (counter_run)
            self._runs[j] += self.deployment.counter_run(rows, start=len(self._runs[j]))


def continual_increments(deployment: Deployment, store: Store, window: int, sensors: Iterable[int], *,
                         streams: ContinualStreams | None = None,
                         final_below: int | None = None) -> tuple[dict[int, float], float]:
    """A continual deployment's per-window counts of ``window``: each sensor's decoded increment, and its noise.

    A count sensor's report is its counter's output, not the window's count: the count of ``window`` (position t
    of the streams, :meth:`~dpcloak.service.config.Deployment.counter_position`) is the difference of the decoded
    running totals S_t − S_{t−1} (S_{−1} = 0; :meth:`~dpcloak.service.config.Deployment.counter_run` and
    :meth:`~dpcloak.privacy.continual.ContinualCounter.decode`, the same decoding as the running totals, of all
    decodable sensors' first t + 1 positions at once), whose error has standard deviation
    :meth:`~dpcloak.privacy.continual.ContinualCounter.range_std` (t, t + 1) (count units; the same for every
    sensor). Sensors of ``sensors`` (those that reported in ``window``) whose stream cannot be decoded up to t (a
    missing earlier position) are left out: they count as missing for the window. Post-processing of released
    values: no privacy spent. With ``streams`` (kept across closes) only the windows from ``final_below`` on are
    read again.

    Returns
    -------
    (dict, float)
        ``{sensor: increment}`` for the decodable sensors, and the increments' standard deviation (``nan`` when
        ``window`` is not a position of the counters: not a release window, or past their horizon).

    Examples
    --------
    Sensors 0 and 1 count 5 people in each of windows 0-3; sensor 1's report of window 1 is lost:

    >>> import tempfile
    >>> from dpcloak.service.examples import counting_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> dep, store = counting_store(tmp.name, sensors=[0, 1], windows=4, count=5, lost=[(1, 1)])
    >>> increments, sigma = continual_increments(dep, store, 3, [0, 1])
    >>> sorted(increments), abs(increments[0] - 5) < 6 * sigma, sigma == dep.counter.range_std(3, 4)
    ([0], True, True)
    >>> store.dispose(); tmp.cleanup()
    """
    counter = deployment.counter
    if counter is None:
        raise InvalidParameterError("this deployment declares no continual counter", parameter="continual")
    t = deployment.counter_position(window)
    if not deployment.is_release_window(window) or t >= counter.horizon:
        return {}, math.nan
    if streams is None:  # nothing kept: every stream read from its start (final windows matter only when kept)
        streams, final_below = ContinualStreams(deployment), None
    found = streams.runs(store, sensors, window, final_below)
    runs = {j: run for j, run in found.items() if len(run) > t}
    increments = {}
    if runs:  # one decoding of the decodable sensors' first t + 1 positions together
        totals = counter.decode(np.array([run[:t + 1] for run in runs.values()], dtype=float).reshape(len(runs), t + 1))
        for j, row in zip(runs, totals, strict=True):
            increments[j] = float(row[t] - (row[t - 1] if t else 0.0))
    return increments, counter.range_std(t, t + 1)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


class PolicyReleases:
    """How many release windows of the policy's sliding window actually received reports, kept incrementally.

    :meth:`releases` is the number of windows among ``window − W + 1 … window`` (W =
    ``period_windows``) holding at least one stored report — the windows charged as vector releases
    (:class:`~dpcloak.service.config.Deployment`) — without rereading the whole range at every
    close. Windows the collector closed (recovered) hold reports and take no more (it answers 409);
    windows before ``final_below`` (the collector's oldest window still in grace) take no more either:
    both are *final*, and a final window that was not closed is read once (through the window index,
    which costs what it holds: usually nothing). The windows still open are read at every close. The
    known windows are pruned once they leave the sliding window, so the state stays small over months.
    ``closed`` are the windows recovered before (e.g. by an earlier process).

    Examples
    --------
    Sensor 0 reports in windows 0 and 1, sensor 1 in window 3; window 0 is closed:

    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": w, "report_id": f"r-{j}-{w}",
    ...                         "value": 5.0, "mac": "00", "received_at": 60.0 * w + 30}
    ...                        for j, w in [(0, 0), (0, 1), (1, 3)]])
    >>> releases = PolicyReleases(deployment, store, closed=[0])
    >>> releases.releases(1)  # windows 0 and 1 received reports
    2
    >>> releases.closed(1)
    >>> releases.releases(3, final_below=2)  # 0, 1 and 3: one release for each window anyone reported in
    3
    >>> releases.releases(12)  # windows 3-12 (any 10 consecutive): 3 and 12
    2
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    def __init__(self, deployment: Deployment, store: Store, closed: Iterable[int]) -> None:
        self._dep, self._store = deployment, store
        self._known: set[int] = set(closed)  # final windows holding reports
        self._closed: set[int] = set(self._known)
        self._scanned = -1  # windows before it are final and, if they hold reports, in _known
        self._floor = -1  # windows before it were pruned

    def releases(self, window: int, *, final_below: int | None = None) -> int:
        """Windows among ``window − W + 1 … window`` holding reports (``window`` itself counts: it is being
        recovered from its reports). Windows before ``final_below`` take no more reports, closed or not."""
        dep, did = self._dep, self._dep.deployment_id
        lo = max(0, window - dep.period_windows + 1)
        if lo < self._floor:  # an old window closed late: count it directly
            return len(set(self._store.windows_with_reports(did, first_window=lo, last_window=window - 1))) + 1
        self._floor = lo
        self._known = {w for w in self._known if w >= lo}
        self._closed = {w for w in self._closed if w >= lo}
        self._scanned = max(self._scanned, lo)
        final = min(window, self._scanned if final_below is None else max(self._scanned, final_below))
        for a, b in self._runs(self._scanned, final - 1):  # newly final windows not closed: read once
            self._known.update(self._store.windows_with_reports(did, first_window=a, last_window=b))
        self._scanned = max(self._scanned, final)
        found = {w for a, b in self._runs(self._scanned, window - 1)  # open windows: read at every close
                 for w in self._store.windows_with_reports(did, first_window=a, last_window=b)}
        return len({w for w in self._known if w < window} | found) + 1

    def closed(self, window: int) -> None:
        """Record that ``window`` (which held reports) is closed: final from now on."""
        if window >= self._floor:
            self._known.add(window)
            self._closed.add(window)

    def _runs(self, first: int, last: int) -> list[tuple[int, int]]:
        """``first … last`` cut into runs of windows not closed."""
        runs: list[tuple[int, int]] = []
        at = first
        for w in sorted(c for c in self._closed if first <= c <= last):
            if w > at:
                runs.append((at, w - 1))
            at = w + 1
        if at <= last:
            runs.append((at, last))
        return runs


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
        self._releases = PolicyReleases(deployment, store, store.closed_windows(deployment.deployment_id))
        self._streams = None if deployment.counter is None else ContinualStreams(deployment)

    def close(self, window: int, final_below: int | None = None) -> WindowRecord | None:
        """Recover and store ``window`` (once); ``None`` when nobody reported for it. Windows before
        ``final_below`` take no more reports (see :class:`PolicyReleases`)."""
        out = recover_window_record(self.deployment, self.store, window, self._previous, self._releases,
                                    final_below=final_below, streams=self._streams)
        if out is None:
            return None
        record, recovery = out
        self.store.save_window(self.deployment.deployment_id, record)
        self._releases.closed(window)
        self._previous = recovery
        return record


_WORKER: WindowRecovery | None = None
"""The recovery state of a recovery worker process (set by :func:`start_worker`; one per process)."""


def start_worker(deployment: dict[str, Any], db_url: str, niceness: int) -> None:
    """Initializer of the recovery process: its own deployment, database connection and lower priority.

    Recovery is CPU-bound; in its own process it does not hold the ingest process's GIL, and at a
    lower scheduling priority it yields the cores to acknowledgements. Its BLAS runs one thread (the
    solves are small dense kernels; a second thread only spins against the ingest process), and the
    network's dense model is built and the solvers imported here, once, so the first window's recovery pays no
    start-up cost.

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
    # the solvers and EMD's compiled flow are imported by a recovery only: here, before the first window (the
    # ingest process never imports them)
    for module in ("dpcloak.metrics", "dpcloak.recovery"):
        importlib.import_module(module)

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

    Windows before ``final_below`` take no more reports (see :class:`PolicyReleases`).

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

"""The collector's state machine: accept reports, count them per window, close and recover windows.

Independent of the web framework (the ASGI app in :mod:`dpcloak.service.app` is a thin layer over
it). All state that matters is in the database; the in-memory counts and the set of closed windows
are rebuilt from it at start-up, so a restarted collector carries on where it stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from dpcloak.service.config import Deployment, sensor_key
from dpcloak.service.ingest import ReportError, ReportIn, Verifier
from dpcloak.service.limits import BURST, REPORTS_PER_WINDOW, SensorRateLimit
from dpcloak.service.store import Slot, Store, StoredReport, WindowRecord, storage_full
from dpcloak.service.windows import close_in_worker, start_worker, worker_ready
from dpcloak.service.writer import GroupWriter

__all__ = ["Collector", "Outcome", "Overloaded", "StorageAlarm", "STORAGE_RETRY_AFTER"]

log = logging.getLogger("dpcloak.service")

RECOVERY_NICENESS = 10
"""Scheduling priority drop of the recovery process: acknowledgements come first on a busy machine."""
READER_THREADS = 4
"""Threads running the collector's database reads off the event loop: a poll of each of two open dashboards
(the new windows, a map, the sensors and the health side by side) is read at once rather than queued."""
RECOVERY_STOP_SECONDS = 2.0
"""How long a stopping collector lets its recovery process finish the window it is on."""

Outcome = tuple[int, dict[str, Any]]
"""HTTP status and JSON body of one report's outcome."""


def _same_report(report: ReportIn, stored: StoredReport | None) -> bool:
    """Whether ``stored`` is this very report (a retry: same id, slot and value)."""
    return stored is not None and (stored.report_id, stored.sensor_id, stored.window, stored.value) == (
        report.report_id, report.sensor, report.window, report.value)


class Overloaded(Exception):
    """The collector cannot take the reports now: answer 503 with ``Retry-After``; nothing was stored.

    ``code`` says why: ``"overloaded"`` (too many reports waiting for the database) or
    ``"storage_full"`` (the database cannot write: a full disk).

    Examples
    --------
    >>> exc = Overloaded(retry_after=2)
    >>> exc.retry_after, exc.code, exc.message
    (2, 'overloaded', 'the collector is saturated; retry after 2 s')
    >>> exc.error.status, exc.error.headers()
    (503, {'Retry-After': '2'})
    """

    def __init__(self, *, retry_after: int, code: str = "overloaded", message: str | None = None) -> None:
        self.retry_after = retry_after
        self.code = code
        self.message = message or f"the collector is saturated; retry after {retry_after} s"
        super().__init__(self.message)

    @property
    def error(self) -> ReportError:
        """The 503 answered for it."""
        return ReportError(503, self.code, self.message, retry_after=self.retry_after)


STORAGE_RETRY_AFTER = 30
"""``Retry-After`` (seconds) while the database cannot write (a full disk)."""


class StorageAlarm:
    """A bounded account of a database that cannot write: one line when it starts, at most one line per
    ``every`` seconds while it lasts (how many reports and closings were refused), one when it ends.

    Examples
    --------
    >>> clock = iter([0.0, 1.0, 2.0, 70.0, 80.0]).__next__
    >>> alarm = StorageAlarm(clock=clock, every=60.0)
    >>> import logging
    >>> with_records = []
    >>> handler = logging.Handler()
    >>> handler.emit = with_records.append
    >>> log.addHandler(handler)
    >>> for _ in range(4):
    ...     alarm.refused("database or disk is full")
    >>> alarm.ok()
    >>> log.removeHandler(handler)
    >>> len(with_records), alarm.active
    (3, False)
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, every: float = 60.0) -> None:
        self.clock = clock
        self.every = every
        self.active = False
        self._since = self._last = 0.0
        self._refused = self._unlogged = 0

    def refused(self, reason: str) -> None:
        """A write failed for lack of space (the report or the closing is refused, 503 / retried)."""
        now = self.clock()
        self._refused += 1
        self._unlogged += 1
        if not self.active:
            self.active, self._since, self._last, self._unlogged = True, now, now, 0
            log.error("the database cannot write (%s): reports are answered 503 with Retry-After %d s and windows "
                      "are closed once it can; free space on the database's disk", reason, STORAGE_RETRY_AFTER)
        elif now - self._last >= self.every:
            log.error("the database still cannot write after %.0f s: %d write(s) refused since the last line",
                      now - self._since, self._unlogged)
            self._last, self._unlogged = now, 0

    def ok(self) -> None:
        """A write succeeded."""
        if self.active:
            log.warning("the database writes again after %.0f s (%d write(s) refused meanwhile)",
                        self.clock() - self._since, self._refused)
            self.active, self._refused, self._unlogged = False, 0, 0


def _reason(exc: BaseException) -> str:
    """The driver's own words for a failed write (the first line of the innermost message)."""
    inner = getattr(exc, "orig", None) or exc
    return (str(inner).strip().splitlines() or [type(inner).__name__])[0][:200]


CLOSED_BELOW_MARGIN = 600.0
"""Seconds after a window's grace period before it counts as settled for the restart mark (no report for it can
still be on its way to the database: reports are refused once the grace period is over, and committed in ms)."""


class Collector:
    """Ingest and window closing for one deployment.

    Parameters
    ----------
    deployment : Deployment
        The deployment served.
    store : Store
        Its database (migrated and registered by :meth:`start`).
    master_key : bytes
        The collector's master key (sensor keys are derived from it).
    clock : callable, default time.time
        Unix time now.
    close_interval : float, default 0.25
        Seconds between checks for windows whose grace period is over.
    max_pending : int, default 20000
        Rows allowed to wait for the database before new reports get 503 (back-pressure).
    warm_recovery : bool, default False
        Start the recovery process (imports, dense model) at :meth:`start` rather than at the first
        window close (the server does; in-process tests that never close a window do not pay for it).
    flood_rate, flood_burst : float, int, optional
        Per-sensor flood limit (:mod:`dpcloak.service.limits`): authenticated reports per second
        (default ``REPORTS_PER_WINDOW / window_seconds``) and burst (default ``BURST``); over it, 429.
    generations : mapping, optional
        Current credential generation per sensor (:func:`~dpcloak.service.config.load_generations`;
        default 0): older generations are retired.

    Security events
    ---------------
    A different authenticated report for a (sensor, window) slot that already holds one is a second
    release of one reading — a lost or restored sensor ledger, or a credential copied to a second
    device. Nothing of it enters a map: both reports are stored in ``security_events`` (the new one
    with its MAC, verifiable evidence), the credential is flagged and its later reports are refused
    (403 ``sensor_flagged``) until the sensor is re-provisioned. An identical resend stays an
    idempotent duplicate.

    Examples
    --------
    A collector saturated beyond ``max_pending`` rows refuses before checking or storing anything:

    >>> import asyncio, tempfile
    >>> from dpcloak.service.examples import two_sensor_node, two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
    >>> _, node = two_sensor_node(tmp.name)
    >>> from dpcloak.service.ingest import ReportIn
    >>> entry = node.release(12.0)  # window 0 (t = 30 s): noisy, signed and recorded in the ledger
    >>> report = ReportIn(**node.report_body(entry))
    >>> collector = Collector(deployment, store, master_key=bytes(32), max_pending=0)
    >>> try:
    ...     asyncio.run(collector.ingest([report]))
    ... except Overloaded as exc:
    ...     print("503, retry after", exc.retry_after, "s;", store.report_counts(deployment.deployment_id))
    503, retry after 1 s; {}
    >>> node.close()
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    def __init__(self, deployment: Deployment, store: Store, *, master_key: bytes,
                 clock: Callable[[], float] = time.time, close_interval: float = 0.25,
                 max_pending: int = 20_000, warm_recovery: bool = False, flood_rate: float | None = None,
                 flood_burst: int = BURST, generations: Mapping[int, int] | None = None) -> None:
        self.deployment = deployment
        self.store = store
        self.clock = clock
        self.close_interval = close_interval
        self.max_pending = max_pending
        self.warm_recovery = warm_recovery
        current = [int((generations or {}).get(j, 0)) for j in range(deployment.n_sensors)]
        keys = [sensor_key(master_key, deployment_id=deployment.deployment_id, sensor=j, generation=g)
                for j, g in enumerate(current)]

        def derive(sensor: int, generation: int) -> bytes:
            return sensor_key(master_key, deployment_id=deployment.deployment_id, sensor=sensor, generation=generation)

        self.verifier = Verifier(deployment, sensor_keys=keys, generations=current, derive=derive)
        self._full = len(keys)  # reports that fill a window
        self.limiter = SensorRateLimit(deployment.n_sensors, burst=flood_burst,
                                       rate=flood_rate or REPORTS_PER_WINDOW / deployment.window_seconds)
        self.writer = GroupWriter(store)
        self.storage = StorageAlarm()
        self._warm: Future[bool] | None = None  # the warm-up of the recovery process (:meth:`recovery_ready`)
        self._recovery_process = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=start_worker,
            initargs=(deployment.public_dict(), store.url, RECOVERY_NICENESS))
        self._reader_thread = ThreadPoolExecutor(max_workers=READER_THREADS, thread_name_prefix="dpcloak-reader")
        self.counts: dict[int, int] = {}
        self.closed: set[int] = set()
        self._open_from = 0  # windows before it are final (:meth:`_first_open`)
        self._closed_below = 0  # windows before it holding reports are closed (:meth:`_advance_closed_below`)
        self._closing: set[int] = set()
        self._close_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def recovery_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds (from any thread) for the warm recovery process to have started (imports,
        model); ``True`` once it has, when the collector does not warm it (it starts at the first window) or when the
        warm-up failed (the first window's recovery reports it): only ``False`` is worth waiting for again."""
        if self._warm is None:
            return True
        try:
            self._warm.result(timeout=timeout)
        except TimeoutError:
            return False
        except Exception:  # cancelled, or the process broke: nothing left to wait for
            return True
        return True

    @property
    def unrecovered_windows(self) -> int:
        """How many windows hold reports whose map is not yet recovered (they are recovered at the next start
        if the collector stops first)."""
        return len(self.counts)

    # --- life cycle ------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Migrate, register the deployment, rebuild the in-memory state, start the writer and the closer."""
        self.store.migrate()
        self.store.register(self.deployment)
        dep_id = self.deployment.deployment_id
        self._closed_below = self.store.closed_below(dep_id)  # the history before it is closed: not read
        self.counts = self.store.report_counts(dep_id, unclosed=True, first_window=self._closed_below)
        self.closed = set(self.store.closed_windows(dep_id, since=self._first_open(self.clock())))
        self.verifier.flagged = {(e["sensor"], e["generation"]) for e in self.store.security_events(dep_id)}
        self.writer.start()
        if self.warm_recovery:
            self._warm = self._recovery_process.submit(worker_ready)
        self._task = asyncio.get_running_loop().create_task(self._closer())

    async def stop(self) -> None:
        """Stop the closer and the writer (pending acknowledgements are committed or failed first)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.writer.stop()
        self._stop_recovery(RECOVERY_STOP_SECONDS)
        self._reader_thread.shutdown(wait=True)

    def _stop_recovery(self, timeout: float) -> None:
        """End the recovery process: it may finish its window within ``timeout`` seconds, else it is terminated.

        A terminated recovery stores nothing (its transaction is rolled back), so its window is still
        open in the database and is recovered after the next start. Waiting for it instead made a
        stop take as long as the process's start-up (imports at a low priority) or a whole recovery.
        """
        pool = self._recovery_process
        workers = list((getattr(pool, "_processes", None) or {}).values())  # Python < 3.14 has no public handle
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + timeout
        for process in workers:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in workers:
            if process.is_alive():
                process.terminate()
                process.join(timeout)

    async def run_in_reader(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a read-only database call off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self._reader_thread, fn, *args)

    # --- ingest ----------------------------------------------------------------------------------------------

    async def ingest(self, reports: list[ReportIn]) -> list[Outcome]:
        """Check, store and acknowledge reports; one outcome per report, in order.

        Raises
        ------
        Overloaded
            More than ``max_pending`` rows are waiting for the database: nothing is stored, the
            client should retry after ``Overloaded.retry_after`` seconds (HTTP 503).
        """
        if self.writer.pending_rows + len(reports) > self.max_pending:
            raise Overloaded(retry_after=1)
        now = self.clock()
        outcomes: list[Outcome | None] = [None] * len(reports)
        rows: list[dict[str, Any]] = []
        accepted: list[int] = []
        late: list[int] = []  # reports for a closed window: a retry of a stored one is still a duplicate (200)
        catch_up: set[int] = set()  # a continual counter's outputs for closed windows: stored, the map not redone
        for i, r in enumerate(reports):
            try:
                if self.verifier.check(r, now=now, closed=(r.window in self.closed or r.window in self._closing
                                                           or r.window < self._open_from)):
                    catch_up.add(i)
            except ReportError as exc:
                outcomes[i] = (exc.status, exc.body())
                if exc.code == "window_closed":
                    late.append(i)
                continue
            wait = self.limiter.take(r.sensor)  # authenticated: charge this sensor's flood allowance
            if wait:
                after = self.limiter.retry_after(wait)
                outcomes[i] = (429, ReportError(429, "rate_limited", f"sensor {r.sensor} sends too fast; retry "
                                                f"after {after} s", "sensor", retry_after=after).body())
                continue
            accepted.append(i)
            rows.append({"deployment_id": r.deployment, "sensor_id": r.sensor, "window": r.window,
                         "report_id": r.report_id, "value": r.value, "received_at": now})
        if rows:
            try:
                new = await self.writer.submit(rows)  # queued before any await: closing waits for it
            except Exception as exc:
                if not storage_full(exc):
                    raise
                self.storage.refused(_reason(exc))
                raise Overloaded(retry_after=STORAGE_RETRY_AFTER, code="storage_full", message=(
                    f"the collector's database cannot write (disk full); nothing was stored; retry after "
                    f"{STORAGE_RETRY_AFTER} s")) from None
            self.storage.ok()
            conflicts = []
            for i in accepted:
                r = reports[i]
                if (r.sensor, r.window) in new:
                    new.discard((r.sensor, r.window))  # a second copy in the same batch is a duplicate
                    outcomes[i] = (201, {"status": "stored", "report_id": r.report_id,
                                         **({"catch_up": True} if i in catch_up else {})})
                    if i not in catch_up:
                        self._count(r.window)
                else:
                    conflicts.append(i)
            if conflicts:
                await self._resolve_conflicts(reports, conflicts, outcomes)
        if late:
            await self._acknowledge_retries(reports, late, outcomes)
        return [o for o in outcomes if o is not None]

    def _count(self, window: int) -> None:
        if window in self.closed:  # committed before the window's closing barrier: already in its recovery
            return
        count = self.counts[window] = self.counts.get(window, 0) + 1
        if count >= self._full:
            self._wake.set()

    async def _resolve_conflicts(self, reports: list[ReportIn], conflicts: list[int],
                                 outcomes: list[Outcome | None]) -> None:
        """A report whose (sensor, window) slot is taken: an idempotent retry (200) or a security event (409)."""
        stored = await self._stored_in_slots(reports, conflicts)
        for i in conflicts:
            r, other = reports[i], stored.get((reports[i].sensor, reports[i].window))
            if _same_report(r, other):
                outcomes[i] = (200, {"status": "duplicate", "report_id": r.report_id})
            elif other is not None:
                outcomes[i] = await self._security_event(r, other)
            else:  # the slot's report is not readable yet (another request's commit): the sensor retries
                outcomes[i] = (409, ReportError(409, "conflict", f"sensor {r.sensor} already reported for window "
                                                f"{r.window}", "window").body())

    async def _acknowledge_retries(self, reports: list[ReportIn], late: list[int],
                                   outcomes: list[Outcome | None]) -> None:
        """A retry of a stored report whose acknowledgement was lost (crash) is 200 even once its window closed;
        a different report for a stored slot is a security event there too."""
        stored = await self._stored_in_slots(reports, late)
        for i in late:
            other = stored.get((reports[i].sensor, reports[i].window))
            if _same_report(reports[i], other):
                outcomes[i] = (200, {"status": "duplicate", "report_id": reports[i].report_id})
            elif other is not None:
                outcomes[i] = await self._security_event(reports[i], other)

    async def _security_event(self, r: ReportIn, other: StoredReport) -> Outcome:
        """Keep both reports of a slot as evidence, flag the credential, answer 409 (class docstring)."""
        self.verifier.flagged.add((r.sensor, r.generation))
        log.warning("security event: sensor %d (credential generation %d) sent a second, different report for "
                    "window %d; both kept, the sensor is refused from now on", r.sensor, r.generation, r.window)
        await self.run_in_reader(functools.partial(
            self.store.record_event, self.deployment.deployment_id, sensor=r.sensor, generation=r.generation,
            window=r.window, kind="slot_conflict", detected_at=self.clock(),
            stored={"report_id": other.report_id, "value": other.value, "received_at": other.received_at},
            received={"report_id": r.report_id, "value": r.value, "mac": r.mac, "key_id": r.key_id}))
        return (409, ReportError(409, "conflict", f"sensor {r.sensor} already reported a different value for window "
                                 f"{r.window} (report id {other.report_id}): a second release of one reading is a "
                                 "security event; both are kept, and the sensor's reports are refused until it is "
                                 "re-provisioned", "window").body())

    async def _stored_in_slots(self, reports: list[ReportIn], which: list[int]) -> dict[Slot, StoredReport]:
        slots = [(reports[i].sensor, reports[i].window) for i in which]
        found = await self.run_in_reader(self.store.find_reports, self.deployment.deployment_id, slots)
        return {(s.sensor_id, s.window): s for s in found}

    # --- windows ---------------------------------------------------------------------------------------------

    async def _closer(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.close_interval)
            self._wake.clear()
            try:
                await self.close_due()
            except Exception as exc:  # keep the collector up; the failure is logged, the window retried next tick
                if storage_full(exc):
                    self.storage.refused(_reason(exc))  # a bounded account, not a traceback every tick
                else:
                    log.exception("closing windows failed")

    def _first_open(self, now: float) -> int:
        """The oldest window whose grace period is not over at ``now`` (older ones are refused), never moving back.

        A clock stepped back must not reopen a window whose grace period was over: it may have been
        recovered and dropped from ``closed``, and a report stored for it then would never reach its map.
        """
        dep = self.deployment
        self._open_from = max(self._open_from, dep.window_at(now - dep.grace_seconds), 0)
        return self._open_from

    async def close_due(self) -> None:
        """Close every window that is full or whose grace period is over.

        The in-memory state stays bounded over months: a closed window leaves ``counts``, and leaves
        ``closed`` once its grace period is over (the verifier then refuses it by the clock alone).
        """
        dep, now = self.deployment, self.clock()
        due = sorted(w for w, c in self.counts.items()
                     if c >= dep.n_sensors or now >= dep.window_end(w) + dep.grace_seconds)
        first_open = self._first_open(now)
        for w in due:
            await self._close(w, first_open)
        if self.closed and min(self.closed) < first_open:
            self.closed = {w for w in self.closed if w >= first_open}
        await self._advance_closed_below(now)

    async def _advance_closed_below(self, now: float) -> None:
        """Move the stored mark below which every window holding reports is closed (what a restart reads from).

        Candidates are the windows whose grace period ended :data:`CLOSED_BELOW_MARGIN` seconds ago: no
        collector takes a report for them any more, and any it took is committed. Their reports not in a
        closed window are counted through the slot index (only the windows since the last mark: each report
        is read once); windows found (left by a failed close, or by another collector on the same database
        that stopped) join ``counts``, are closed here, and hold the mark back until they are.
        """
        dep = self.deployment
        target = dep.window_at(now - dep.grace_seconds - CLOSED_BELOW_MARGIN)
        if target <= self._closed_below:
            return
        left = await self.run_in_reader(functools.partial(
            self.store.report_counts, dep.deployment_id, unclosed=True, first_window=self._closed_below, below=target))
        for w, c in left.items():
            if w not in self.closed and w not in self._closing:
                self.counts.setdefault(w, c)
        mark = min(left, default=target)
        if mark > self._closed_below:
            await self.run_in_reader(self.store.set_closed_below, dep.deployment_id, mark)
            self._closed_below = mark

    async def _close(self, window: int, first_open: int) -> None:
        """Stop accepting reports for ``window``, wait for the pending ones, recover and store it.

        ``first_open``: windows before it are past their grace period and take no more reports (the
        recovery process then counts the period's releases without rereading them).
        """
        async with self._close_lock:
            if window not in self.closed:
                self._closing.add(window)
                try:
                    await self.writer.submit([])  # barrier: every report accepted before this is committed
                    stored = await asyncio.get_running_loop().run_in_executor(self._recovery_process,
                                                                              close_in_worker, window, first_open)
                    if stored:  # a window nobody reported for stays open: later reports are not refused
                        self.closed.add(window)
                    self.counts.pop(window, None)
                finally:
                    self._closing.discard(window)

    async def close_window(self, window: int) -> WindowRecord | None:
        """Close ``window`` now (:meth:`close_due` does it when it is due) and read back its record."""
        await self._close(window, self._first_open(self.clock()))
        records = await self.run_in_reader(lambda: list(self.store.windows(self.deployment.deployment_id,
                                                                           window=window)))
        return records[0] if records else None

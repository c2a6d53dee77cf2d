"""The sensor node: privatize locally, enforce the budget, sign, deliver with retries.

A node holds only its own credential (its id and key) and the deployment's public parameters.
For each reading it

1. refuses a window that is not a release window of the deployment's policy (:class:`ReleaseSkipped`,
   saying when the next one starts), one at or before the last window it released, or one ahead of
   its clock by more than the deployment's stated skew (its clock is monotonic, anchored at start-up:
   :class:`NodeClock`); nothing is released then;
2. privatizes the reading with the network's exact discrete Gaussian sampler fed by the OS CSPRNG
   (``SensorNetwork.privatize_reading``; the reading is clipped to the declared range first);
3. records the noisy value, a fresh random report id and the MAC in its ledger, durably, *before*
   sending (:mod:`dpcloak.service.ledger`);
4. sends it, retrying on network errors, 429 and 5xx with exponential backoff and jitter, capped at
   ``max_delay`` (by default for ever: a node is a daemon that outlives collector restarts); every
   retry carries the same report id and value, so the collector stores it at most once.

With a continual counter (``Deployment.continual``) step 2 pushes the window's count into the sensor's counter
stream and releases its output. Release windows the node missed (it was down, or started late) are pushed as
zero counts and their outputs recorded like releases, and :meth:`SensorNode.catch_up` sends every recorded
output the collector has not acknowledged (these, lost reports, reports refused as late), unchanged, in
bounded batches: decoding a sensor's running totals needs every position of its stream, and the counter's
guarantee already covers every output.

A reading that cannot be released (not a number, NaN or infinite, a second reading for a window,
one the budget or the range refuses) is skipped with a one-line notice naming its line and why; the
node goes on. An answer no resend can change for this node — a wrong key, URL path or deployment,
a retired or flagged credential — stops it (:class:`NodeRefusedError`) instead of releasing more
readings into a collector that refuses them.

Privacy guarantee
-----------------
What leaves the node is the output of the network's mechanism on one coordinate, at most once per
window and only in the public release windows, so any ``period_windows`` consecutive windows hold at
most ``releases_per_period`` vector releases and the deployment's policy holds
(:class:`~dpcloak.service.config.Deployment`) for every node that follows it, whichever sensors report
in which window. A fixed seed is not accepted: the sampler is the OS CSPRNG.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import secrets
import ssl
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from dpcloak._validation import check_int, check_real
from dpcloak.errors import BudgetExceededError, DpcloakError, InvalidParameterError
from dpcloak.service.auth import sign_report
from dpcloak.service.config import Deployment, SensorCredential, schedule_words
from dpcloak.service.ledger import LedgerEntry, SensorLedger

if TYPE_CHECKING:
    from dpcloak.privacy.continual import PrefixSumStream

__all__ = ["SensorNode", "CATCH_UP_BATCH", "NodeClock", "admit_release", "deliver_batch", "ReleaseSkipped",
           "Delivery", "DeliveryError", "NodeRefusedError", "Reading", "read_values", "tail_csv"]

_RETRY_STATUS = {429, 500, 502, 503, 504}
CATCH_UP_BATCH = 100
"""The most recorded releases :meth:`SensorNode.catch_up` sends in one request (one call per window in
:meth:`SensorNode.run`)."""
log = logging.getLogger("dpcloak.service.node")
_REFUSED_FOR_GOOD = {
    "window_in_future": "this node's clock runs ahead of the collector's by more than the deployment's stated skew: "
                        "check its time source",
    "window_closed": "the report arrived after its window's grace period: this node's clock runs behind, or the "
                     "report waited too long to be delivered",
    "outside_policy": "the window is not a release window of the deployment's policy: check the node's "
                      "deployment.json",
}
"""Collector answers that no resend can change (the clock or the schedule is at fault), with what to check."""
_STOP_STATUS = {400, 401, 403, 404, 405, 413, 415}
_STOP_CODES = {"wrong_configuration", "unknown_deployment", "malformed", "conflict"}
"""Answers that no resend and no later reading can change: the node's key, URL or deployment is wrong, its
credential is retired or flagged (a security event)."""


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certificates verified), made once per process: loading the trust store takes
    tens of milliseconds, which every node of a process (the demo runs 40) would otherwise pay again."""
    return httpx.create_ssl_context()


class NodeRefusedError(DpcloakError):
    """The collector refuses this node's reports for a reason no resend can change (wrong key, URL, deployment,
    retired or flagged credential): the node stops rather than release more readings.

    Examples
    --------
    >>> issubclass(NodeRefusedError, DpcloakError)
    True
    """


@dataclass(frozen=True)
class Reading:
    """One reading from an input, with where it came from (``"line 3"``) and why it is unusable, if it is.

    Examples
    --------
    >>> Reading(4.5, "line 2"), Reading(float("nan"), "line 3", "reading must be a number, got 'x'").problem
    (Reading(value=4.5, where='line 2', problem=None), "reading must be a number, got 'x'")
    """

    value: float
    where: str
    problem: str | None = None


class DeliveryError(DpcloakError):
    """A report could not be delivered within the retry budget (it stays pending in the ledger).

    Examples
    --------
    >>> issubclass(DeliveryError, Exception)
    True
    >>> str(DeliveryError("window 4: collector unreachable after 6 attempts"))
    'window 4: collector unreachable after 6 attempts'
    """


@dataclass(frozen=True)
class Delivery:
    """Outcome of sending one report: ``stored``, ``duplicate`` or ``rejected`` (with the collector's answer).

    Examples
    --------
    >>> d = Delivery(window=4, report_id="r-4", outcome="stored", http_status=200, body={"status": "stored"})
    >>> d.outcome, d.http_status
    ('stored', 200)
    """

    window: int
    report_id: str
    outcome: str
    http_status: int
    body: dict[str, Any]


class ReleaseSkipped(BudgetExceededError):
    """The release policy lets no sensor release in this window: nothing released; it says when it may next.

    ``next_window`` is the next release window (``None`` once the lifetime cap is reached) and
    ``next_time`` the Unix time at which it starts.

    Examples
    --------
    >>> skip = ReleaseSkipped("window 4 is not a release window", window=4, next_window=6, next_time=360.0)
    >>> skip.next_window, skip.next_time, isinstance(skip, BudgetExceededError)
    (6, 360.0, True)
    """

    def __init__(self, message: str, *, window: int, next_window: int | None, next_time: float | None) -> None:
        super().__init__(message)
        self.window = window
        self.next_window = next_window
        self.next_time = next_time


class NodeClock:
    """Unix time from a monotonic clock anchored at start-up: the wall clock is read once.

    Changing the wall clock while the node runs (by hand, by an attacker with access to it, or by a
    step of the time service) does not move the node's windows; a slewed monotonic clock still follows
    the time service's frequency corrections. ``offset()`` is how far the wall clock has drifted
    from the node's time since (the node tells its operator past the deployment's stated skew).

    Examples
    --------
    >>> ticks = iter([100.0, 100.5])
    >>> clock = NodeClock(wall=lambda: 5000.0, monotonic=lambda: next(ticks))
    >>> clock()  # 0.5 s after start-up, whatever the wall clock says now
    5000.5
    """

    def __init__(self, *, wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._wall, self._monotonic = wall, monotonic
        self._anchor_wall, self._anchor_mono = wall(), monotonic()

    def __call__(self) -> float:
        return self._anchor_wall + (self._monotonic() - self._anchor_mono)

    def offset(self) -> float:
        """Wall clock minus the node's time, in seconds."""
        return self._wall() - self()


class SensorNode:
    """One sensor of a deployment.

    Parameters
    ----------
    deployment : Deployment
        The deployment's public parameters (``deployment.json``).
    credential : SensorCredential
        This sensor's id and key.
    ledger : SensorLedger or path
        Its persistent ledger (opened with the credential: a missing, edited, older or foreign ledger is
        refused, :mod:`dpcloak.service.ledger`).
    url : str
        Base URL of the collector (``http://host:port``).
    clock : callable, optional
        Unix time now (decides the window of a reading). Default: a :class:`NodeClock` started now.
    attempts : int or None, default 6
        Sending attempts per report before :class:`DeliveryError`; ``None``: retry until delivered
        (what ``dpcloak sensor run`` does).
    backoff : float, default 0.1
        First retry delay in seconds; it doubles with each failed attempt up to ``max_delay``, and each
        wait is drawn uniformly from [delay/2, delay] (jitter: restarted sensors do not retry in step).
        A ``Retry-After`` from the collector lengthens it.
    max_delay : float, default 30
        Longest wait between two attempts, in seconds.
    timeout : float, default 10
        Per-request timeout in seconds.
    sleep : callable, default time.sleep
        How the node waits between attempts (a test passes a fake clock's).

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> from dpcloak.service.config import load_credential, write_deployment
    >>> _ = write_deployment(directory, deployment)
    >>> node = SensorNode(deployment=deployment, credential=load_credential(directory / "sensors" / "sensor-0.json"),
    ...                   ledger=directory / "ledger-0.db", url="http://127.0.0.1:9", clock=lambda: 30.0)
    >>> entry = node.release(12.0)  # window 0 at t = 30 s: noisy value, MAC, recorded before sending
    >>> entry.window, entry.acknowledged, [e.window for e in node.ledger.pending()]
    (0, False, [0])
    >>> sorted(node.report_body(entry))
    ['deployment', 'fingerprint', 'generation', 'key_id', 'mac', 'report_id', 'sensor', 'value', 'window']
    >>> node.close()
    >>> tmp.cleanup()
    """

    def __init__(self, *, deployment: Deployment, credential: SensorCredential, ledger: SensorLedger | Path | str,
                 url: str, clock: Callable[[], float] | None = None, attempts: int | None = 6,
                 backoff: float = 0.1, max_delay: float = 30.0, timeout: float = 10.0,
                 transport: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        if credential.deployment_id != deployment.deployment_id or credential.fingerprint != deployment.fingerprint:
            raise InvalidParameterError(
                f"the credential of sensor {credential.sensor} is for deployment {credential.deployment_id} "
                f"(fingerprint {credential.fingerprint[:12]}…), not {deployment.deployment_id} "
                f"(fingerprint {deployment.fingerprint[:12]}…)", parameter="credential", got=credential.deployment_id)
        if not 0 <= credential.sensor < deployment.n_sensors:
            raise InvalidParameterError(f"sensor must be in [0, {deployment.n_sensors - 1}], got {credential.sensor}",
                                        parameter="sensor")
        self.deployment = deployment
        self.credential = credential
        self.sensor = credential.sensor
        self.ledger = ledger if isinstance(ledger, SensorLedger) else SensorLedger(ledger, credential=credential)
        self.clock: Callable[[], float] = NodeClock() if clock is None else clock
        entries = self.ledger.all()
        self._last_window = entries[-1].window if entries else -1
        self._stream = None if deployment.counter is None else _restored_stream(deployment, entries)
        if self._stream is not None and self._stream.windows > len(entries):  # one record per pushed position now
            log.warning("sensor %d: its ledger holds %d counter output(s) but its stream is at position %d: %d "
                        "output(s) pushed by an older version were never recorded and cannot be sent (a redraw would "
                        "be a second release); the collector can decode this sensor's running totals only up to the "
                        "first of them - reprovision the sensor to start a new stream", self.sensor, len(entries),
                        self._stream.windows, self._stream.windows - len(entries))
        self.attempts = None if attempts is None else check_int("attempts", attempts, minimum=1)
        self.backoff = check_real("backoff", backoff, low=0.0)
        self.max_delay = check_real("max_delay", max_delay, low=0.0)
        self.sleep = sleep
        base = httpx.URL(url)  # refused here if malformed, as the client would
        self._connect = lambda: httpx.Client(base_url=base, timeout=timeout, transport=transport,
                                             verify=_tls_context())
        self._client: httpx.Client | None = None  # made at the first send, not at start-up

    @property
    def last_window(self) -> int:
        """The last window this sensor released (−1: none); it releases only in later windows."""
        return self._last_window

    def close(self) -> None:
        """Close the HTTP client and the ledger."""
        if self._client is not None:
            self._client.close()
        self.ledger.close()

    def release(self, value: float, *, window: int | None = None) -> LedgerEntry:
        """Privatize ``value`` for ``window`` (default: the current one) and record it; nothing is sent yet.

        The window must be a release window of the deployment's policy, after every window this
        sensor released before, and no later than its clock allows
        (:meth:`~dpcloak.service.config.Deployment.latest_window`).

        Raises
        ------
        ReleaseSkipped
            ``window`` is not a release window (a :class:`~dpcloak.errors.BudgetExceededError`
            saying when the next one starts); nothing is released.
        BudgetExceededError
            The budget period's count is spent (nothing is released).
        InvalidParameterError
            The window is before the start, ahead of the clock, or not after the last window released.
        """
        dep = self.deployment
        now = self.clock()
        w = dep.window_at(now) if window is None else int(window)
        period, limit = admit_release(dep, sensor=self.sensor, window=w, now=now, last_window=self._last_window,
                                      released=self.ledger.entry(w) is not None,
                                      spent_in_period=self.ledger.spent_in_period(dep.period_of(w)))
        low, high = dep.release_spec.reading_range
        if math.isfinite(value) and not low <= value <= (math.inf if high is None else high):
            log.warning("sensor %d, window %d: reading %r is outside the declared reading range [%g, %s]: clipped "
                        "to it before the noise (the guarantee's sensitivity is that of the clipped range; refusing "
                        "would make whether a report is sent depend on the raw reading) - check the sensor",
                        self.sensor, w, value, low, "no limit" if high is None else f"{high:g}")
        stream = self._stream
        if stream is None:
            entry = self._record(w, dep.release_spec.release_reading(value), None, period=period, limit=limit)
        else:  # the running total's counter: the window's integer output with its correlated exact noise
            self._record_missed(stream, w)
            entry = self._push(stream, w, dep.release_spec.grid_cell(value), period=period, limit=limit)
        self._last_window = w
        return entry

    def _record(self, window: int, value: float, state: str | None, *, period: int, limit: int) -> LedgerEntry:
        """Sign ``value`` for ``window`` with a fresh report id and record it durably (nothing is sent yet)."""
        dep = self.deployment
        report_id = secrets.token_hex(16)
        mac = sign_report(self.credential.key, deployment_id=dep.deployment_id, fingerprint=dep.fingerprint,
                          sensor=self.sensor, window=window, report_id=report_id, value=value)
        entry = LedgerEntry(window=window, period=period, report_id=report_id, value=value, mac=mac,
                            acknowledged=False, counter=state)
        if not self.ledger.record(entry, limit=limit):
            raise BudgetExceededError(f"sensor {self.sensor}: budget period {period} filled up concurrently",
                                      parameter="sensor")
        return entry

    def _push(self, stream: PrefixSumStream, window: int, count: float, *, period: int, limit: int) -> LedgerEntry:
        """Push ``count`` as ``window``'s position of the counter stream and record the output V·g (exact in a
        double) with the stream's state after it, in one ledger record. Not recorded: the stream goes back to its
        recorded state (the drawn noise never left the node)."""
        before = stream.to_bytes()
        try:
            noisy = float(stream.push(count)) * stream.counter.grid
            return self._record(window, noisy, stream.to_bytes().hex(), period=period, limit=limit)
        finally:
            if self.ledger.entry(window) is None:
                self._stream = type(stream).from_bytes(before)

    def _record_missed(self, stream: PrefixSumStream, window: int) -> None:
        """Record a catch-up release for each release window before ``window`` whose position this node has not
        pushed (it was down, or started late): a zero count, its output recorded like any release and sent late
        (:meth:`catch_up`), so the collector can decode this sensor's running totals past the gap.

        The counter's guarantee covers every one of its ``horizon`` outputs, so releasing them costs nothing
        more; each is recorded before it can be sent, so a crash resends it unchanged and never redraws it."""
        dep = self.deployment
        position = dep.counter_position(window)
        if stream.windows < position:
            log.warning("sensor %d: window %d: %d release window(s) before it were not released by this node: "
                        "recorded as zero counts and sent late (catch-up) so the running total stays decodable",
                        self.sensor, window, position - stream.windows)
        while stream.windows < position:
            missed = dep.counter_window(stream.windows)
            self._push(stream, missed, 0, period=dep.period_of(missed), limit=dep.releases_per_period)

    def report_body(self, entry: LedgerEntry) -> dict[str, Any]:
        """The JSON body of a recorded release."""
        return {"deployment": self.deployment.deployment_id, "fingerprint": self.deployment.fingerprint,
                "sensor": self.sensor, "key_id": self.sensor, "generation": self.credential.generation,
                "window": entry.window, "report_id": entry.report_id, "value": entry.value, "mac": entry.mac}

    def deliver(self, entry: LedgerEntry) -> Delivery:
        """Send a recorded release until the collector answers (class docstring), and note an acknowledgement.

        Raises
        ------
        DeliveryError
            After ``attempts`` failed attempts (the release stays pending in the ledger).
        """
        delay, tries = min(self.backoff, self.max_delay), 0
        while True:
            answer = self._attempt(entry)
            if isinstance(answer, Delivery):
                return answer
            last, retry_after = answer
            tries += 1
            if self.attempts is not None and tries >= self.attempts:
                raise DeliveryError(f"sensor {self.sensor}: report for window {entry.window} not delivered after "
                                    f"{self.attempts} attempts ({last}); it stays in the ledger and is resent by "
                                    "flush()")
            if tries == 1 or tries % 10 == 0:
                log.warning("sensor %d: report for window %d not delivered (%s, attempt %d); retrying with backoff",
                            self.sensor, entry.window, last, tries)
            self.sleep(max(retry_after, random.uniform(delay / 2, delay)))
            delay = min(2 * delay, self.max_delay)

    def _attempt(self, entry: LedgerEntry) -> Delivery | tuple[str, float]:
        """One sending attempt: the collector's answer, or (what failed, the Retry-After in seconds) to retry."""
        try:
            if self._client is None:
                self._client = self._connect()
            resp = self._client.post("/api/v1/reports", json=self.report_body(entry))
        except httpx.TransportError as exc:
            return f"{type(exc).__name__}: {exc}", 0.0
        if resp.status_code in _RETRY_STATUS:
            return f"HTTP {resp.status_code}", _retry_after(resp, self.max_delay)
        return self.settle(entry, resp.status_code, _json_body(resp))

    def settle(self, entry: LedgerEntry, status: int, body: dict[str, Any]) -> Delivery:
        """Note the collector's final answer (``status``, ``body``) to the report of ``entry``: acknowledged when
        stored or a duplicate, refused for good when no resend can change it (the ledger records either)."""
        if status in (200, 201):
            self.ledger.acknowledge(entry.window)
            return Delivery(entry.window, entry.report_id, "stored" if status == 201 else "duplicate", status, body)
        code = body.get("error")
        if code in _REFUSED_FOR_GOOD:
            self.ledger.refuse(entry.window, str(code))
            log.warning("sensor %d: the collector refused the report for window %d for good (%s: %s); %s. "
                        "It counts as spent and is not resent", self.sensor, entry.window, code,
                        body.get("message", ""), _REFUSED_FOR_GOOD[str(code)])
        return Delivery(entry.window, entry.report_id, "rejected", status, body)

    def _check_refusal(self, delivery: Delivery) -> None:
        """Raise :class:`NodeRefusedError` for an answer no resend can change (module docstring)."""
        code = delivery.body.get("error")
        if delivery.outcome == "rejected" and (delivery.http_status in _STOP_STATUS or code in _STOP_CODES):
            message = str(delivery.body.get("message", "")) or "no explanation given"
            raise NodeRefusedError(
                f"the collector refused sensor {self.sensor}'s report for window {delivery.window}: HTTP "
                f"{delivery.http_status} {code or ''} ({message}); check the credential file, --deployment and "
                "--url (the base URL of the collector); stopping")

    def submit(self, value: float, *, window: int | None = None) -> Delivery:
        """:meth:`release` then :meth:`deliver`."""
        return self.deliver(self.release(value, window=window))

    def flush(self) -> list[Delivery]:
        """Resend every release neither acknowledged nor refused for good (unchanged).

        Raises
        ------
        NodeRefusedError
            The collector refuses this node's reports for good (wrong key, URL, deployment; retired or
            flagged credential).
        """
        out = []
        for entry in self.ledger.pending():
            out.append(self.deliver(entry))
            self._check_refusal(out[-1])
        return out

    def catch_up(self, *, limit: int = CATCH_UP_BATCH) -> list[Delivery]:
        """Send up to ``limit`` of the recorded releases the collector has not acknowledged, oldest first, in one
        batch request (:func:`deliver_batch`: its retries and backoff), unchanged.

        With a continual counter these are what the collector needs to decode this sensor's running totals past
        a gap: the catch-up releases of the release windows the node missed (recorded at its next release) and
        reports that were lost or refused as late (``window_closed``: a continual collector takes a counter
        output for a closed window into its slot, :mod:`dpcloak.service.ingest`). Without one, the pending
        releases (:meth:`flush`'s, in batches). Returns one :class:`Delivery` per report answered.

        Raises
        ------
        DeliveryError
            The batch was not answered after the retries (the releases stay in the ledger, for the next call).
        NodeRefusedError
            The collector refuses this node's reports for good.
        """
        limit = check_int("limit", limit, minimum=1)
        late = {"window_closed"} if self._stream is not None else set()
        due = [e for e in self.ledger.all() if not e.acknowledged and (e.refused is None or e.refused in late)]
        if not due:
            return []
        if self._client is None:
            self._client = self._connect()
        out = deliver_batch([(self, e) for e in due[:limit]], client=self._client, backoff=self.backoff,
                            sleep=self.sleep)
        for delivery in out:
            self._check_refusal(delivery)
        return out

    def run(self, readings: Iterable[float | Reading] | Callable[[], float], *, windows: int | None = None,
            on_delivery: Callable[[Delivery], None] | None = None,
            on_skip: Callable[[str], None] | None = None) -> int:
        """Send readings as they come, at most one per window; every reading not sent is reported to ``on_skip``.

        ``readings`` is an iterable (stdin, a CSV tail: floats or :class:`Reading`) or a callback called
        once per window. Stops at the end of the iterable or after ``windows`` windows; returns the number
        of releases sent. A reading that is not a finite number, a second reading for a window and one the
        node refuses (budget, range, a window that is not a release window of the policy: the notice says
        when the next one starts) are skipped with a notice ``"line 2: window 17 already has a reading;
        skipped"``, and the node goes on. A release is sampled when its reading arrives but sent at the end
        of its window, so when the report leaves does not depend on how long the exact sampler took (which
        grows with the noise drawn).

        Raises
        ------
        NodeRefusedError
            The collector refuses this node's reports for good (wrong key, URL, deployment; retired or
            flagged credential).
        """
        source: Iterator[float | Reading] = iter(readings, None) if callable(readings) else iter(readings)
        sent = 0
        first = self.deployment.window_at(self.clock())
        for k, item in enumerate(source, start=1):
            reading = item if isinstance(item, Reading) else Reading(float(item), f"reading {k}")
            w = self.deployment.window_at(self.clock())
            if windows is not None and w >= first + windows:
                break
            problem = reading.problem
            if problem is None and not math.isfinite(reading.value):
                problem = f"reading {reading.value!r} is not a finite number"
            if problem is None and self.ledger.entry(w) is not None:
                problem = f"window {w} already has a reading"
            if problem is None:
                try:
                    entry = self.release(reading.value, window=w)
                except DpcloakError as exc:
                    problem = str(exc)
                else:
                    self._sleep_until(self.deployment.window_end(w))  # the report leaves on the window's schedule
                    delivery = self.deliver(entry)
                    sent += 1
                    if on_delivery is not None:
                        on_delivery(delivery)
                    self._check_refusal(delivery)
                    if self._stream is not None:
                        self._catch_up_once()
            if problem is not None:
                log.info("sensor %d, %s: %s; skipped", self.sensor, reading.where, problem)
                if on_skip is not None:
                    on_skip(f"{reading.where}: {problem}; skipped")
            if callable(readings):
                self._sleep_until(self.deployment.window_end(w))
        return sent

    def _catch_up_once(self) -> None:
        """:meth:`catch_up` in :meth:`run`: an undelivered batch waits for the next window (it stays recorded)."""
        try:
            self.catch_up()
        except DeliveryError as exc:
            log.warning("sensor %d: catch-up releases not delivered (%s); retried after the next window",
                        self.sensor, exc)

    def _sleep_until(self, t: float) -> None:
        """Sleep until the node's clock reads ``t`` (at once if it already does)."""
        self.sleep(max(0.0, t - self.clock()))


def _restored_stream(deployment: Deployment, entries: Sequence[LedgerEntry]) -> PrefixSumStream:
    """The counter stream as the ledger's last release left it (a fresh one before any release)."""
    from dpcloak.privacy.continual import PrefixSumStream

    counter = deployment.counter
    assert counter is not None
    if not entries:
        return counter.stream()
    if entries[-1].counter is None:
        raise InvalidParameterError(f"the ledger's last release (window {entries[-1].window}) holds no counter state, "
                                    "but the deployment declares a continual counter", parameter="ledger")
    stream = PrefixSumStream.from_bytes(bytes.fromhex(entries[-1].counter))
    c = stream.counter
    if (c.method, c.horizon, c.epsilon, c.delta, c.sensitivity) != (counter.method, counter.horizon, counter.epsilon,
                                                                   counter.delta, counter.sensitivity):
        raise InvalidParameterError(f"the ledger's counter state is for {c!r}, the deployment declares {counter!r}",
                                    parameter="ledger")
    return stream


def _retry_after(resp: httpx.Response, longest: float) -> float:
    """The answer's ``Retry-After`` in seconds (at most ``longest``; 0 when absent)."""
    retry_after = resp.headers.get("Retry-After", "")
    return min(float(retry_after), longest) if retry_after.isdigit() else 0.0


def _json_body(resp: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object ({} when it is not one)."""
    try:
        body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
    except ValueError:
        body = {}
    return body if isinstance(body, dict) else {}


def deliver_batch(releases: Sequence[tuple[SensorNode, LedgerEntry]], *, client: httpx.Client, attempts: int = 3,
                  backoff: float = 0.1, sleep: Callable[[float], None] = time.sleep) -> list[Delivery]:
    """Send several nodes' recorded releases in one request (``POST /api/v1/reports/batch``, as a gateway
    forwards them: each report keeps its own MAC) and note each answer in its node's ledger (:meth:`SensorNode.settle`).

    ``client`` is an :class:`httpx.Client` with the collector's base URL. A request that fails (network error,
    429, 5xx) is sent again, and so is a report answered 429 or 5xx, up to ``attempts`` times with doubling
    jittered waits from ``backoff`` seconds (a ``Retry-After`` lengthens them); the reports are the recorded
    ones, unchanged, so the collector stores each at most once. Returns one :class:`Delivery` per release
    answered, in order.

    Raises
    ------
    DeliveryError
        Some reports were not answered after ``attempts`` attempts (they stay pending in their ledgers, resent
        by each node's :meth:`SensorNode.flush`).

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_node
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, node = two_sensor_node(tmp.name)
    >>> entry = node.release(3.0, window=0)
    >>> def collector(request: httpx.Request) -> httpx.Response:  # stores every report of the batch
    ...     return httpx.Response(200, json={"results": [{"http_status": 201, "status": "stored"}]})
    >>> client = httpx.Client(base_url="http://collector", transport=httpx.MockTransport(collector))
    >>> [(d.window, d.outcome) for d in deliver_batch([(node, entry)], client=client)], node.ledger.pending()
    ([(0, 'stored')], [])
    >>> client.close(); node.close(); tmp.cleanup()
    """
    from dpcloak.service.ingest import MAX_BATCH

    check_int("attempts", attempts, minimum=1)
    answered: dict[int, Delivery] = {}
    waiting = list(range(len(releases)))
    delay, last, asked = float(backoff), "", 0.0
    for attempt in range(attempts):
        if attempt:
            sleep(max(asked, random.uniform(delay / 2, delay)))
            delay, asked = 2 * delay, 0.0
        retry: list[int] = []
        for lo in range(0, len(waiting), MAX_BATCH):
            chunk = waiting[lo:lo + MAX_BATCH]
            try:
                resp = client.post("/api/v1/reports/batch",
                                   json={"reports": [releases[i][0].report_body(releases[i][1]) for i in chunk]})
            except httpx.TransportError as exc:
                last, retry = f"{type(exc).__name__}: {exc}", retry + chunk
                continue
            results = _json_body(resp).get("results")
            if resp.status_code != 200 or not isinstance(results, list) or len(results) != len(chunk):
                last, retry = f"HTTP {resp.status_code}", retry + chunk
                asked = max(asked, _retry_after(resp, 30.0))
                continue
            for i, result in zip(chunk, results, strict=True):
                status = int(result.get("http_status", 500)) if isinstance(result, dict) else 500
                if status in _RETRY_STATUS:
                    last = f"HTTP {status}"
                    retry.append(i)
                else:
                    node, entry = releases[i]
                    answered[i] = node.settle(entry, status, {k: v for k, v in result.items() if k != "http_status"})
        waiting = retry
        if not waiting:
            break
    if waiting:
        raise DeliveryError(f"{len(waiting)} of {len(releases)} reports not delivered after {attempts} attempts "
                            f"({last}); they stay in their ledgers and are resent by flush()")
    return [answered[i] for i in sorted(answered)]


def admit_release(deployment: Deployment, *, sensor: int, window: int, now: float, last_window: int, released: bool,
                  spent_in_period: int) -> tuple[int, int]:
    """The node's admission rules for a release in ``window`` (:meth:`SensorNode.release`); raises when refused.

    ``last_window`` is the last window the sensor released (−1: none), ``released`` whether ``window`` already
    has a release in its ledger and ``spent_in_period`` how many releases its ledger holds in the window's
    budget period. Returns the window's budget period and the period's limit (the ledger re-checks the limit
    under its write lock when it records the release).

    Raises
    ------
    ReleaseSkipped
        ``window`` is not a release window of the policy (saying when the next one starts).
    BudgetExceededError
        The budget period's count is spent.
    InvalidParameterError
        The window is before the start, ahead of the clock plus the skew, already released, or not after
        the last window released.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> dep = two_sensor_deployment(policy_releases=4)  # every 3rd window
    >>> admit_release(dep, sensor=0, window=3, now=200.0, last_window=0, released=False, spent_in_period=1)
    (0, 4)
    >>> admit_release(dep, sensor=0, window=4, now=250.0, last_window=3, released=False, spent_in_period=2)
    Traceback (most recent call last):
        ...
    dpcloak.service.node.ReleaseSkipped: sensor 0: window 4: not a release window of the policy ...

    With a stride that fills the sliding window (every window, 4 in any 10), window 5 is skipped for budget:

    >>> burst = two_sensor_deployment(policy_releases=4, stride=1)
    >>> admit_release(burst, sensor=0, window=5, now=330.0, last_window=3, released=False, spent_in_period=4)
    Traceback (most recent call last):
        ...
    dpcloak.service.node.ReleaseSkipped: sensor 0: window 5: the sliding window holds the schedule's release ...

    A node that starts in that rest phase has released nothing in the sliding window: not a budget skip:

    >>> admit_release(burst, sensor=0, window=5, now=330.0, last_window=-1, released=False, spent_in_period=0)
    Traceback (most recent call last):
        ...
    dpcloak.service.node.ReleaseSkipped: sensor 0: window 5: the rest phase of the schedule (this sensor released ...
    """
    dep, w = deployment, int(window)
    if w < 0:
        raise InvalidParameterError(f"window must be >= 0 (the deployment starts at {dep.start}), got {w}",
                                    parameter="window")
    latest = dep.latest_window(now)
    if w > latest:
        raise InvalidParameterError(f"window must be at most {latest} (the node's clock {now:.3f} plus the "
                                    f"stated skew of {dep.clock_skew_seconds:g} s), got {w}; nothing released",
                                    parameter="window")
    if released:
        raise InvalidParameterError(f"sensor {sensor} already released a reading for window {w}", parameter="sensor")
    if w <= last_window:
        raise InvalidParameterError(f"window must be after window {last_window}, the last this sensor "
                                    f"released (windows only move forward), got {w}; nothing released",
                                    parameter="window")
    if not dep.is_release_window(w):
        nxt = dep.next_release_window(w)
        when = (f"the next release window is {nxt}, starting at {dep.window_start(nxt):.0f}" if nxt is not None
                else f"the lifetime cap of {dep.lifetime_releases} release windows is reached: no more releases")
        if not dep.budget_skip(w):
            why = "not a release window of the policy"
        elif last_window >= max(0, w - dep.period_windows + 1):  # a release of this sensor is in the sliding window
            why = ("the sliding window holds the schedule's release windows, this sensor's among them: skipped for "
                   "budget until it renews")
        else:  # the schedule rests, but nothing of this sensor is in the sliding window: no budget is spent
            why = "the rest phase of the schedule (this sensor released nothing in the sliding window)"
        raise ReleaseSkipped(f"sensor {sensor}: window {w}: {why} (at most {dep.releases_per_period} release windows "
                             f"in any {dep.period_windows} consecutive windows, {schedule_words(dep)}); nothing "
                             f"released; {when}", window=w, next_window=nxt,
                             next_time=None if nxt is None else dep.window_start(nxt))
    period, limit = dep.period_of(w), dep.releases_per_period
    if spent_in_period >= limit:
        raise BudgetExceededError(f"sensor {sensor} has released {limit} readings in budget period {period} "
                                  f"(the most its budget epsilon={dep.release_spec.budget[0]:g} per period "
                                  "allows); nothing released", parameter="sensor")
    return period, limit


def read_values(stream: Iterable[str], *, column: int = -1, header: bool = True,
                first_line: int = 1) -> Iterator[Reading]:
    """Readings from a text stream: one per line, the last comma-separated field (a header line is skipped).

    A line whose field is not a number gives a :class:`Reading` with a ``problem`` (the node skips it
    and says so); blank lines are ignored.

    Examples
    --------
    >>> [r.value for r in read_values(["time,count", "10:00,3", "10:01,4.5"])]
    [3.0, 4.5]
    >>> [(r.where, r.problem) for r in read_values(["7", "x"], header=False)]
    [('line 1', None), ('line 2', "reading must be a number, got 'x'")]
    """
    for lineno, line in enumerate(stream, start=first_line):
        text = line.strip()
        if not text:
            continue
        field = text.split(",")[column].strip()
        try:
            yield Reading(float(field), f"line {lineno}")
        except ValueError:
            if header and lineno == first_line:
                continue  # header
            yield Reading(math.nan, f"line {lineno}", f"reading must be a number, got {field!r}")


def tail_csv(path: Path, *, column: int = -1, follow: bool = False, poll: float = 0.5,
             stop: Callable[[], bool] | None = None) -> Iterator[Reading]:
    """Readings appended to a CSV file; with ``follow`` keep waiting for new lines until ``stop()`` is true.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> path = directory / "counts.csv"
    >>> _ = path.write_text("time,count\\n10:00,3\\n10:01,4\\n")
    >>> [(r.where, r.value) for r in tail_csv(path)]
    [('line 2', 3.0), ('line 3', 4.0)]
    >>> tmp.cleanup()
    """
    with Path(path).open() as fh:
        header, count = True, 0

        def lines() -> Iterator[str]:
            nonlocal count
            for line in iter(fh.readline, ""):
                count += 1
                yield line

        while True:
            yield from read_values(lines(), column=column, header=header, first_line=count + 1)
            header = False
            if not follow or (stop is not None and stop()):
                return
            time.sleep(poll)

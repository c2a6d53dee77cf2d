"""The sensor node: privatize locally, enforce the budget, sign, deliver with retries.

A node holds only its own credential (its id and key) and the deployment's public parameters.
For each reading it

1. refuses if the budget period already holds ``releases_per_period`` releases
   (:class:`~dpcloak.errors.BudgetExceededError`, nothing released);
2. privatizes the reading with the network's exact discrete Gaussian sampler fed by the OS CSPRNG
   (``SensorNetwork.privatize_reading``; the reading is clipped to the declared range first);
3. records the noisy value, a fresh random report id and the MAC in its ledger, durably, *before*
   sending (:mod:`dpcloak.service.ledger`);
4. sends it, retrying on network errors, 429 and 5xx with exponential backoff; every retry carries
   the same report id and value, so the collector stores it at most once.

Privacy guarantee
-----------------
What leaves the node is the output of the network's mechanism on one coordinate; with at most
``releases_per_period`` releases per period the deployment's guarantee holds
(:class:`~dpcloak.service.config.Deployment`). A fixed seed is not accepted: the sampler is the OS
CSPRNG.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from dpcloak.errors import BudgetExceededError, DpcloakError, InvalidParameterError
from dpcloak.service.auth import sign_report
from dpcloak.service.config import Deployment, SensorCredential
from dpcloak.service.ledger import LedgerEntry, SensorLedger

__all__ = ["SensorNode", "Delivery", "DeliveryError", "read_values", "tail_csv"]

_RETRY_STATUS = {429, 500, 502, 503, 504}


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
    clock : callable, default time.time
        Unix time now (decides the window of a reading).
    attempts : int, default 6
        Sending attempts per report before :class:`DeliveryError`.
    backoff : float, default 0.1
        First retry delay in seconds (doubles each attempt, capped at 5 s).
    timeout : float, default 10
        Per-request timeout in seconds.

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
                 url: str, clock: Callable[[], float] = time.time, attempts: int = 6, backoff: float = 0.1,
                 timeout: float = 10.0, transport: httpx.BaseTransport | None = None) -> None:
        if credential.deployment_id != deployment.deployment_id or credential.fingerprint != deployment.fingerprint:
            raise InvalidParameterError(
                f"the credential of sensor {credential.sensor} is for deployment {credential.deployment_id} "
                f"(fingerprint {credential.fingerprint[:12]}…), not {deployment.deployment_id} "
                f"(fingerprint {deployment.fingerprint[:12]}…)")
        if not 0 <= credential.sensor < deployment.n_sensors:
            raise InvalidParameterError(f"sensor must be in [0, {deployment.n_sensors - 1}], got {credential.sensor}")
        self.deployment = deployment
        self.credential = credential
        self.sensor = credential.sensor
        self.ledger = ledger if isinstance(ledger, SensorLedger) else SensorLedger(ledger, credential=credential)
        self.clock = clock
        self.attempts = attempts
        self.backoff = backoff
        self._client = httpx.Client(base_url=url, timeout=timeout, transport=transport)

    def close(self) -> None:
        """Close the HTTP client and the ledger."""
        self._client.close()
        self.ledger.close()

    def release(self, value: float, *, window: int | None = None) -> LedgerEntry:
        """Privatize ``value`` for ``window`` (default: the current one) and record it; nothing is sent yet.

        Raises
        ------
        BudgetExceededError
            The period's budget is spent (nothing is released).
        InvalidParameterError
            The sensor already released a reading for that window, or the window is before the start.
        """
        dep = self.deployment
        w = dep.window_at(self.clock()) if window is None else int(window)
        if w < 0:
            raise InvalidParameterError(f"window must be >= 0 (the deployment starts at {dep.start}), got {w}")
        if self.ledger.entry(w) is not None:
            raise InvalidParameterError(f"sensor {self.sensor} already released a reading for window {w}")
        period, limit = dep.period_of(w), dep.releases_per_period
        if self.ledger.spent_in_period(period) >= limit:
            raise BudgetExceededError(f"sensor {self.sensor} has released {limit} readings in budget period {period} "
                                      f"(the most its budget epsilon={dep.sensor_network.budget[0]:g} per period "
                                      "allows); nothing released")
        noisy = float(dep.network_for_period(period).privatize_reading(self.sensor, value))
        report_id = secrets.token_hex(16)
        mac = sign_report(self.credential.key, deployment_id=dep.deployment_id, fingerprint=dep.fingerprint,
                          sensor=self.sensor, window=w, report_id=report_id, value=noisy)
        entry = LedgerEntry(window=w, period=period, report_id=report_id, value=noisy, mac=mac, acknowledged=False)
        if not self.ledger.record(entry, limit=limit):
            raise BudgetExceededError(f"sensor {self.sensor}: budget period {period} filled up concurrently")
        return entry

    def report_body(self, entry: LedgerEntry) -> dict[str, Any]:
        """The JSON body of a recorded release."""
        return {"deployment": self.deployment.deployment_id, "fingerprint": self.deployment.fingerprint,
                "sensor": self.sensor, "key_id": self.sensor, "generation": self.credential.generation,
                "window": entry.window, "report_id": entry.report_id, "value": entry.value, "mac": entry.mac}

    def deliver(self, entry: LedgerEntry) -> Delivery:
        """Send a recorded release until the collector answers (bounded retries), and note an acknowledgement."""
        delay = self.backoff
        last = "no attempt"
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(delay)
                delay = min(2 * delay, 5.0)
            try:
                resp = self._client.post("/api/v1/reports", json=self.report_body(entry))
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code in _RETRY_STATUS:
                last = f"HTTP {resp.status_code}"
                retry_after = resp.headers.get("Retry-After", "")
                delay = max(delay, float(retry_after)) if retry_after.isdigit() else delay
                continue
            body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
            if resp.status_code in (200, 201):
                self.ledger.acknowledge(entry.window)
                outcome = "stored" if resp.status_code == 201 else "duplicate"
            else:
                outcome = "rejected"
            return Delivery(entry.window, entry.report_id, outcome, resp.status_code, body)
        raise DeliveryError(f"sensor {self.sensor}: report for window {entry.window} not delivered after "
                            f"{self.attempts} attempts ({last}); it stays in the ledger and is resent by flush()")

    def submit(self, value: float, *, window: int | None = None) -> Delivery:
        """:meth:`release` then :meth:`deliver`."""
        return self.deliver(self.release(value, window=window))

    def flush(self) -> list[Delivery]:
        """Resend every release not yet acknowledged (unchanged)."""
        return [self.deliver(e) for e in self.ledger.pending()]

    def run(self, readings: Iterable[float] | Callable[[], float], *, windows: int | None = None,
            on_delivery: Callable[[Delivery], None] | None = None) -> int:
        """Send readings as they come, at most one per window (later ones in the same window are skipped).

        ``readings`` is an iterable (stdin, a CSV tail) or a callback called once per window. Stops at
        the end of the iterable or after ``windows`` windows; returns the number of releases sent.
        """
        source: Iterator[float] = iter(readings, None) if callable(readings) else iter(readings)
        sent = 0
        first = self.deployment.window_at(self.clock())
        for value in source:
            w = self.deployment.window_at(self.clock())
            if windows is not None and w >= first + windows:
                break
            if self.ledger.entry(w) is None:
                delivery = self.submit(value, window=w)
                sent += 1
                if on_delivery is not None:
                    on_delivery(delivery)
            if callable(readings):
                time.sleep(max(0.0, self.deployment.window_end(w) - self.clock()))
        return sent


def read_values(stream: Iterable[str], *, column: int = -1, header: bool = True) -> Iterator[float]:
    """Readings from a text stream: one per line, the last comma-separated field (a header line is skipped).

    Examples
    --------
    >>> list(read_values(["time,count", "10:00,3", "10:01,4.5"]))
    [3.0, 4.5]
    >>> list(read_values(["7", "8"], header=False))
    [7.0, 8.0]
    """
    for lineno, line in enumerate(stream, start=1):
        text = line.strip()
        if not text:
            continue
        field = text.split(",")[column].strip()
        try:
            yield float(field)
        except ValueError:
            if header and lineno == 1:
                continue  # header
            raise InvalidParameterError(f"line {lineno}: reading must be a number, got {field!r}") from None


def tail_csv(path: Path, *, column: int = -1, follow: bool = False, poll: float = 0.5,
             stop: Callable[[], bool] | None = None) -> Iterator[float]:
    """Readings appended to a CSV file; with ``follow`` keep waiting for new lines until ``stop()`` is true.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> path = directory / "counts.csv"
    >>> _ = path.write_text("time,count\\n10:00,3\\n10:01,4\\n")
    >>> list(tail_csv(path))
    [3.0, 4.0]
    >>> tmp.cleanup()
    """
    with Path(path).open() as fh:
        header = True
        while True:
            yield from read_values(iter(fh.readline, ""), column=column, header=header)
            header = False
            if not follow or (stop is not None and stop()):
                return
            time.sleep(poll)

"""Per-sensor flood limit: a token bucket per sensor id, charged only for authenticated reports.

A genuine sensor sends one report per window plus retries of it; after an outage it resends its
backlog. The bucket allows ``rate`` reports per second on average (default
:data:`REPORTS_PER_WINDOW` per window length) and bursts of ``burst`` (default :data:`BURST`,
enough to resend a long backlog at once). A sensor over its limit gets 429 with ``Retry-After``
(the sensor node honours it); nothing is stored. Only reports whose MAC verified are charged, so
nobody without a sensor's key can use up that sensor's allowance.

Failed authentications are limited per client address (:class:`ClientFailureLimit`): a client whose
reports fail their MAC check more than :data:`FAILED_AUTH_RATE` a second on average (bursts of
:data:`FAILED_AUTH_BURST`, one full batch) gets 429 for everything it sends until its allowance refills,
answered before its body is read: a stolen-looking flood of 1,000-report batches with bad MACs costs the
collector one dictionary look-up a request instead of parsing and checking a thousand MACs, and honest
sensors on other addresses keep their latency. A genuine sensor fails its MAC only when misconfigured
(its node then stops: :class:`~dpcloak.service.node.NodeRefusedError`).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from dpcloak.errors import InvalidParameterError

__all__ = ["REPORTS_PER_WINDOW", "BURST", "SensorRateLimit", "FAILED_AUTH_RATE", "FAILED_AUTH_BURST",
           "ClientFailureLimit"]

REPORTS_PER_WINDOW = 10.0
"""Average reports per sensor and window length allowed (a genuine sensor needs one plus retries)."""

BURST = 200
"""Reports a sensor may send at once (its backlog after an outage)."""

FAILED_AUTH_RATE = 10.0
"""Failed authentications a second, on average, allowed from one client address."""

FAILED_AUTH_BURST = 1000
"""Failed authentications allowed at once from one client address (one batch)."""


class SensorRateLimit:
    """Token buckets of ``n_sensors`` sensors.

    Parameters
    ----------
    n_sensors : int
        Sensor ids are ``0 … n_sensors − 1``.
    rate : float
        Tokens added per second (reports per second sustained), > 0.
    burst : int
        Bucket capacity (reports at once), ≥ 1.
    clock : callable, default time.monotonic
        Seconds, monotonic.

    Examples
    --------
    Two reports at once, then one every 10 s (a manual clock stands in for time):

    >>> now = [0.0]
    >>> limit = SensorRateLimit(2, rate=0.1, burst=2, clock=lambda: now[0])
    >>> [limit.take(0) for _ in range(3)]  # the third would come 10 s too early
    [0.0, 0.0, 10.0]
    >>> limit.take(1)  # each sensor has its own bucket
    0.0
    >>> now[0] = 4.0
    >>> wait = limit.take(0)
    >>> round(wait, 6), SensorRateLimit.retry_after(wait)
    (6.0, 6)
    >>> now[0] = 10.0
    >>> limit.take(0)
    0.0
    >>> SensorRateLimit(2, rate=0.0, burst=2)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rate must be a finite number > 0, got 0.0
    """

    def __init__(self, n_sensors: int, *, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise InvalidParameterError(f"rate must be a finite number > 0, got {rate!r}", parameter="rate")
        if int(burst) < 1:
            raise InvalidParameterError(f"burst must be >= 1, got {burst!r}", parameter="burst")
        self.rate, self.burst, self.clock = float(rate), int(burst), clock
        now = clock()
        self._tokens = [float(burst)] * int(n_sensors)
        self._stamp = [now] * int(n_sensors)

    def take(self, sensor: int) -> float:
        """Charge one report to ``sensor``: 0.0 if allowed, else the seconds until a report would be."""
        now = self.clock()
        tokens = min(float(self.burst), self._tokens[sensor] + (now - self._stamp[sensor]) * self.rate)
        self._stamp[sensor] = now
        if tokens >= 1.0:
            self._tokens[sensor] = tokens - 1.0
            return 0.0
        self._tokens[sensor] = tokens
        return (1.0 - tokens) / self.rate

    @staticmethod
    def retry_after(wait: float) -> int:
        """``Retry-After`` in whole seconds (at least 1) for a wait of ``wait`` seconds."""
        return max(1, math.ceil(wait))


class ClientFailureLimit:
    """Token buckets of failed authentications, one per client address, charged after the fact.

    A client's bucket holds up to ``burst`` tokens and refills at ``rate`` a second; every report of
    its that failed authentication takes one, down to ``-burst`` (a 1,000-report batch of bad MACs
    overdraws it). While it holds less than one token, :meth:`wait` says how long until it does, and
    the collector answers 429 without reading the request. At most ``max_clients`` addresses are
    remembered (the least recently charged is forgotten first: memory stays bounded).

    Parameters
    ----------
    rate : float
        Failures a second, sustained, > 0.
    burst : int
        Failures at once, ≥ 1.
    max_clients : int
        Addresses remembered, ≥ 1.
    clock : callable, default time.monotonic
        Seconds, monotonic.

    Examples
    --------
    A batch of 30 bad MACs against a bucket of 20 refilled at 10 a second:

    >>> now = [0.0]
    >>> limit = ClientFailureLimit(rate=10.0, burst=20, clock=lambda: now[0])
    >>> limit.wait("192.0.2.7"), limit.charge("192.0.2.7", 30), limit.wait("192.0.2.7")  # 20 - 30 = -10 tokens
    (0.0, True, 1.1)
    >>> limit.wait("192.0.2.8")  # other addresses are not affected
    0.0
    >>> now[0] = 1.1  # 11 tokens refilled: one again
    >>> limit.wait("192.0.2.7")
    0.0
    """

    def __init__(self, *, rate: float = FAILED_AUTH_RATE, burst: int = FAILED_AUTH_BURST, max_clients: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise InvalidParameterError(f"rate must be a finite number > 0, got {rate!r}", parameter="rate")
        for name, value in (("burst", burst), ("max_clients", max_clients)):
            if int(value) < 1:
                raise InvalidParameterError(f"{name} must be >= 1, got {value!r}", parameter=name)
        self.rate, self.burst, self.max_clients, self.clock = float(rate), int(burst), int(max_clients), clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, when)

    def _tokens(self, client: str, now: float) -> float:
        tokens, stamp = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - stamp) * self.rate)

    def wait(self, client: str) -> float:
        """Seconds until ``client``'s requests are read again (0.0: now)."""
        if client not in self._buckets:
            return 0.0
        tokens = self._tokens(client, self.clock())
        return 0.0 if tokens >= 1.0 else round((1.0 - tokens) / self.rate, 9)

    def charge(self, client: str, failures: int) -> bool:
        """Take ``failures`` tokens from ``client``'s bucket; whether this made it wait (a moment worth a log line)."""
        if failures <= 0:
            return False
        now = self.clock()
        before = self._tokens(client, now)
        after = max(-float(self.burst), before - failures)
        self._buckets[client] = (after, now)
        self._buckets.move_to_end(client)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return before >= 1.0 > after

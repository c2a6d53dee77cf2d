"""Per-sensor flood limit: a token bucket per sensor id, charged only for authenticated reports.

A genuine sensor sends one report per window plus retries of it; after an outage it resends its
backlog. The bucket allows ``rate`` reports per second on average (default
:data:`REPORTS_PER_WINDOW` per window length) and bursts of ``burst`` (default :data:`BURST`,
enough to resend a long backlog at once). A sensor over its limit gets 429 with ``Retry-After``
(the sensor node honours it); nothing is stored. Only reports whose MAC verified are charged, so
nobody without a sensor's key can use up that sensor's allowance. Unauthenticated floods are answered
401 after one HMAC check each; limiting them per source address belongs to the reverse proxy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from dpcloak.errors import InvalidParameterError

__all__ = ["REPORTS_PER_WINDOW", "BURST", "SensorRateLimit"]

REPORTS_PER_WINDOW = 10.0
"""Average reports per sensor and window length allowed (a genuine sensor needs one plus retries)."""

BURST = 200
"""Reports a sensor may send at once (its backlog after an outage)."""


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

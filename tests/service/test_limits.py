"""The per-sensor token bucket, against its arithmetic on a scripted clock (burst, refill, per-sensor state)."""

from __future__ import annotations

import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.service.limits import SensorRateLimit


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_burst_then_refill_at_the_rate() -> None:
    clock = Clock()
    limit = SensorRateLimit(3, rate=2.0, burst=5, clock=clock)
    assert [limit.take(1) for _ in range(5)] == [0.0] * 5  # the burst
    assert limit.take(1) == pytest.approx(0.5)  # one token takes 1 / rate seconds
    assert limit.take(0) == 0.0  # other sensors keep their own bucket
    clock.t += 0.5
    assert limit.take(1) == 0.0
    assert limit.take(1) == pytest.approx(0.5)
    clock.t += 100.0  # refills up to the burst, not beyond
    assert [limit.take(1) for _ in range(6)].count(0.0) == 5


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert [SensorRateLimit.retry_after(w) for w in (0.01, 1.0, 1.2, 7.0)] == [1, 1, 2, 7]


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 5), (float("inf"), 5), (1.0, 0)])
def test_bad_parameters_are_refused(rate: float, burst: int) -> None:
    with pytest.raises(InvalidParameterError):
        SensorRateLimit(2, rate=rate, burst=burst)

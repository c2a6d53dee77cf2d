"""Tests of dpcloak.privacy.spacetime.

Oracle: brute force over a long horizon with the seeds' model itself — the reading shift of every lag is
``heat_kernel_1d(n, m, t + lag·window).todense()`` (times the cooling factor), and the streams of readings
with and without the events are built by superposition window by window.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy.spacetime import heat_event_sensitivity

N, M, T0, MU = 30, 6, 0.1, 0.5


def _lag_matrix(lag: int, window: float, cooling: float) -> np.ndarray:
    return math.exp(-cooling * lag * window) * heat_kernel_1d(N, M, T0 + lag * window, mu=MU).todense()


def _brute(window: float, cooling: float, lags: int, events: int = 1, period: int = 1) -> np.ndarray:
    """Σ_t ‖y_t(with events at i) − y_t(without)‖² for every source i, readings built by superposition."""
    mats = [_lag_matrix(lag, window, cooling) for lag in range(lags)]
    total = np.zeros(N)
    for t in range(lags):
        shift = sum(mats[t - r * period] for r in range(events) if r * period <= t)
        total += (shift**2).sum(axis=0)
    return total


def test_unbounded_sum_matches_brute_force_and_its_tail_is_certified() -> None:
    window, cooling = 0.05, 1.0
    model = heat_kernel_1d(N, M, T0, mu=MU)
    s = heat_event_sensitivity(model, window=window, cooling=cooling)
    brute = _brute(window, cooling, 3000)
    assert s.sensitivity**2 == pytest.approx(brute.max(), rel=1e-9)
    assert s.partial <= brute.max() <= s.partial + s.tail_bound  # the tail bound holds
    assert s.worst_source == int(np.argmax(brute))
    static = np.sqrt((model.todense() ** 2).sum(axis=0).max())  # lag 0 is the seeds' model
    assert s.per_reading == pytest.approx(static, rel=1e-12)
    # a weakened (too short) truncation misses part of the sum: the bound is needed
    short = _brute(window, cooling, 5).max()
    assert short < brute.max() * (1 - 1e-3)


def test_tail_bound_dominates_the_true_remainder() -> None:
    window, cooling = 0.05, 0.3
    s = heat_event_sensitivity(heat_kernel_1d(N, M, T0, mu=MU), window=window, cooling=cooling, rtol=1e-3)
    remainder = _brute(window, cooling, 8000) - _brute(window, cooling, s.lags)
    assert 0 < remainder.max() <= s.tail_bound
    assert s.tail_bound <= 1e-3 * s.partial


def test_periodic_pattern_matches_brute_force() -> None:
    window, cooling = 0.05, 1.0
    s = heat_event_sensitivity(heat_kernel_1d(N, M, T0, mu=MU), window=window, cooling=cooling, events=4, period=7)
    brute = _brute(window, cooling, 3000, events=4, period=7)
    assert s.sensitivity**2 == pytest.approx(brute.max(), rel=1e-9)
    one = heat_event_sensitivity(heat_kernel_1d(N, M, T0, mu=MU), window=window, cooling=cooling)
    assert one.sensitivity < s.sensitivity <= 4 * one.sensitivity  # triangle inequality


def test_finite_horizon_without_cooling_is_an_exact_sum() -> None:
    s = heat_event_sensitivity(heat_kernel_1d(N, M, T0, mu=MU), window=0.05, horizon=400, events=3, period=24)
    assert s.tail_bound == 0.0 and s.lags == 400
    assert s.sensitivity**2 == pytest.approx(_brute(0.05, 0.0, 400, events=3, period=24).max(), rel=1e-12)


def test_no_cooling_and_no_horizon_is_refused() -> None:
    model = heat_kernel_1d(N, M, T0, mu=MU)
    with pytest.raises(InvalidParameterError, match="cooling must be > 0 when horizon is None"):
        heat_event_sensitivity(model, window=0.05)
    with pytest.raises(InvalidParameterError, match="window"):
        heat_event_sensitivity(model, window=0.0, cooling=1.0)
    with pytest.raises(InvalidParameterError, match="horizon must be an integer >= 15"):
        heat_event_sensitivity(model, window=0.05, horizon=10, events=3, period=7)
    with pytest.raises(InvalidParameterError, match="model must be a heat model"):
        heat_event_sensitivity(np.eye(3), window=0.05, cooling=1.0)  # type: ignore[arg-type]


# ---------------------------------------------------------------- a floor (2-D free space)

GRID_SENSORS = np.array([[0.2, 0.3], [0.7, 0.6], [0.5, 0.5]])


def _floor_brute(window: float, cooling: float, lags: int) -> np.ndarray:
    """Σ_ℓ ‖K_ℓ e_i‖² from the 2-D kernel's formula exp(−d²/(4μt))/(4πμt) (not the library's model)."""
    from dpcloak.domains import Grid

    d2 = ((GRID_SENSORS[:, None, :] - Grid((5, 5)).coordinates()[None, :, :]) ** 2).sum(-1)
    total = np.zeros(d2.shape[1])
    for lag in range(lags):
        big_t = MU * (0.02 + lag * window)
        k = math.exp(-cooling * lag * window) * np.exp(-d2 / (4 * big_t)) / (4 * math.pi * big_t)
        total += (k**2).sum(axis=0)
    return total


def test_floor_sum_matches_brute_force_and_converges_without_cooling() -> None:
    from dpcloak.domains import Grid
    from dpcloak.models import heat_kernel_2d

    model = heat_kernel_2d(Grid((5, 5)), GRID_SENSORS, 0.02, mu=MU)
    s = heat_event_sensitivity(model, window=0.01, cooling=5.0)
    brute = _floor_brute(0.01, 5.0, 3000)
    assert s.sensitivity**2 == pytest.approx(brute.max(), rel=1e-9)
    assert s.partial <= brute.max() <= s.partial + s.tail_bound
    # no heat loss: the 2-D series converges; the bound covers a brute-force sum over 20,000 windows
    free = heat_event_sensitivity(model, window=0.01, rtol=1e-3)
    long = _floor_brute(0.01, 0.0, 20000).max()
    assert free.partial <= long <= free.sensitivity**2
    assert free.tail_bound <= 1e-3 * free.partial
    walls = heat_kernel_2d(Grid((5, 5)), GRID_SENSORS, 0.02, mu=MU, walls="reflecting")
    with pytest.raises(InvalidParameterError, match="horizon must be given for a model with walls"):
        heat_event_sensitivity(walls, window=0.01, cooling=1.0)
    assert heat_event_sensitivity(walls, window=0.01, horizon=50).tail_bound == 0.0

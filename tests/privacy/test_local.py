"""Per-sensor privatisation, its accountant, and the keyed backdoor (McMillan's thesis §7.2).

Oracles: the exact Δ2 of the foundation (l2_sensitivity); the exact Gaussian profile in 60-digit
mpmath for composed guarantees; the exact privacy profile of the 1-D discrete Gaussian (mpmath sum
over its integer support) for the keyed grid path, and the exact tail mass of the truncated keyed
inverse-CDF sampler that the keyed path used to run; the package's own EMD (metrics.emd) for the
neighbouring relation's wording; a chi-square test of the keyed integer noise against the discrete
Gaussian pmf; the seeded empirical DP check of _empirical.py (passes at ε, fails with halved σ).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from _empirical import check_dp
from _ledger_oracle import budget_total
from scipy import stats

from dpcloak.domains import Line
from dpcloak.errors import BudgetExceededError, InvalidParameterError
from dpcloak.metrics import emd
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    KeyedPrivatizer,
    KeyedRelease,
    LaplaceMechanism,
    PrivacyGuarantee,
    SensorPrivatizer,
    l2_sensitivity,
    privacy_spent,
)
from dpcloak.privacy.local import derive_sensor_key, keyed_noise, model_neighbouring

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return heat_kernel_1d(20, 10, 0.1)


def _grid_mech(n: int = 10, **kw: float) -> DiscreteGaussianMechanism:
    params = {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 0.5, "resolution": 0.5 / 256, **kw}
    return DiscreteGaussianMechanism(dimension=n, **params)  # type: ignore[arg-type]


def _exact_gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> mpmath.mpf:
    with mpmath.workdps(60):
        mu, e = mpmath.mpf(sensitivity) / mpmath.mpf(sigma), mpmath.mpf(epsilon)
        return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)


# ---------------------------------------------------------------- defaults (defect 2) and seeds (defect 7)


def test_from_model_defaults_to_the_exact_discrete_gaussian(model) -> None:  # type: ignore[no-untyped-def]
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1)
    assert isinstance(priv.mechanism, DiscreteGaussianMechanism) and not priv.simulation
    assert priv.mechanism.dimension == priv.n_sensors == 10  # rounding slack counted for every sensor
    assert priv.mechanism.sensitivity == l2_sensitivity(model)
    sim = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, alpha=2.0, noise="float", calibration="paper")
    assert isinstance(sim.mechanism, GaussianMechanism) and sim.simulation
    assert sim.mechanism.sensitivity == pytest.approx(2 * l2_sensitivity(model))
    assert "SIMULATION" in sim.guarantee().mechanism and "OS CSPRNG" in priv.guarantee().mechanism
    with pytest.raises(InvalidParameterError, match="calibration applies to noise='float'"):
        SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, calibration="paper")
    with pytest.raises(InvalidParameterError, match="resolution applies to noise='secure'"):
        SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, noise="float", resolution=0.01)
    with pytest.raises(InvalidParameterError, match="noise"):
        SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, noise="numpy")


def test_release_path_refuses_a_seed_and_float_noise(model) -> None:  # type: ignore[no-untyped-def]
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1)
    y = model.matvec(np.eye(20)[3])
    for rng in (0, np.random.default_rng(0)):
        with pytest.raises(InvalidParameterError, match="rng must be None on a release path"):
            priv.privatize_all(y, rng=rng)
        with pytest.raises(InvalidParameterError, match="rng must be None"):
            priv.privatize(y[0], sensor=0, rng=rng)
    assert priv.accountant is not None and priv.accountant.readings == 0  # refused before charging
    # why: a seeded simulation repeats its noise exactly on every call
    sim = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, noise="float")
    np.testing.assert_array_equal(sim.privatize_all(y, rng=5), sim.privatize_all(y, rng=5))
    with pytest.raises(InvalidParameterError, match="floating-point noise"):
        SensorPrivatizer(mechanism=GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0), n_sensors=3)
    # the secure default draws fresh noise every time, on the grid
    a, b = priv.privatize_all(y), priv.privatize_all(y)
    g = priv.mechanism.resolution
    assert not np.array_equal(a, b) and np.max(np.abs(a / g - np.rint(a / g))) < 1e-6  # integers times g


def test_grid_dimension_must_cover_every_sensor() -> None:
    """Defect 5, privatizer side: slack for 1 coordinate must not be used to release 400."""
    one = _grid_mech(n=1, resolution=0.1, sensitivity=1.0)
    with pytest.raises(InvalidParameterError, match=r"n_sensors.*dimension=1.*400"):
        SensorPrivatizer(mechanism=one, n_sensors=400)
    with pytest.raises(InvalidParameterError, match="dimension"):
        KeyedPrivatizer(mechanism=one, n_sensors=400, key=KEY)
    assert SensorPrivatizer(mechanism=_grid_mech(n=400), n_sensors=400).n_sensors == 400


def test_single_and_vectorised_simulation_paths_agree(model) -> None:  # type: ignore[no-untyped-def]
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=0.1, noise="float")
    y = model.matvec(np.eye(20)[3])
    gen = np.random.default_rng(42)
    one_by_one = np.array([priv.privatize(y[j], sensor=j, rng=gen) for j in range(10)])
    all_at_once = priv.privatize_all(y, rng=np.random.default_rng(42))
    np.testing.assert_array_equal(one_by_one, all_at_once)
    assert priv.privatize_all(np.tile(y, (3, 1)), rng=0).shape == (3, 10)


# ---------------------------------------------------------------- budget and composed guarantee (defect 7)


def test_every_release_is_charged_and_the_guarantee_composes(model) -> None:  # type: ignore[no-untyped-def]
    """Averaging 400 re-releases must show in guarantee(): the exact 400-fold Gaussian, not (1, 1e-5)."""
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=1e-5, noise="float")
    y = model.matvec(np.eye(20)[3])
    priv.privatize_all(np.tile(y, (399, 1)), rng=1)
    priv.privatize(y[2], sensor=2, rng=2)  # one single reading is one release
    g = priv.guarantee()
    assert priv.accountant is not None and priv.accountant.readings == 400 and "400 release" in g.kind
    sigma, sens = priv.mechanism.sigma, priv.mechanism.sensitivity
    # exact oracle: the smallest epsilon of the 400-fold composition (one Gaussian with 20 * Delta2)
    assert _exact_gaussian_delta(g.epsilon, sigma, 20 * sens) <= 1e-5 < _exact_gaussian_delta(
        g.epsilon * (1 - 1e-9), sigma, 20 * sens)
    assert g.epsilon > 30  # far from the per-release (1, 1e-5) the privatizer used to report
    assert priv.release_guarantee().epsilon == 1.0


def test_budget_refuses_and_releases_nothing(model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ledger = tmp_path / "network.ledger"
    priv = SensorPrivatizer.from_model(model, epsilon=1.0, delta=1e-5, epsilon_budget=2.0, ledger=ledger)
    y = model.matvec(np.eye(20)[3])
    allowed = priv.accountant.remaining()  # type: ignore[union-attr]
    assert allowed is not None and allowed >= 2
    outputs = [priv.privatize_all(y) for _ in range(allowed)]
    assert len(outputs) == allowed and priv.guarantee().epsilon <= 2.0
    with pytest.raises(BudgetExceededError, match="over the budget"):
        priv.privatize_all(y)
    with pytest.raises(BudgetExceededError):
        priv.privatize(y[0], sensor=0)
    # a second object on the same ledger (another process, a restart) starts where the first stopped
    again = SensorPrivatizer.from_model(model, epsilon=1.0, delta=1e-5, epsilon_budget=2.0, ledger=ledger)
    with pytest.raises(BudgetExceededError):
        again.privatize_all(y)
    assert budget_total(ledger) == allowed


def test_non_dp_mechanism_only_in_simulation() -> None:
    class FisherLikeNoise:
        """A non-DP mechanism (bounded uniform noise, Fisher-type guarantee)."""

        def privatize(self, values, *, rng=None):  # type: ignore[no-untyped-def]
            x = np.asarray(values, dtype=float)
            return x + np.random.default_rng(rng).uniform(-1, 1, x.shape)

        def guarantee(self) -> PrivacyGuarantee:
            return PrivacyGuarantee(kind="Fisher information", epsilon=None, delta=None, neighbouring="-",
                                    sensitivity=1.0, norm="l2", mechanism="uniform", source="test",
                                    fisher_information=3.0)

    priv = SensorPrivatizer(mechanism=FisherLikeNoise(), n_sensors=3, simulation=True)
    out = priv.privatize_all([1.0, 2.0, 3.0], rng=0)
    assert out.shape == (3,) and np.all(np.abs(out - [1, 2, 3]) <= 1)
    assert priv.accountant is None and priv.guarantee().fisher_information == 3.0
    with pytest.raises(InvalidParameterError, match="floating-point"):
        SensorPrivatizer(mechanism=FisherLikeNoise(), n_sensors=3)
    with pytest.raises(InvalidParameterError, match="no \\(epsilon, delta\\) accounting"):
        SensorPrivatizer(mechanism=FisherLikeNoise(), n_sensors=3, simulation=True, epsilon_budget=1.0)
    with pytest.raises(InvalidParameterError, match="mechanism"):
        SensorPrivatizer(mechanism=object(), n_sensors=3, simulation=True)  # type: ignore[type-var]


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
    assert priv.accountant is not None and priv.accountant.readings == 0


def test_simulated_gaussian_empirical_dp_passes_and_halved_fails() -> None:
    n = 20_000  # DKW tolerance 0.07 at beta = 1e-6; halved sigma violates by 0.35
    good = SensorPrivatizer(mechanism=GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=0.5), n_sensors=1,
                            simulation=True)
    ok = check_dp(good.privatize_all(np.zeros((n, 1)), rng=1).ravel(),
                  good.privatize_all(np.full((n, 1), 0.5), rng=2).ravel(), epsilon=1.0, delta=0.1)
    assert ok.passed, ok
    half = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=0.25)  # sigma for half the sensitivity
    bad_priv = SensorPrivatizer(mechanism=half, n_sensors=1, simulation=True)
    bad = check_dp(bad_priv.privatize_all(np.zeros((n, 1)), rng=1).ravel(),
                   bad_priv.privatize_all(np.full((n, 1), 0.5), rng=2).ravel(), epsilon=1.0, delta=0.1)
    assert not bad.passed, bad


def test_secure_release_path_empirical_dp_passes_and_weakened_fails() -> None:
    """What the deployment path actually releases (grid rounding, exact noise, OS CSPRNG), both sides.

    Unseeded by design (a release path refuses seeds): the DKW tolerance at beta = 1e-6 bounds the
    chance of a spurious result by 4e-6 per run.
    """
    n = 20_000
    inputs = (np.zeros((n, 1)), np.full((n, 1), 0.5))

    def released(sensitivity: float) -> list[np.ndarray]:
        mech = DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=sensitivity, dimension=1)
        priv = SensorPrivatizer(mechanism=mech, n_sensors=1)
        return [priv.privatize_all(x).ravel() for x in inputs]

    ok = check_dp(*released(0.5), epsilon=1.0, delta=0.1)
    assert ok.passed, ok
    bad = check_dp(*released(0.25), epsilon=1.0, delta=0.1)  # calibrated for half the true shift
    assert not bad.passed, bad


# ---------------------------------------------------------------- wording (defect 9)


def test_neighbouring_relation_is_stated_in_the_users_units() -> None:
    """heat1d(100, 50, 0.1): alpha = 1 is one step of 0.01; a pair at EMD 0.99 is not a neighbour."""
    model = heat_kernel_1d(100, 50, 0.1)
    text = SensorPrivatizer.from_model(model, epsilon=1.0, delta=1e-5).guarantee().neighbouring
    assert "at most 1 neighbour step" in text
    match = re.search(r"so EMD <= ([0-9.e-]+) domain units", text)
    assert match is not None
    bound = float(match.group(1))
    line = Line(100)
    adjacent = emd(np.eye(100)[10], np.eye(100)[11], line)  # the package's EMD, domain units
    far = emd(np.eye(100)[0], np.eye(100)[99], line)
    assert adjacent <= bound * (1 + 1e-12) and far == pytest.approx(0.99) and far > bound
    assert "at most 50 m" in model_neighbouring(50.0, unit="m")
    assert "at most 2 hops" in model_neighbouring(2.0, unit="hops")
    assert "EMD <= 3 steps; one step = 0.5 m, so EMD <= 1.5 m" in model_neighbouring(3, spacing=0.5, spacing_unit="m")


# ---------------------------------------------------------------- keyed backdoor (defect 3, defect 7)


def _keyed(key: bytes = KEY, mech: DiscreteGaussianMechanism | DiscreteLaplaceMechanism | None = None,
           **kw: object) -> KeyedPrivatizer:
    return KeyedPrivatizer(mechanism=mech if mech is not None else _grid_mech(), n_sensors=10, key=key, **kw)


@pytest.mark.parametrize("mech", [
    GaussianMechanism(epsilon=50.0, delta=1e-12, sensitivity=1.0),
    GaussianMechanism(epsilon=21.0, delta=1e-8, sensitivity=1.0),
    LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
], ids=["gauss-50", "gauss-21", "laplace"])
def test_keyed_path_never_states_what_a_truncated_sampler_breaks(mech) -> None:  # type: ignore[no-untyped-def]
    """Defect 3: either the keyed path refuses the mechanism, or the exact δ of what it samples meets the claim.

    The old keyed path drove F^-1 with the uniforms (2i + 1)/2^53, so its noise never exceeded
    z_max = F^-1(1 - 2^-53) (8.21 sigma, 36.04 b).
    """
    with mpmath.workdps(60):
        u_max = 1 - mpmath.mpf(2) ** -53
        if isinstance(mech, GaussianMechanism):
            s = mpmath.mpf(mech.sigma)
            z_max = s * mpmath.sqrt(2) * mpmath.erfinv(2 * u_max - 1)
            tail = mpmath.ncdf(-(z_max - 1) / s)  # P[z > z_max - Δ]
        else:
            b = mpmath.mpf(mech.scale)
            z_max = -b * mpmath.log(2 * (1 - u_max))
            tail = mpmath.exp(-(z_max - 1) / b) / 2
        # inputs 0 and Δ = 1: the output exceeds z_max with probability >= tail - 2^-52 (one uniform cell)
        # under the shifted input and never under the other, so δ(ε) >= that for every ε
        exact_delta = tail - mpmath.mpf(2) ** -52
    claimed = mech.delta
    assert exact_delta > claimed  # what the old keyed path sampled breaks its claim (1.5e-3 at (50, 1e-12))
    try:
        kp = KeyedPrivatizer(mechanism=mech, n_sensors=1, key=KEY)
    except InvalidParameterError as err:
        assert "exact grid mechanism" in str(err)
        return
    g = kp.guarantee()
    assert g.delta is not None and exact_delta <= g.delta  # fails on the old code: (50, 1e-12) stated


def _discrete_gaussian_delta(epsilon: float, sigma2: float, shift: int) -> mpmath.mpf:
    """Exact δ(ε) of the 1-D discrete Gaussian N_Z(0, σ²) against its shift by ``shift`` (mpmath sum)."""
    with mpmath.workdps(40):
        s2 = mpmath.mpf(sigma2)
        width = int(40 * math.sqrt(sigma2)) + shift + 10
        weights = {z: mpmath.exp(-mpmath.mpf(z) ** 2 / (2 * s2)) for z in range(-width - shift, width + shift + 1)}
        norm = mpmath.fsum(weights.values())
        e = mpmath.exp(epsilon)
        excess = (max(mpmath.mpf(0), weights[z] - e * weights[z - shift]) for z in range(-width, width + 1))
        return mpmath.fsum(excess) / norm


def test_keyed_grid_release_meets_its_claim_exactly_and_a_weakened_one_does_not() -> None:
    """The keyed path samples the exact discrete Gaussian (pmf test below); its exact δ at the claim, 1-D."""
    mech = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0, resolution=1 / 8)
    shift = 8 + 1  # inputs at distance <= 1 land at most floor(1/g) + 1 grid steps apart after rounding
    assert _discrete_gaussian_delta(1.0, float(mech.sigma2), shift) <= 1e-5
    assert _discrete_gaussian_delta(1.0, float(mech.sigma2) / 2, shift) > 1e-5
    assert "SIM-CDP" in KeyedPrivatizer(mechanism=mech, n_sensors=1, key=KEY).guarantee().kind


def test_keyed_round_trip_to_the_grid_and_wrong_key() -> None:
    y = np.random.default_rng(3).uniform(-2, 2, (20, 10))
    kp = _keyed()
    g = kp.mechanism.resolution
    rel = kp.privatize_all(y)
    assert isinstance(rel, KeyedRelease) and len(rel.nonces) == 20 and rel.sensors == tuple(range(10))
    assert np.array_equal(rel.values / g, np.rint(rel.values / g))  # outputs on the grid
    on_grid = np.rint(y / g) * g
    assert np.array_equal(_keyed().remove_noise(rel), on_grid)  # a separate trusted holder of the key
    one = kp.privatize(y[4, 7], sensor=7)
    assert one.values.shape == () and kp.remove_noise(one) == on_grid[4, 7]
    wrong = _keyed(OTHER_KEY).remove_noise(rel)
    assert np.mean(wrong == on_grid) < 0.05
    with pytest.raises(ValueError):
        rel.values[0, 0] = 1.0  # the published values are read-only


def test_keyed_rounding_is_exact_and_huge_readings_are_refused_before_charging() -> None:
    """Defect 4 on the keyed path: rint(x/0.1) put -101.55 and -102.55 11 grid steps apart; exact rounding 10."""
    lap = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, resolution=0.1, dimension=1)
    kp = KeyedPrivatizer(mechanism=lap, n_sensors=1, key=KEY)
    for x in (-101.55, -102.55, 0.05, 2.5e-1):
        exact = round(Fraction(x) / Fraction(0.1))  # oracle: the rational x / g, rounded half to even
        assert kp.remove_noise(kp.privatize(x, sensor=0)) == exact * 0.1
    assert kp.accountant is not None and kp.accountant.readings == 4
    with pytest.raises(InvalidParameterError, match="magnitude"):
        kp.privatize(1e300, sensor=0)
    priv = SensorPrivatizer(mechanism=lap, n_sensors=1)
    with pytest.raises(InvalidParameterError, match="magnitude"):
        priv.privatize_all([1e300])
    assert kp.accountant.readings == 4 and priv.accountant is not None and priv.accountant.readings == 0


def test_keyed_noise_is_never_reused_across_objects() -> None:
    """Defect 7: two objects with the same key, same sensor, same reading: independent noise (fresh nonces)."""
    a, b = _keyed(), _keyed()
    y = np.full(10, 0.3)
    ra, rb = a.privatize_all(y), b.privatize_all(y)
    assert ra.nonces != rb.nonces and not np.array_equal(ra.values, rb.values)
    # the difference of two releases of different readings is not the difference of the readings
    rc = b.privatize_all(y + 1.0)
    assert not np.allclose(rc.values - ra.values, 1.0)
    # the noise is a fixed function of (key, sensor, nonce): the key holder needs only the nonce
    z = a.noise(sensor=3, nonce=ra.nonces[0])
    assert ra.values[3] == pytest.approx(np.rint(0.3 / a.mechanism.resolution) * a.mechanism.resolution + z)


def test_sensor_needs_only_its_own_key() -> None:
    kp = _keyed()
    assert kp.sensor_key(3) == derive_sensor_key(KEY, 3) != derive_sensor_key(KEY, 4)
    nonce = bytes(range(16))
    z = keyed_noise(kp.mechanism, kp.sensor_key(3), sensor=3, nonce=nonce)
    assert kp.noise(sensor=3, nonce=nonce) == z * kp.mechanism.resolution


def test_keyed_budget_and_guarantee() -> None:
    kp = _keyed(epsilon_budget=1.9)
    kp.privatize_all(np.zeros((2, 10)))
    g = kp.guarantee()
    assert "SIM-CDP" in g.kind and "2 release" in g.kind
    assert g.epsilon == privacy_spent(kp.mechanism, readings=2, delta=1e-5).epsilon
    allowed = kp.accountant.remaining()  # type: ignore[union-attr]
    assert allowed is not None
    kp.privatize_all(np.zeros((allowed, 10)))
    with pytest.raises(BudgetExceededError):
        kp.privatize(0.0, sensor=1)
    assert "secret" in repr(kp) and KEY.hex() not in repr(kp)


def test_keyed_bad_inputs() -> None:
    with pytest.raises(InvalidParameterError, match="32 bytes"):
        KeyedPrivatizer(mechanism=_grid_mech(n=2), n_sensors=2, key=b"short")
    with pytest.raises(InvalidParameterError, match="exact grid mechanism"):
        KeyedPrivatizer(mechanism=GaussianMechanism(epsilon=1, delta=0.1, sensitivity=1), n_sensors=2, key=KEY)
    kp = _keyed()
    with pytest.raises(InvalidParameterError, match="NaN"):
        kp.privatize(float("nan"), sensor=0)
    with pytest.raises(InvalidParameterError, match="nonce"):
        kp.noise(sensor=0, nonce=b"short")
    with pytest.raises(InvalidParameterError, match="KeyedRelease"):
        kp.remove_noise(np.zeros(10))  # type: ignore[arg-type]
    rel = kp.privatize_all(np.zeros(10))
    with pytest.raises(InvalidParameterError, match="values for"):
        kp.remove_noise(KeyedRelease(values=rel.values[:5], sensors=rel.sensors, nonces=rel.nonces))


def test_keyed_discrete_noise_has_the_right_pmf() -> None:
    """Chi-square of the keystream-driven integer noise against the discrete Gaussian pmf (and discrete Laplace)."""
    mech = DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0, resolution=0.5, dimension=5)
    kp = KeyedPrivatizer(mechanism=mech, n_sensors=5, key=KEY)
    z = np.rint(kp.privatize_all(np.zeros((2_000, 5))).values / 0.5).ravel()
    s2 = float(mech.sigma2)
    wide = np.arange(-400, 401)
    pmf = np.exp(-(wide**2) / (2 * s2)) / np.exp(-(wide**2) / (2 * s2)).sum()
    counts = np.array([np.sum(z == k) for k in wide])
    keep = pmf * z.size >= 5
    obs = np.append(counts[keep], z.size - counts[keep].sum())
    exp = np.append(pmf[keep] * z.size, z.size - (pmf[keep] * z.size).sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-4
    # the same test rejects a pmf with 1.2x the variance (the check can fail)
    pmf_wrong = np.exp(-(wide**2) / (2.88 * s2)) / np.exp(-(wide**2) / (2.88 * s2)).sum()
    exp_wrong = np.append(pmf_wrong[keep] * z.size, z.size - (pmf_wrong[keep] * z.size).sum())
    assert stats.chisquare(obs, exp_wrong).pvalue < 1e-4
    lap = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, resolution=0.5, dimension=5)
    zl = np.rint(KeyedPrivatizer(mechanism=lap, n_sensors=5, key=KEY).privatize_all(np.zeros((2_000, 5))).values
                 / 0.5).ravel()
    b = float(lap.scale)
    pmf_l = np.exp(-np.abs(wide) / b) / np.exp(-np.abs(wide) / b).sum()
    counts_l = np.array([np.sum(zl == k) for k in wide])
    keep_l = pmf_l * zl.size >= 5
    obs_l = np.append(counts_l[keep_l], zl.size - counts_l[keep_l].sum())
    exp_l = np.append(pmf_l[keep_l] * zl.size, zl.size - (pmf_l[keep_l] * zl.size).sum())
    assert stats.chisquare(obs_l, exp_l).pvalue > 1e-4

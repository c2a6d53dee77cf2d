"""Exact discrete samplers (Canonne, Kamath & Steinke 2020) and the floating-point-safe mechanisms.

Oracles: the exact pmfs exp(−|y|/b)/Z and exp(−y²/2σ²)/Z (chi-square goodness of fit on seeded draws,
and the same test rejecting a wrong variance); exp(−γ) for the Bernoulli sampler (binomial test);
dp_accounting's RDP conversion for the calibration; the seeded empirical DP check of _empirical.py
(passes at the claimed ε, fails with halved noise).
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import numpy as np
import pytest
from _empirical import check_dp
from scipy import stats

import dpcloak.privacy.bulk as bulk
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy import DiscreteGaussianMechanism, DiscreteLaplaceMechanism, Mechanism
from dpcloak.privacy.discrete import (
    bernoulli_exp,
    discrete_gaussian_noise,
    generator_randbelow,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)


def _chi2_pvalue(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    counts = np.array([np.sum(draws == k) for k in support])
    expected = pmf * draws.size
    keep = expected >= 5  # pool the tails into one cell
    obs = np.append(counts[keep], draws.size - counts[keep].sum())
    exp = np.append(expected[keep], draws.size - expected[keep].sum())
    return float(stats.chisquare(obs, exp).pvalue)


def _dgauss_pmf(support: np.ndarray, sigma2: float) -> np.ndarray:
    wide = np.arange(-2000, 2001)
    return np.exp(-(support**2) / (2 * sigma2)) / np.exp(-(wide**2) / (2 * sigma2)).sum()


def test_bernoulli_exp_frequency() -> None:
    rb = generator_randbelow(np.random.default_rng(0))
    n = 20_000
    for gamma in (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 4)):
        hits = sum(bernoulli_exp(gamma, rb) for _ in range(n))
        assert stats.binomtest(hits, n, math.exp(-float(gamma))).pvalue > 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(7, 3), Fraction(25)])
def test_discrete_gaussian_pmf(sigma2: Fraction) -> None:
    rb = generator_randbelow(np.random.default_rng(1))
    draws = np.array([sample_discrete_gaussian(sigma2, rb) for _ in range(30_000)])
    support = np.arange(-40, 41)
    assert _chi2_pvalue(draws, support, _dgauss_pmf(support, float(sigma2))) > 1e-4
    # the same test rejects a variance 20% off: it can fail
    assert _chi2_pvalue(draws, support, _dgauss_pmf(support, 1.2 * float(sigma2))) < 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(7, 3), Fraction(25), Fraction(1.366**2 * 2**20)])
def test_vectorised_discrete_gaussian_pmf(sigma2: Fraction) -> None:
    """Bulk proposals + exact acceptance: same pmf oracle; a 20 % variance error is rejected by the same test."""
    draws = discrete_gaussian_noise(sigma2, 30_000, rng=np.random.default_rng(4))
    sd = math.sqrt(float(sigma2))
    if sd < 10:
        support = np.arange(-40, 41)
        assert _chi2_pvalue(draws, support, _dgauss_pmf(support, float(sigma2))) > 1e-4
        assert _chi2_pvalue(draws, support, _dgauss_pmf(support, 1.2 * float(sigma2))) < 1e-4
    else:  # wide: cells of equal normal probability (midpoint rule: the CDF at half-integers is Φ to ~1e-8)
        edges = np.round(stats.norm.ppf(np.linspace(0, 1, 41)[1:-1], scale=sd)) - 0.5
        for var, ok in ((1.0, True), (1.2, False)):
            cdf = stats.norm.cdf(edges, scale=sd * math.sqrt(var))
            expected = np.diff(np.concatenate([[0.0], cdf, [1.0]])) * draws.size
            observed = np.bincount(np.searchsorted(edges, draws), minlength=edges.size + 1)
            assert (stats.chisquare(observed, expected).pvalue > 1e-4) == ok


@pytest.mark.parametrize("scale", [Fraction(3, 2), Fraction(1, 3), Fraction(5)])
def test_discrete_laplace_pmf(scale: Fraction) -> None:
    rb = generator_randbelow(np.random.default_rng(2))
    draws = np.array([sample_discrete_laplace(scale, rb) for _ in range(30_000)])
    support = np.arange(-60, 61)
    b = float(scale)
    pmf = np.exp(-np.abs(support) / b) * math.tanh(1 / (2 * b))  # normaliser (1 − e^{−1/b})/(1 + e^{−1/b})
    assert _chi2_pvalue(draws, support, pmf) > 1e-4
    wrong = np.exp(-np.abs(support) / (1.2 * b)) * math.tanh(1 / (2.4 * b))
    assert _chi2_pvalue(draws, support, wrong) < 1e-4


def test_discrete_gaussian_calibration_tight_and_rechecked() -> None:
    mech = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=0.5, dimension=50)
    # oracle: sqrt(floor((Δ2/g + √d)²)) in 60-digit mpmath; the double may only round up, by one ulp at most
    mp = pytest.importorskip("mpmath")
    with mp.workdps(60):
        ratio = Fraction(0.5) / Fraction(mech.resolution)
        bound = mp.mpf(ratio.numerator) / ratio.denominator + mp.sqrt(50)
        exact = mp.sqrt(mp.floor(bound**2))
    assert exact <= mech.grid_sensitivity <= exact * (1 + 2**-51)
    # oracle: zCDP with rho = (Δ/σ)²/2 from the exact rational σ², converted at the optimum order by mpmath
    rho = Fraction(mech.grid_sensitivity) ** 2 / (2 * mech.sigma2)
    with mp.workdps(60):
        def loss(a: object, r: object) -> object:
            return a * r + mp.log(1 - 1 / a) + (mp.log(1e5) - mp.log(a)) / (a - 1)
        for scale, side in ((1, "le"), (Fraction(99, 100) ** 2, "gt")):
            r = mp.mpf((rho / scale).numerator) / (rho / scale).denominator
            best = mp.findroot(lambda a, r=r: r * (a - 1) ** 2 + mp.log(a) - mp.log(1e5), 1 + mp.sqrt(mp.log(1e5) / r))
            value = loss(best, r)
            assert (value <= 1.0) if side == "le" else (value > 1.0)
    assert isinstance(mech.sigma2, Fraction) and isinstance(mech, Mechanism)
    with pytest.raises(AttributeError, match="immutable"):
        mech.sigma2 = Fraction(1)
    g = mech.guarantee()
    assert (g.kind, g.epsilon, g.delta, g.norm) == ("(ε, δ)-DP", 1.0, 1e-5, "l2")


def test_discrete_laplace_exact_epsilon() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=0.7, sensitivity=1.0, resolution=0.1, dimension=3)
    assert mech.grid_sensitivity == 9 + 3  # floor(1/0.1) = 9 in binary floating point... plus 3 cells
    assert Fraction(mech.grid_sensitivity) / mech.scale == Fraction(0.7)  # small numerator: b is exact
    tiny = DiscreteLaplaceMechanism(epsilon=0.3, sensitivity=1.0)  # 1025/0.3 has a 63-bit numerator: rounded up
    target = Fraction(tiny.grid_sensitivity) / Fraction(0.3)
    assert target <= tiny.scale <= target * (1 + Fraction(1, 2**55)) and tiny.scale.numerator < 2**57
    assert mech.guarantee().kind == "ε-DP"


def test_outputs_on_grid_reproducible_and_secure_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    mech = DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0, resolution=0.125, dimension=2)
    x = np.array([[0.3, 1.7], [2.05, -4.0]])
    y = mech.privatize(x, rng=5)
    assert y.shape == x.shape and np.array_equal(y, mech.privatize(x, rng=5))
    assert np.array_equal(y / 0.125, np.round(y / 0.125))
    keys: list[int] = []
    real = bulk.os.urandom
    monkeypatch.setattr(bulk.os, "urandom", lambda n: keys.append(n) or real(n))
    mech.privatize(x)  # rng=None: ChaCha20 under a fresh key from the OS CSPRNG
    assert keys == [32, 12]
    DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=2).privatize(x)
    assert keys == [32, 12, 32, 12]


Discrete = DiscreteGaussianMechanism | DiscreteLaplaceMechanism


def _halved(mech: Discrete) -> Discrete:
    """A deliberately under-noised copy (bypassing the mechanism's immutability on purpose)."""
    weak = copy.copy(mech)
    if isinstance(weak, DiscreteGaussianMechanism):
        object.__setattr__(weak, "sigma2", mech.sigma2 / 4)
    else:
        object.__setattr__(weak, "scale", mech.scale / 2)
    return weak


@pytest.mark.parametrize(
    ("mech", "n"),
    [
        (DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0, resolution=0.25), 80_000),
        (DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, resolution=0.25), 20_000),
    ],
    ids=["discrete-gauss", "discrete-laplace"],
)
def test_empirical_dp_passes_and_halved_noise_fails(
    mech: DiscreteGaussianMechanism | DiscreteLaplaceMechanism, n: int
) -> None:
    g = mech.guarantee()
    assert g.epsilon is not None and g.delta is not None
    x, x_prime = np.zeros((n, 1)), np.full((n, 1), g.sensitivity)  # n independent one-coordinate releases
    rng = np.random.default_rng(11)
    cells = mech.resolution
    ok = check_dp(mech.privatize(x, rng=rng).ravel() / cells, mech.privatize(x_prime, rng=rng).ravel() / cells,
                  epsilon=g.epsilon, delta=g.delta)
    assert ok.passed, ok
    weak = _halved(mech)
    bad = check_dp(weak.privatize(x, rng=rng).ravel() / cells, weak.privatize(x_prime, rng=rng).ravel() / cells,
                   epsilon=g.epsilon, delta=g.delta)
    assert not bad.passed, bad


def test_bad_inputs() -> None:
    with pytest.raises(InvalidParameterError, match="resolution"):
        DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0, resolution=0.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        DiscreteGaussianMechanism(epsilon=1.0, delta=1.0, sensitivity=1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        DiscreteLaplaceMechanism(epsilon=-1.0, sensitivity=1.0)
    with pytest.raises(InvalidParameterError, match="dimension"):
        DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=0)
    with pytest.raises(InvalidParameterError, match="NaN"):
        DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0).privatize([0.0, float("nan")], rng=0)
    rb = generator_randbelow(np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="gamma"):
        bernoulli_exp(Fraction(-1), rb)
    with pytest.raises(InvalidParameterError, match="sigma2"):
        sample_discrete_gaussian(Fraction(0), rb)
    with pytest.raises(InvalidParameterError, match="scale"):
        sample_discrete_laplace(Fraction(-2), rb)


# --- issue 12, defects 4, 5, 10 and issue 18: regression tests (oracle: exact Fraction arithmetic) ----------------


def _exact_index(x: float, g: float) -> int:
    return round(Fraction(x) / Fraction(g))


def _replayed_shift(mech: Discrete, x: np.ndarray, x_prime: np.ndarray) -> np.ndarray:
    """Grid-step shift between the releases of x and x′ under the same seed (the noise cancels exactly)."""
    return np.rint((mech.privatize(x, rng=9) - mech.privatize(x_prime, rng=9)) / mech.resolution)


def test_rounding_at_non_power_of_two_resolution_never_exceeds_grid_sensitivity() -> None:
    """Defect 4: rint(x/0.1) of −101.55 and −102.55 differ by 11 steps against a calibrated 10."""
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, resolution=0.1)
    x, x_prime = -101.55, -102.55
    assert abs(Fraction(x) - Fraction(x_prime)) <= 1  # neighbours for Δ1 = 1 (exact arithmetic)
    shift = _replayed_shift(mech, np.array(x), np.array(x_prime))
    assert shift == _exact_index(x, 0.1) - _exact_index(x_prime, 0.1)
    assert abs(shift) <= mech.grid_sensitivity == 10


def test_grid_indices_equal_exact_rational_rounding_near_ties() -> None:
    """to_grid equals round(Fraction(x)/Fraction(g)) on inputs built to sit on or next to ties."""
    rng = np.random.default_rng(5)
    for g in (0.1, 0.3, 1 / 3, 0.7, 2.5e-7, 1e5):
        k = rng.integers(-10**9, 10**9, 400).astype(float)
        ties = (k + 0.5) * g
        xs = np.concatenate([ties, np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf), k * g])
        got = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, resolution=g).to_grid(xs)
        assert got.tolist() == [_exact_index(float(v), g) for v in xs]


def test_every_pair_within_sensitivity_moves_at_most_grid_sensitivity_steps() -> None:
    """Pairs at exact distance ≤ Δ, both ends on or one ulp beside a tie: ≤ ⌊Δ/g⌋ + 1 steps (Fraction oracle)."""
    rng = np.random.default_rng(6)
    for sens, g in ((1.0, 0.1), (0.7, 0.1), (1.0, 0.3), (2.0, 0.7)):
        per_coordinate = math.floor(Fraction(sens) / Fraction(g)) + 1  # one coordinate's share of grid_sensitivity
        span = math.floor(sens / g)
        k = rng.integers(-10**4, 10**4, 300)
        pairs = []
        for ki in k:
            for a in _beside((ki + 0.5) * g):
                for b in _beside((ki - span - 0.5) * g) + _beside((ki - span + 0.5) * g) + _beside(a - sens):
                    if abs(Fraction(a) - Fraction(b)) <= Fraction(sens):
                        pairs.append((a, b))
        x, x_prime = np.array(pairs).T
        mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=sens, resolution=g, dimension=x.size)
        steps = np.abs(_replayed_shift(mech, x, x_prime))  # each pair is one coordinate of the release
        assert steps.max() <= per_coordinate


def _beside(v: float) -> list[float]:
    return [float(np.nextafter(v, -np.inf)), v, float(np.nextafter(v, np.inf))]


def test_grid_mechanisms_refuse_more_coordinates_than_dimension() -> None:
    """Defect 5: a 400-sensor release through a mechanism calibrated for 1 coordinate is refused."""
    from dpcloak.privacy import SensorPrivatizer

    gauss = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0, resolution=0.1)
    lap = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, resolution=0.1)
    for mech in (gauss, lap):
        with pytest.raises(InvalidParameterError, match="dimension=1"):
            mech.privatize(np.zeros(400), rng=0)
        with pytest.raises(InvalidParameterError, match="dimension=1"):
            mech.privatize_grid([0, 0], rng=0)
        with pytest.raises(InvalidParameterError, match="n_sensors"):
            SensorPrivatizer(mechanism=mech, n_sensors=400)
        assert mech.privatize(np.zeros((3, 1)), rng=0).shape == (3, 1)  # three one-coordinate releases


def test_rounding_slack_counted_for_every_released_coordinate() -> None:
    """With dimension=400, inputs 4e-8 apart (each coordinate just across a tie) stay within grid_sensitivity."""
    g = 0.1
    k = np.arange(400, dtype=float)
    x = np.nextafter((k + 0.5) * g, -np.inf)
    while not all(_exact_index(float(v), g) == i for v, i in zip(x, k.astype(int), strict=True)):  # below each tie
        x = np.nextafter(x, -np.inf)
    x_prime = np.nextafter((k + 0.5) * g, np.inf)
    l1 = sum(abs(Fraction(a) - Fraction(b)) for a, b in zip(x, x_prime, strict=True))
    l2 = math.sqrt(sum((Fraction(a) - Fraction(b)) ** 2 for a, b in zip(x, x_prime, strict=True)))
    lap = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=float(l1) * 2, resolution=g, dimension=400)
    gauss = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=l2 * 2, resolution=g, dimension=400)
    exact = np.array([_exact_index(float(b), g) - _exact_index(float(a), g) for a, b in zip(x, x_prime, strict=True)])
    assert exact.sum() == 400  # every coordinate crosses a tie: 400 grid steps of slack
    assert np.abs(_replayed_shift(lap, x_prime, x)).sum() <= lap.grid_sensitivity
    assert math.sqrt(float((_replayed_shift(gauss, x_prime, x) ** 2).sum())) <= gauss.grid_sensitivity


def test_readings_too_large_for_the_grid_are_refused_not_overflowing() -> None:
    """Defect 10 / issue 18: 1e308 gave OverflowError; readings beyond 2^52 grid steps are refused by name."""
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0)
    for bad in ([1e308], [0.0, -1e17]):
        with pytest.raises(InvalidParameterError, match="magnitude"):
            DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=2).privatize(bad, rng=0)
    limit = 2.0**52 * mech.resolution
    assert abs(float(mech.privatize(limit, rng=0)) - limit) < 1e3 * mech.scale_value
    with pytest.raises(InvalidParameterError, match="magnitude"):
        mech.privatize(np.nextafter(limit, np.inf), rng=0)
    with pytest.raises(InvalidParameterError, match="magnitude"):
        DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0).privatize(1e308, rng=0)


def test_extreme_budgets_are_refused_not_overflowing() -> None:
    """Issue 18: DiscreteGaussianMechanism(epsilon=1e-300, delta=1e-300) raised OverflowError in dp_accounting."""
    with pytest.raises(InvalidParameterError, match="grid steps"):
        DiscreteGaussianMechanism(epsilon=1e-300, delta=1e-300, sensitivity=1.0)
    with pytest.raises(InvalidParameterError, match="grid steps"):
        DiscreteLaplaceMechanism(epsilon=1e-300, sensitivity=1.0)


def test_integer_readings_beyond_two_to_the_53_round_exactly() -> None:
    """Regression (issue 28, defect 7): int64 neighbours 6 apart (Δ = 7.2, g = 8) got indices 2 apart through doubles.

    Oracle: round(Fraction(x, g)) on the integers themselves; every pair stays within the grid sensitivity (1).
    """
    mech = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=7.2, resolution=8.0)
    assert mech.grid_sensitivity == 1
    rng = np.random.default_rng(28)
    x = np.concatenate([2**53 + np.arange(64), rng.integers(2**53, 2**55 - 16, 2000)]).astype(np.int64)
    for xs in (x, x + 6, x - 6):
        got = mech.to_grid(xs)
        assert got.tolist() == [round(Fraction(int(v), 8)) for v in xs]
    assert np.abs(mech.to_grid(x + 6) - mech.to_grid(x)).max() <= mech.grid_sensitivity
    shifts = [int(_replayed_shift(mech, np.array(int(v)), np.array(int(v) + 6))) for v in x[:200]]
    assert max(map(abs, shifts)) <= mech.grid_sensitivity
    # Python ints of any size and exact rationals round exactly too; beyond 2^52 steps they are refused
    assert mech.to_grid([2**54 + 5, Fraction(2**54 + 5, 3)]).tolist() == [
        round(Fraction(2**54 + 5, 8)), round(Fraction(2**54 + 5, 24))]
    with pytest.raises(InvalidParameterError, match="magnitude"):
        mech.to_grid([2**55 + 1])
    with pytest.raises(InvalidParameterError, match="magnitude"):
        mech.to_grid([10**400])


def test_float_mechanisms_refuse_integers_no_double_holds() -> None:
    """Defect 7's float side: a reading a double would round (2^53 + 1) is refused, not silently moved."""
    from dpcloak.privacy import GaussianMechanism, LaplaceMechanism

    for mech in (GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0),
                 LaplaceMechanism(epsilon=1.0, sensitivity=1.0)):
        with pytest.raises(InvalidParameterError, match="exactly representable"):
            mech.privatize(np.array([2**53 + 1], dtype=np.int64), rng=0)
        with pytest.raises(InvalidParameterError, match="exactly representable"):
            mech.privatize([Fraction(1, 3)], rng=0)
        assert mech.privatize(np.array([3, -(2**20)], dtype=np.int64), rng=0).shape == (2,)  # doubles hold these

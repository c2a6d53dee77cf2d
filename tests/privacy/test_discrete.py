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

import dpcloak.privacy.discrete as discrete
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy import DiscreteGaussianMechanism, DiscreteLaplaceMechanism, Mechanism
from dpcloak.privacy.discrete import (
    bernoulli_exp,
    gaussian_rdp_epsilon,
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
    assert mech.grid_sensitivity == pytest.approx(0.5 / mech.resolution + math.sqrt(50))
    assert gaussian_rdp_epsilon(noise_multiplier=mech.noise_multiplier, delta=1e-5) <= 1.0
    assert gaussian_rdp_epsilon(noise_multiplier=0.99 * mech.noise_multiplier, delta=1e-5) > 1.0
    assert isinstance(mech.sigma2, Fraction) and isinstance(mech, Mechanism)
    with pytest.raises(AttributeError, match="immutable"):
        mech.sigma2 = Fraction(1)
    g = mech.guarantee()
    assert (g.kind, g.epsilon, g.delta, g.norm) == ("(ε, δ)-DP", 1.0, 1e-5, "l2")


def test_discrete_laplace_exact_epsilon() -> None:
    mech = DiscreteLaplaceMechanism(epsilon=0.7, sensitivity=1.0, resolution=0.1, dimension=3)
    assert mech.grid_sensitivity == 9 + 3  # floor(1/0.1) = 9 in binary floating point... plus 3 cells
    assert Fraction(mech.grid_sensitivity) / mech.scale == Fraction(0.7)
    assert mech.guarantee().kind == "ε-DP"


def test_outputs_on_grid_reproducible_and_secure_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    mech = DiscreteGaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0, resolution=0.125)
    x = np.array([[0.3, 1.7], [2.05, -4.0]])
    y = mech.privatize(x, rng=5)
    assert y.shape == x.shape and np.array_equal(y, mech.privatize(x, rng=5))
    assert np.array_equal(y / 0.125, np.round(y / 0.125))
    calls = []

    def spy(n: int) -> int:
        calls.append(n)
        return discrete.secrets.randbelow(n)

    monkeypatch.setattr(discrete, "secure_randbelow", spy)
    mech.privatize(x)  # rng=None: the cryptographically secure source
    DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0).privatize(x)
    assert len(calls) > 0


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
    x, x_prime = np.zeros(n), np.full(n, g.sensitivity)
    rng = np.random.default_rng(11)
    cells = mech.resolution
    ok = check_dp(mech.privatize(x, rng=rng) / cells, mech.privatize(x_prime, rng=rng) / cells,
                  epsilon=g.epsilon, delta=g.delta)
    assert ok.passed, ok
    weak = _halved(mech)
    bad = check_dp(weak.privatize(x, rng=rng) / cells, weak.privatize(x_prime, rng=rng) / cells,
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

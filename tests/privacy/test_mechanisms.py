"""Gaussian and Laplace mechanisms.

Oracles: the exact Gaussian privacy profile (Balle & Wang 2018, Thm 8) evaluated independently with
scipy.stats.norm; the printed formulas of Gilbert & McMillan (paper) and Dwork & Roth (classic); a seeded
empirical DP check with a DKW tolerance (tests/privacy/_empirical.py) that must pass at the claimed
ε and fail when the noise is halved.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import numpy as np
import pytest
from _empirical import check_dp
from scipy import stats

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    PrivacyGuarantee,
    gaussian_delta,
    gaussian_epsilon,
)
from dpcloak.privacy.mechanisms import QuantileNoise

PARAMS = [(1.0, 0.1, 1.0), (0.5, 1e-5, 0.3), (5.0, 1e-8, 2.0), (0.05, 1e-3, 1.0), (20.0, 1e-12, 0.01), (2.0, 0.5, 7.0)]


def scipy_profile(eps: float, sigma: float, sens: float) -> float:
    """Balle & Wang's δ(ε) with scipy's normal CDF (independent of the library's log-space evaluation)."""
    a, b = sens / (2 * sigma) - eps * sigma / sens, -sens / (2 * sigma) - eps * sigma / sens
    return float(stats.norm.cdf(a) - math.exp(eps) * stats.norm.cdf(b))


@pytest.mark.parametrize(("eps", "delta", "sens"), PARAMS)
def test_analytic_sigma_is_smallest_meeting_delta(eps: float, delta: float, sens: float) -> None:
    mech = GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens)
    assert gaussian_delta(epsilon=eps, sigma=mech.sigma, sensitivity=sens) <= delta
    assert gaussian_delta(epsilon=eps, sigma=0.99 * mech.sigma, sensitivity=sens) > delta
    if delta >= 1e-6:  # scipy's difference of CDFs is accurate here
        assert scipy_profile(eps, mech.sigma, sens) <= delta * (1 + 1e-9)
        assert scipy_profile(eps, 0.99 * mech.sigma, sens) > delta
    assert mech.variance == pytest.approx(mech.sigma**2)


def test_profile_matches_scipy_and_inverse() -> None:
    for eps, sigma, sens in [(0.3, 1.0, 1.0), (1.0, 0.7, 0.5), (3.0, 2.0, 4.0)]:
        d = gaussian_delta(epsilon=eps, sigma=sigma, sensitivity=sens)
        assert d == pytest.approx(scipy_profile(eps, sigma, sens), rel=1e-10)
        e = gaussian_epsilon(delta=d, sigma=sigma, sensitivity=sens)
        assert e == pytest.approx(eps, rel=1e-9)
        assert gaussian_delta(epsilon=e, sigma=sigma, sensitivity=sens) <= d


def test_paper_calibration_reproduces_seed000_formula() -> None:
    for eps, delta, sens in [(1.0, 0.1, 0.135897), (0.5, 1e-3, 2.0), (4.0, 0.1, 1.0)]:
        mech = GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens, calibration="paper")
        assert mech.sigma == 2 * math.log(1.25 / delta) * sens / eps  # Gilbert & McMillan Lemma 3, as printed
        assert gaussian_delta(epsilon=eps, sigma=mech.sigma, sensitivity=sens) <= delta


def test_paper_calibration_refused_when_it_overspends() -> None:
    # eps = 10, delta = 0.5: 2 ln(2.5)/10 = 0.18 gives an exact delta of about 0.76 > 0.5
    with pytest.raises(InvalidParameterError, match="exceeds the target delta"):
        GaussianMechanism(epsilon=10, delta=0.5, sensitivity=1.0, calibration="paper")


def test_classic_calibration_formula_and_refusal() -> None:
    mech = GaussianMechanism(epsilon=0.5, delta=1e-5, sensitivity=2.0, calibration="classic")
    assert mech.sigma == math.sqrt(2 * math.log(1.25 / 1e-5)) * 2.0 / 0.5  # Dwork & Roth Thm A.1
    assert mech.sigma >= GaussianMechanism(epsilon=0.5, delta=1e-5, sensitivity=2.0).sigma
    for eps in (1.0, 1.5, 10.0):
        with pytest.raises(InvalidParameterError, match=r"\(0, 1\)"):
            GaussianMechanism(epsilon=eps, delta=0.1, sensitivity=1.0, calibration="classic")


def test_laplace_scale_and_guarantee() -> None:
    mech = LaplaceMechanism(epsilon=0.3, sensitivity=0.7)
    assert mech.scale == pytest.approx(0.7 / 0.3, rel=1e-15)
    assert mech.sensitivity / mech.scale <= mech.epsilon
    g = mech.guarantee()
    assert (g.kind, g.epsilon, g.delta, g.norm) == ("ε-DP", 0.3, 0.0, "l1")
    u = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(mech.noise_quantile(u), stats.laplace.ppf(u, scale=mech.scale), rtol=1e-12)


def test_mechanisms_are_immutable() -> None:
    mech = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0)
    with pytest.raises(AttributeError, match="immutable"):
        mech.sigma = 0.1
    with pytest.raises(AttributeError, match="immutable"):
        LaplaceMechanism(epsilon=1.0, sensitivity=1.0).scale = 0.1


def test_guarantee_and_protocols() -> None:
    mech = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=0.5, neighbouring="swap two adjacent sources")
    g = mech.guarantee()
    assert isinstance(g, PrivacyGuarantee)
    assert (g.kind, g.epsilon, g.delta, g.sensitivity, g.norm) == ("(ε, δ)-DP", 1.0, 0.1, 0.5, "l2")
    assert g.neighbouring == "swap two adjacent sources"
    assert isinstance(mech, Mechanism) and isinstance(mech, QuantileNoise)
    u = np.array([0.025, 0.5, 0.975])
    np.testing.assert_allclose(mech.noise_quantile(u), stats.norm.ppf(u, scale=mech.sigma), rtol=1e-12)


def test_privatize_shape_seed_and_moments() -> None:
    mech = GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0)
    x = np.arange(6.0).reshape(2, 3)
    a, b = mech.privatize(x, rng=3), mech.privatize(x, rng=3)
    assert a.shape == (2, 3) and np.array_equal(a, b)
    assert mech.privatize(2.0, rng=0).shape == ()
    z = mech.privatize(np.zeros(100_000), rng=1)
    # standard error of the sample sd is sigma / sqrt(2n) ~ 0.0024 sigma: 5 standard errors
    assert abs(z.std() / mech.sigma - 1) < 5 / math.sqrt(2 * 100_000)


def _weakened(mech: GaussianMechanism | LaplaceMechanism) -> GaussianMechanism | LaplaceMechanism:
    """A deliberately under-noised copy (bypassing the mechanism's immutability on purpose)."""
    weak = copy.copy(mech)
    if isinstance(weak, GaussianMechanism):
        object.__setattr__(weak, "sigma", mech.sigma / 2)
    else:
        object.__setattr__(weak, "scale", mech.scale / 2)
    return weak


N = 400_000


@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(epsilon=1.0, delta=1e-3, sensitivity=1.0),
        GaussianMechanism(epsilon=0.5, delta=1e-2, sensitivity=2.0, calibration="analytic"),
        LaplaceMechanism(epsilon=1.0, sensitivity=1.0),
    ],
    ids=["gauss-1-1e-3", "gauss-0.5-1e-2", "laplace-1"],
)
def test_empirical_dp_passes_and_halved_noise_fails(mech: GaussianMechanism | LaplaceMechanism) -> None:
    g = mech.guarantee()
    assert g.epsilon is not None and g.delta is not None
    x, x_prime = np.zeros(N), np.full(N, g.sensitivity)
    rng = np.random.default_rng(2024)
    ok = check_dp(mech.privatize(x, rng=rng), mech.privatize(x_prime, rng=rng), epsilon=g.epsilon, delta=g.delta)
    assert ok.passed, ok
    weak = _weakened(mech)
    bad = check_dp(weak.privatize(x, rng=rng), weak.privatize(x_prime, rng=rng), epsilon=g.epsilon, delta=g.delta)
    assert not bad.passed, bad


def test_empirical_check_passes_for_paper_and_classic() -> None:
    rng = np.random.default_rng(7)
    for mech in (GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0, calibration="paper"),
                 GaussianMechanism(epsilon=0.5, delta=0.05, sensitivity=1.0, calibration="classic")):
        x = np.zeros(100_000)
        res = check_dp(mech.privatize(x, rng=rng), mech.privatize(x + 1.0, rng=rng), epsilon=mech.epsilon,
                       delta=mech.delta)
        assert res.passed, res


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0, "delta": 0.1, "sensitivity": 1.0}, "epsilon"),
        ({"epsilon": -1.0, "delta": 0.1, "sensitivity": 1.0}, "epsilon"),
        ({"epsilon": float("nan"), "delta": 0.1, "sensitivity": 1.0}, "epsilon"),
        ({"epsilon": 1.0, "delta": 0.0, "sensitivity": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": 1.0, "sensitivity": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": -0.1, "sensitivity": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": 0.1, "sensitivity": 0.0}, "sensitivity"),
        ({"epsilon": 1.0, "delta": 0.1, "sensitivity": -2.0}, "sensitivity"),
        ({"epsilon": 1.0, "delta": 0.1, "sensitivity": 1.0, "calibration": "optimal"}, "calibration"),
    ],
)
def test_gaussian_bad_inputs(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        GaussianMechanism(**kwargs)


def test_bad_inputs_laplace_and_readings() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        LaplaceMechanism(epsilon=0.0, sensitivity=1.0)
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        LaplaceMechanism(epsilon=1.0, sensitivity=0.0)
    mechs = (GaussianMechanism(epsilon=1.0, delta=0.1, sensitivity=1.0), LaplaceMechanism(epsilon=1.0, sensitivity=1.0))
    for mech in mechs:
        with pytest.raises(InvalidParameterError, match="NaN"):
            mech.privatize([1.0, float("nan")], rng=0)
        with pytest.raises(InvalidParameterError, match="NaN"):
            mech.privatize(float("inf"), rng=0)
    with pytest.raises(InvalidParameterError, match="delta"):
        gaussian_epsilon(delta=1.5, sigma=1.0, sensitivity=1.0)


def test_analytic_never_overspends_under_high_precision_oracle() -> None:
    """60 random (ε, δ, Δ) over wide ranges, checked with 50-digit mpmath (independent of float rounding)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def profile(eps: float, sigma: float, sens: float):  # type: ignore[no-untyped-def]
        e, s, d = mp.mpf(eps), mp.mpf(sigma), mp.mpf(sens)
        return mp.ncdf(d / (2 * s) - e * s / d) - mp.exp(e) * mp.ncdf(-d / (2 * s) - e * s / d)

    rng = np.random.default_rng(0)
    for _ in range(60):
        eps, delta, sens = 10 ** rng.uniform(-5, 1.7), 10 ** rng.uniform(-15, -0.05), 10 ** rng.uniform(-3, 3)
        sigma = GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens).sigma
        assert profile(eps, sigma, sens) <= delta
        assert profile(eps, 0.999 * sigma, sens) > delta


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 0.1), (0.5, 1e-5), (5.0, 1e-8)])
def test_analytic_sigma_agrees_with_dp_accounting(eps: float, delta: float) -> None:
    """dp_accounting's own analytic-Gaussian calibration, an independent implementation."""
    from dp_accounting.pld import accountant, common

    theirs = accountant.get_smallest_gaussian_noise(common.DifferentialPrivacyParameters(eps, delta), 1, 2.5)
    assert GaussianMechanism(epsilon=eps, delta=delta, sensitivity=2.5).sigma == pytest.approx(theirs, rel=1e-6)


# --- issue 12, defects 2 and 10: regression tests -------------------------------------------------------------------


@pytest.mark.parametrize(
    "mech",
    [GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=0.8), LaplaceMechanism(epsilon=1.0, sensitivity=3.7)],
    ids=["gauss", "laplace"],
)
def test_readings_whose_ulp_swamps_the_noise_are_refused(mech: GaussianMechanism | LaplaceMechanism) -> None:
    """Defect 10: 1e17 with noise scale ~3.7 came back unchanged (oracle: np.spacing, replayed addition)."""
    scale = mech.sigma if isinstance(mech, GaussianMechanism) else mech.scale
    z = np.random.default_rng(0).standard_normal(1000) * scale
    assert np.mean((1e17 + z) == 1e17) > 0.5  # the replayed float addition: the noise is mostly lost
    with pytest.raises(InvalidParameterError, match="magnitude"):
        mech.privatize([0.0, 1e17], rng=0)
    with pytest.raises(InvalidParameterError, match="magnitude"):
        mech.privatize(1e308, rng=0)
    accepted = 2.0 ** math.floor(math.log2(scale * 2**44))  # ulp = 2^-8 scale or less: accepted
    assert np.spacing(accepted) <= scale * 2**-8
    out = mech.privatize(np.full(20_000, accepted), rng=1)
    assert abs(np.std(out - accepted) / math.sqrt(mech.variance) - 1) < 0.05  # the noise survives rounding


@pytest.mark.parametrize(
    "mech",
    [GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0), LaplaceMechanism(epsilon=1.0, sensitivity=1.0)],
    ids=["gauss", "laplace"],
)
def test_float_guarantee_says_it_holds_only_for_idealised_noise(mech: GaussianMechanism | LaplaceMechanism) -> None:
    """Defect 2 (mechanism side): the float release's guarantee names the real-valued idealisation and Mironov 2012."""
    g = mech.guarantee()
    assert "idealised real-valued noise only" in g.mechanism
    assert "Mironov 2012" in g.source


def test_laplace_scale_never_overspends_in_exact_arithmetic() -> None:
    """Δ1/b ≤ ε exactly (Fraction oracle); a float-only re-check let Δ1/b exceed ε by an ulp in ~45 % of cases."""
    rng = np.random.default_rng(0)
    for _ in range(500):
        eps, sens = 10 ** rng.uniform(-3, 2), 10 ** rng.uniform(-3, 3)
        mech = LaplaceMechanism(epsilon=eps, sensitivity=sens)
        assert Fraction(sens) / Fraction(mech.scale) <= Fraction(eps)
        assert mech.scale <= float(np.nextafter(np.nextafter(sens / eps, math.inf), math.inf))  # and still tight

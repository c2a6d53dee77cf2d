"""The cos² density of Farokhi & Sandberg (Corollaries 1–3, 5): sampler, closed forms, guarantee.

Oracles: an independent CDF (cumulative quadrature of the density written out here), scipy's KS
test with a fixed seed, adaptive quadrature for Fisher information and Q, Monte Carlo.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher import (
    BoundedOptimalNoise,
    FisherGuarantee,
    corollary2_kappa,
    corollary2_quality_published,
    cos2_fisher_information,
    fisher_information_1d,
    product_fisher_information,
    quality_1d,
)
from dpcloak.privacy.local import SensorPrivatizer
from dpcloak.privacy.mechanisms import Mechanism, PrivacyGuarantee

COROLLARY2_CONSTANT = (2 * math.pi**2 - 3) / (6 * math.pi**2)


def cos2_pdf(w, low, high):
    """Corollary 1/3's density, written independently of the library."""
    width = high - low
    inside = (w >= low) & (w <= high)
    return np.where(inside, 2 / width * np.cos(math.pi / width * (w - (high + low) / 2)) ** 2, 0.0)


def reference_cdf(low, high):
    grid = np.linspace(low, high, 20001)
    cum = integrate.cumulative_trapezoid(cos2_pdf(grid, low, high), grid, initial=0.0)
    return lambda x: np.interp(x, grid, cum)


@pytest.mark.parametrize(("low", "high"), [(0.0, 1.0), (-3.0, 2.0)])
def test_sampler_matches_density_ks(low, high):
    noise = BoundedOptimalNoise(low=low, high=high)
    x = noise.sample(20000, rng=12345)
    assert x.min() >= low and x.max() <= high
    assert stats.kstest(x, reference_cdf(low, high)).pvalue > 1e-3
    # a deliberately wrong sampler (uniform on the same support) must be rejected
    wrong = np.random.default_rng(12345).uniform(low, high, 20000)
    assert stats.kstest(wrong, reference_cdf(low, high)).pvalue < 1e-6


def test_cdf_and_inverse_cdf_agree_with_reference():
    noise = BoundedOptimalNoise(low=-1.0, high=3.0)
    w = np.linspace(-1.0, 3.0, 401)
    np.testing.assert_allclose(noise.cdf(w), reference_cdf(-1.0, 3.0)(w), atol=1e-7)
    u = np.concatenate([np.linspace(0, 1, 1001), [1e-12, 1e-6, 1 - 1e-9]])
    np.testing.assert_allclose(noise.cdf(noise.ppf(u)), u, rtol=1e-12, atol=1e-15)
    assert noise.ppf(np.array(0.5)) == pytest.approx(1.0)


def test_vector_product_form_marginals_and_independence():
    noise = BoundedOptimalNoise(low=[0.0, -2.0], high=[1.0, 2.0])
    x = noise.sample(20000, rng=7)
    assert x.shape == (20000, 2)
    for i, (lo, hi) in enumerate([(0.0, 1.0), (-2.0, 2.0)]):
        assert stats.kstest(x[:, i], reference_cdf(lo, hi)).pvalue > 1e-3
    assert abs(np.corrcoef(x.T)[0, 1]) < 4 / math.sqrt(20000)
    w = np.array([[0.3, 0.5]])
    assert noise.pdf(w)[0] == pytest.approx(cos2_pdf(0.3, 0, 1) * cos2_pdf(0.5, -2, 2))


@pytest.mark.parametrize(("low", "high"), [(0.0, 1.0), (-2.0, 0.5), (3.0, 7.0)])
def test_fisher_information_equals_closed_form(low, high):
    noise = BoundedOptimalNoise(low=low, high=high)
    numeric = fisher_information_1d(lambda w: float(cos2_pdf(w, low, high)), low=low, high=high)
    assert numeric.trace == pytest.approx(4 * math.pi**2 / (high - low) ** 2, rel=1e-6)
    assert noise.fisher_information().trace == pytest.approx(numeric.trace, rel=1e-6)
    assert cos2_fisher_information(width=high - low) == pytest.approx(numeric.trace, rel=1e-6)


def test_corollary2_i_kappa_and_appendix_e_discrepancy():
    lows, highs = np.array([0.0, -1.0, 2.0]), np.array([1.0, 2.0, 2.5])
    parts = [fisher_information_1d(lambda w, a=a, b=b: float(cos2_pdf(w, a, b)), low=a, high=b)
             for a, b in zip(lows, highs, strict=True)]
    numeric = product_fisher_information(parts)
    noise = BoundedOptimalNoise(low=lows, high=highs)
    bound = noise.cramer_rao_bound()
    assert bound.value == pytest.approx(np.trace(np.linalg.inv(numeric.matrix)), rel=1e-6)
    # equal widths: Tr(I^-1) = kappa L^2 with kappa = m/(4 pi^2) (corrected)
    same = BoundedOptimalNoise(low=[0.0, 0.0, 0.0], high=[2.0, 2.0, 2.0])
    assert same.cramer_rao_bound().value == pytest.approx(corollary2_kappa(m=3) * 4.0)
    # Appendix E's kappa (int u'^2 = pi^2, I = kappa / L^2) misses the factor 4 of I = 4 int u'^2
    assert 1.0 / math.pi**2 != pytest.approx(noise.fisher_information().matrix[0, 0], rel=0.1)


def test_corollary2_ii_constant_reproduced_numerically():
    for width in (1.0, 2.5):
        q = quality_1d(lambda w, L=width: float(cos2_pdf(w, 0.0, L)), low=0.0, high=width)
        assert q / width**2 == pytest.approx(COROLLARY2_CONSTANT, rel=1e-9)
        assert q / width**2 == pytest.approx(0.2827, abs=5e-5)
        assert corollary2_quality_published(low=0.0, high=width) == pytest.approx(q, rel=1e-9)
        assert BoundedOptimalNoise(low=0.0, high=width).quality() == pytest.approx(q, rel=1e-9)
    # the printed constant is wrong for a support not ending at 0; the general formula is right
    q_sym = quality_1d(lambda w: float(cos2_pdf(w, -1.0, 1.0)), low=-1.0, high=1.0)
    assert BoundedOptimalNoise(low=-1.0, high=1.0).quality() == pytest.approx(q_sym, rel=1e-9)
    assert corollary2_quality_published(low=-1.0, high=1.0) > 3 * q_sym
    # Appendix E's variance (pi^2 - 6) L^2 / (12 pi^2)
    assert q_sym == pytest.approx((math.pi**2 - 6) * 4 / (12 * math.pi**2), rel=1e-9)


def test_quality_and_cramer_rao_by_monte_carlo():
    noise = BoundedOptimalNoise(low=[0.0, 1.0], high=[2.0, 2.0])
    w = noise.sample(200000, rng=3)
    sq = np.sum(w**2, axis=1)
    assert abs(sq.mean() - noise.quality()) < 4 * sq.std() / math.sqrt(sq.size)
    # the unbiased estimator x_hat = y - E w has MSE = total variance >= Tr(I^-1)
    mse = float(np.sum(w.var(axis=0)))
    assert mse >= noise.cramer_rao_bound().value


def test_query_bound_singular_for_scalar_query_and_exact_for_square():
    noise = BoundedOptimalNoise(low=0.0, high=1.0)
    assert not noise.cramer_rao_bound(query=[[0.5, 0.5]]).applies
    vec = BoundedOptimalNoise(low=[0.0, 0.0], high=[1.0, 2.0])
    c = np.array([[1.0, 1.0], [0.0, 2.0]])
    j = np.diag([4 * math.pi**2, math.pi**2])
    assert vec.cramer_rao_bound(query=c).value == pytest.approx(np.trace(np.linalg.inv(c.T @ j @ c)))


def test_privatize_and_flow1_sensor_integration():
    noise = BoundedOptimalNoise(low=0.0, high=0.5)
    assert isinstance(noise, Mechanism)
    readings = np.array([1.0, 2.0, 3.0])
    sensors = SensorPrivatizer(mechanism=noise, n_sensors=3, simulation=True)
    out = sensors.privatize_all(np.tile(readings, (100, 1)), rng=1)
    assert out.shape == (100, 3)
    assert np.all(out - readings >= 0.0) and np.all(out - readings <= 0.5)  # a reading never decreases
    g = sensors.guarantee()
    assert isinstance(g, FisherGuarantee) and isinstance(g, PrivacyGuarantee)
    assert g.epsilon is None and g.delta is None and not g.is_differential_privacy
    assert "not differential privacy" in g.kind.lower() and "NOT differential privacy" in g.note
    assert g.cramer_rao_bound == pytest.approx(0.25 / (4 * math.pi**2))
    assert g.fisher_information == pytest.approx(16 * math.pi**2)
    vec = BoundedOptimalNoise(low=[0.0, 0.0], high=[1.0, 1.0])
    assert vec.privatize(np.zeros((5, 2)), rng=0).shape == (5, 2)


def test_bad_inputs_raise():
    for low, high in [(1.0, 1.0), (2.0, 1.0), (0.0, math.nan), ([0.0, 1.0], [1.0, 0.5])]:
        with pytest.raises(InvalidParameterError):
            BoundedOptimalNoise(low=low, high=high)
    with pytest.raises(InvalidParameterError, match="same length"):
        BoundedOptimalNoise(low=[0.0, 0.0], high=[1.0, 1.0, 1.0])
    vec = BoundedOptimalNoise(low=[0.0, 0.0], high=[1.0, 1.0])
    with pytest.raises(InvalidParameterError, match="last axis"):
        vec.privatize(np.zeros(3))
    with pytest.raises(InvalidParameterError):
        vec.ppf([[0.2, 1.5]])
    with pytest.raises(InvalidParameterError):
        BoundedOptimalNoise(low=0.0, high=1.0).privatize([1.0, math.inf])
    with pytest.raises(InvalidParameterError):
        corollary2_kappa(m=0)


def test_keyed_privatizer_refuses_continuous_noise():
    """The keyed path drives only exact integer samplers: continuous noise from a keyed uniform is truncated."""
    from dpcloak.privacy.local import KeyedPrivatizer

    noise = BoundedOptimalNoise(low=-0.2, high=0.3)
    with pytest.raises(InvalidParameterError, match="exact grid mechanism"):
        KeyedPrivatizer(mechanism=noise, n_sensors=2, key=b"0123456789abcdef0123456789abcdef")


def test_corollary5_nonlinear_query_fisher_information_by_finite_differences():
    # y = f(x) + w, f the sample variance of n = 2 entries (Example 3); oracle: the n x n Fisher
    # information of p(y|x) = gamma(y - f(x)) from its definition (quadrature over y, d/dx by differences)
    low, high = 0.0, 1.5
    noise = BoundedOptimalNoise(low=low, high=high)

    def f(x):
        return float(np.var(x, ddof=1))

    x = np.array([0.3, 1.1])
    h = 1e-6

    def dens(y, xx):
        return float(noise.pdf(y - f(xx)))

    info = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h

            def integrand(y, ei=ei, ej=ej):
                p = dens(y, x)
                if p <= 0:
                    return 0.0
                di = (dens(y, x + ei) - dens(y, x - ei)) / (2 * h)
                dj = (dens(y, x + ej) - dens(y, x - ej)) / (2 * h)
                return di * dj / p

            info[i, j] = integrate.quad(integrand, f(x) + low + 1e-5, f(x) + high - 1e-5, limit=200)[0]
    grad = np.array([x[0] - x[1], x[1] - x[0]])  # gradient of the n = 2 sample variance
    expected = noise.fisher_information().trace * np.outer(grad, grad)  # F^T J F (Section 3, Corollary 5)
    np.testing.assert_allclose(info, expected, rtol=1e-4, atol=1e-6)


def test_no_dp_accounting_for_fisher_guarantees():
    from dpcloak.privacy.accounting import dp_event

    with pytest.raises(InvalidParameterError, match="no \\(epsilon, delta\\) accounting"):
        dp_event(SensorPrivatizer(mechanism=BoundedOptimalNoise(low=0.0, high=1.0), n_sensors=2, simulation=True))

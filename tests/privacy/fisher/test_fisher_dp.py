"""The DP view of Farokhi & Sandberg (§5): Propositions 3–4, condition (16), Example 2's bound, 1 + κ.

Oracles: the Laplace privacy loss evaluated on a grid of outputs, the exact Gaussian privacy
profile (Balle & Wang, :func:`dpcloak.privacy.mechanisms.gaussian_delta`), Monte Carlo of the
pseudo-inverse estimator, quadrature for the Fisher informations, brute force over the box.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher import (
    compare_laplace_gaussian,
    example2_error_bound,
    fisher_information_1d,
    gaussian_dp_condition,
    laplace_epsilon_at_quality,
    laplace_scale,
    laplace_scale_published,
    residual_range,
    weighted_average_sensitivity,
)
from dpcloak.privacy.mechanisms import gaussian_delta

WEIGHTS = np.array([0.1, 0.2, 0.3, 0.4])


def laplace_privacy_loss(b, shift):
    """max_y |log Lap(y; 0, b) − log Lap(y; shift, b)| on a fine grid of outputs."""
    y = np.linspace(-20 * b - abs(shift), 20 * b + abs(shift), 200001)
    return float(np.max(np.abs(np.abs(y - shift) - np.abs(y)) / b))


def test_proposition3_corrected_scale_is_epsilon_dp_and_printed_is_not():
    low, high, eps = 0.0, 5.0, 0.5
    sens = weighted_average_sensitivity(weights=WEIGHTS, low=low, high=high)
    assert sens == pytest.approx(2.0)
    # worst neighbours: the entry with the largest weight moves across the whole range
    b = laplace_scale(epsilon=eps, weights=WEIGHTS, low=low, high=high)
    assert laplace_privacy_loss(b, sens) == pytest.approx(eps, rel=1e-6)
    b_printed = laplace_scale_published(epsilon=eps, weights=WEIGHTS, low=low, high=high)
    assert laplace_privacy_loss(b_printed, sens) == pytest.approx(sens**2 / eps, rel=1e-6)
    assert laplace_privacy_loss(b_printed, sens) > 10 * eps


def test_laplace_epsilon_at_equal_quality():
    theta = 0.5
    eps = laplace_epsilon_at_quality(theta=theta, weights=WEIGHTS, low=0.0, high=5.0)
    b = math.sqrt(theta / 2)  # Q = 2 b^2
    assert laplace_privacy_loss(b, 2.0) == pytest.approx(eps, rel=1e-6)
    assert laplace_epsilon_at_quality(theta=theta, weights=WEIGHTS, low=0.0, high=5.0,
                                      reading="published") == pytest.approx(2.0 * math.sqrt(theta / 2))


def test_condition16_is_sufficient_against_the_exact_gaussian_profile():
    eps = np.geomspace(0.05, 5.0, 25)
    dlt = np.geomspace(1e-8, 0.5, 25)
    e_grid, d_grid = np.meshgrid(eps, dlt)
    for theta, low, high in [(1.0, 0.0, 2.5), (9.0, 0.0, 5.0), (0.3, -1.0, 1.0)]:
        sens = weighted_average_sensitivity(weights=WEIGHTS, low=low, high=high)
        ok = gaussian_dp_condition(epsilon=e_grid, delta=d_grid, theta=theta, weights=WEIGHTS, low=low, high=high)
        assert ok.any()
        for e, d in zip(e_grid[ok], d_grid[ok], strict=True):
            assert gaussian_delta(epsilon=e, sigma=math.sqrt(theta), sensitivity=sens) <= d


def test_condition16_as_printed_overclaims_when_theta_is_not_one():
    # theta is a variance: with theta = 9 the printed condition uses 9 where the std is 3
    eps = np.geomspace(0.05, 5.0, 25)
    dlt = np.geomspace(1e-8, 0.5, 25)
    e_grid, d_grid = np.meshgrid(eps, dlt)
    kw = {"theta": 9.0, "weights": WEIGHTS, "low": 0.0, "high": 12.5}
    printed = gaussian_dp_condition(epsilon=e_grid, delta=d_grid, reading="published", **kw)
    sens = weighted_average_sensitivity(weights=WEIGHTS, low=0.0, high=12.5)
    violations = [gaussian_delta(epsilon=e, sigma=3.0, sensitivity=sens) > d
                  for e, d in zip(e_grid[printed], d_grid[printed], strict=True)]
    assert any(violations)
    # Figure 2's setting theta / Delta = 1 with Delta = 1: both readings agree
    fig2 = {"theta": 1.0, "weights": [1.0, 0.5], "low": 0.0, "high": 1.0}
    np.testing.assert_array_equal(
        gaussian_dp_condition(epsilon=e_grid, delta=d_grid, reading="published", **fig2),
        gaussian_dp_condition(epsilon=e_grid, delta=d_grid, **fig2))
    assert not gaussian_dp_condition(epsilon=100.0, delta=0.6, **fig2)  # needs delta <= 1/2


def test_example2_bound_corrected_vs_printed_against_monte_carlo():
    rng = np.random.default_rng(4)
    theta = 0.8
    x = np.array([1.0, 3.0, 0.5, 2.0])
    c = WEIGHTS
    pinv = c / (c @ c)
    y = c @ x + rng.normal(0.0, math.sqrt(theta), 200000)
    err = np.sum((np.outer(y, pinv) - x) ** 2, axis=1)  # x_hat = C^dagger y
    corrected = example2_error_bound(x, weights=c, noise_fisher=1 / theta)
    printed = example2_error_bound(x, weights=c, noise_fisher=1 / theta, reading="published")
    assert corrected == pytest.approx(err.mean(), rel=0.01)  # Gaussian: the bound is attained
    assert printed > err.mean() * 1.5  # a "lower bound" above the attained error


def test_laplace_vs_gaussian_fisher_and_one_plus_kappa():
    theta, low, high = 0.5, 0.0, 1.0
    comp = compare_laplace_gaussian(weights=WEIGHTS, low=low, high=high, theta=theta)
    b = comp.laplace_scale
    lap = fisher_information_1d(lambda w: math.exp(-abs(w) / b) / (2 * b), points=[0.0]).trace
    s = math.sqrt(theta)
    gau = fisher_information_1d(lambda w: math.exp(-0.5 * (w / s) ** 2) / (s * math.sqrt(2 * math.pi))).trace
    assert lap == pytest.approx(comp.laplace_fisher, rel=1e-6)
    assert gau == pytest.approx(comp.gaussian_fisher, rel=1e-6)
    assert lap / gau == pytest.approx(2.0, rel=1e-6)
    # brute force the ratio of the two (corrected) bounds over the box
    pts = np.vstack([np.array(list(itertools.product((low, high), repeat=4))),
                     np.random.default_rng(0).uniform(low, high, (2000, 4)), np.full((1, 4), 0.5)])
    ratios = [example2_error_bound(p, weights=WEIGHTS, noise_fisher=comp.gaussian_fisher)
              / example2_error_bound(p, weights=WEIGHTS, noise_fisher=comp.laplace_fisher) for p in pts]
    assert min(ratios) == pytest.approx(comp.ratio_min, rel=1e-9)
    assert max(ratios) == pytest.approx(comp.ratio_max, rel=1e-6)
    gram = WEIGHTS @ WEIGHTS
    assert comp.ratio_min == pytest.approx(1 + 1 / (1 + 2 * gram * comp.residual_max / theta))
    assert comp.ratio_max == pytest.approx(2.0)  # x = 0 = 0 * C lies in the box, where a(x) = 0
    assert comp.kappa_published == pytest.approx(1 / (1 + 2 * gram**2 * comp.residual_max / theta))
    assert comp.gaussian_epsilon > 0 and comp.laplace_epsilon == pytest.approx(1.0 / b * 0.4)


def test_section5_entropies_against_scipy_and_printed_forms():
    for theta in (0.25, 1.0, 4.0):
        comp = compare_laplace_gaussian(weights=WEIGHTS, low=0.0, high=1.0, theta=theta)
        lap = stats.laplace(scale=math.sqrt(theta / 2)).entropy() / math.log(2)
        gau = stats.norm(scale=math.sqrt(theta)).entropy() / math.log(2)
        assert comp.laplace_entropy_bits == pytest.approx(lap)
        assert comp.gaussian_entropy_bits == pytest.approx(gau)
        assert comp.gaussian_entropy_bits > comp.laplace_entropy_bits  # the paper's conclusion holds
        printed_lap = math.log2(math.e * math.sqrt(2) * theta)
        printed_gau = math.log2(math.sqrt(math.e * 2 * math.pi) * theta)
        assert (printed_lap == pytest.approx(lap)) == (theta == 1.0)  # printed forms right only at theta = 1
        assert (printed_gau == pytest.approx(gau)) == (theta == 1.0)


def test_residual_range_against_brute_force():
    box = residual_range(weights=WEIGHTS, low=1.0, high=2.0)
    a_min, a_max = box.minimum, box.maximum
    proj = np.eye(4) - np.outer(WEIGHTS, WEIGHTS) / (WEIGHTS @ WEIGHTS)
    pts = np.random.default_rng(1).uniform(1.0, 2.0, (20000, 4))
    vals = np.sum((pts @ proj) ** 2, axis=1)
    assert a_min <= vals.min() + 1e-12 and a_max >= vals.max() - 1e-12
    # no multiple of C lies in [1, 2]^4, so the minimum is positive; L-BFGS-B from many starts agrees
    oracle = min(optimize.minimize(lambda v: float(np.sum((proj @ v) ** 2)), x0, method="L-BFGS-B",
                                   bounds=[(1.0, 2.0)] * 4, options={"ftol": 1e-15, "gtol": 1e-12}).fun
                 for x0 in pts[:5])
    assert a_min > 0.1 and a_min == pytest.approx(oracle, rel=1e-6)


def test_dp_bad_inputs():
    with pytest.raises(InvalidParameterError, match="epsilon"):
        laplace_scale(epsilon=0.0, weights=WEIGHTS, low=0.0, high=1.0)
    with pytest.raises(InvalidParameterError, match="low must be < high"):
        weighted_average_sensitivity(weights=WEIGHTS, low=1.0, high=1.0)
    with pytest.raises(InvalidParameterError, match="non-zero"):
        weighted_average_sensitivity(weights=[0.0, 0.0], low=0.0, high=1.0)
    with pytest.raises(InvalidParameterError, match="delta"):
        gaussian_dp_condition(epsilon=1.0, delta=0.0, theta=1.0, weights=WEIGHTS, low=0.0, high=1.0)
    with pytest.raises(InvalidParameterError, match="theta"):
        compare_laplace_gaussian(weights=WEIGHTS, low=0.0, high=1.0, theta=-1.0)

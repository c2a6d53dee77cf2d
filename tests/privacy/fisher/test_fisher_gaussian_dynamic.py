"""Corollary 6 (Gaussian optimum) and Theorem 4 / Example 4 (trajectory noise) of Farokhi & Sandberg.

Oracles: direct numerical minimisation of Problem 3's cost over covariances (scipy.optimize),
Example 4's printed closed forms, Monte Carlo of the least-squares smoother, quadrature.
"""

import math

import numpy as np
import pytest
from scipy import optimize

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher import (
    DynamicOptimalNoise,
    GaussianOptimalNoise,
    example4_error_published,
    example4_quality_published,
    fisher_information_1d,
    problem3_objective,
    vehicle_model,
)
from dpcloak.privacy.mechanisms import Mechanism


def _min_over_covariances(objective, dim):
    """Minimise objective(Σ) over Σ = L Lᵀ (L lower-triangular), from several starts."""
    idx = np.tril_indices(dim)

    def cost(theta):
        low = np.zeros((dim, dim))
        low[idx] = theta
        return objective(low @ low.T + 1e-12 * np.eye(dim))

    best = min((optimize.minimize(cost, np.eye(dim)[idx] * s, method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
                for s in (0.5, 1.0, 2.0)), key=lambda r: r.fun)
    return best.fun


def test_corollary6_problem3_corrected_covariance_is_the_minimiser():
    c = np.array([[1.0, 0.5, 0.0], [0.2, 1.0, 1.0]])
    rho = 3.0
    corrected = GaussianOptimalNoise(query=c, rho=rho)
    published = GaussianOptimalNoise(query=c, rho=rho, convention="published")
    best = _min_over_covariances(lambda s: problem3_objective(s, query=c, rho=rho), 2)
    assert corrected.objective() == pytest.approx(best, rel=1e-6)
    assert published.objective() > best * 1.1
    # scalar query: 2 sqrt(rho) (corrected) against 2.5 sqrt(rho) (printed factor 2)
    scalar = [[0.6, 0.8]]
    assert GaussianOptimalNoise(query=scalar, rho=rho).objective() == pytest.approx(2 * math.sqrt(rho))
    assert GaussianOptimalNoise(query=scalar, rho=rho, convention="published").objective() == pytest.approx(
        2.5 * math.sqrt(rho))


def test_corollary6_problem4_minimises_fisher_at_quality_bound():
    c = np.array([[1.0, 2.0], [0.0, 1.0]])
    theta = 2.0
    noise = GaussianOptimalNoise(query=c, theta=theta)
    assert noise.quality() == pytest.approx(theta)

    def fisher_at_quality(s):
        s = s * theta / np.trace(s)  # put every candidate on the constraint Q = theta
        return float(np.trace(c.T @ np.linalg.solve(s, c)))

    best = _min_over_covariances(fisher_at_quality, 2)
    assert noise.query_fisher_information().trace == pytest.approx(best, rel=1e-6)
    # m = 1: the optimum is a Gaussian of variance theta whatever C (Section 3, after Corollary 6)
    assert GaussianOptimalNoise(query=[[0.1, 0.3, 0.6]], theta=theta).covariance[0, 0] == pytest.approx(theta)


def test_gaussian_fisher_information_quadrature_and_sampling():
    noise = GaussianOptimalNoise(query=[[1.0, 1.0]], theta=0.8)
    sigma = math.sqrt(0.8)
    numeric = fisher_information_1d(lambda w: math.exp(-0.5 * (w / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi)))
    assert noise.fisher_information().trace == pytest.approx(numeric.trace, rel=1e-6)
    assert noise.cramer_rao_bound().value == pytest.approx(0.8)
    multi = GaussianOptimalNoise(query=np.array([[1.0, 0.0], [1.0, 1.0]]), rho=1.0)
    w = multi.sample(100000, rng=5)
    np.testing.assert_allclose(np.cov(w.T), multi.covariance, atol=0.02)
    assert isinstance(multi, Mechanism)
    assert multi.privatize(np.zeros((4, 2)), rng=1).shape == (4, 2)
    assert not multi.guarantee().is_differential_privacy


def test_gaussian_bad_inputs():
    with pytest.raises(InvalidParameterError, match="full row rank"):
        GaussianOptimalNoise(query=[[1.0, 2.0], [2.0, 4.0]], rho=1.0)
    with pytest.raises(InvalidParameterError, match="exactly one"):
        GaussianOptimalNoise(query=[[1.0]], rho=1.0, theta=1.0)
    with pytest.raises(InvalidParameterError, match="exactly one"):
        GaussianOptimalNoise(query=[[1.0]])
    for rho in (0.0, -1.0):
        with pytest.raises(InvalidParameterError, match="rho"):
            GaussianOptimalNoise(query=[[1.0]], rho=rho)
    with pytest.raises(InvalidParameterError):
        GaussianOptimalNoise(query=[[1.0]], rho=1.0, convention="paper")


@pytest.mark.parametrize("horizon", [1, 2, 3, 5, 10, 50])
def test_example4_closed_forms_match_mechanism(horizon):
    a, c = vehicle_model()
    rho = 0.7
    published = DynamicOptimalNoise(A=a, C=c, horizon=horizon, rho=rho, convention="published")
    assert published.quality() == pytest.approx(example4_quality_published(horizon=horizon, rho=rho), rel=1e-9)
    assert published.cramer_rao_bound().value == pytest.approx(
        example4_error_published(horizon=horizon, rho=rho), rel=1e-9)
    corrected = DynamicOptimalNoise(A=a, C=c, horizon=horizon, rho=rho)
    assert corrected.quality() == pytest.approx(published.quality() / 2)
    assert corrected.cramer_rao_bound().value == pytest.approx(published.cramer_rao_bound().value / 2)


def test_example4_growth_rates():
    a, c = vehicle_model()
    ts = np.array([1000, 2000, 4000, 8000])
    q = [DynamicOptimalNoise(A=a, C=c, horizon=int(t), rho=1.0).quality() for t in ts]
    e = [DynamicOptimalNoise(A=a, C=c, horizon=int(t), rho=1.0).cramer_rao_bound().value for t in ts]
    q_slope = np.polyfit(np.log(ts), np.log(q), 1)[0]
    e_slope = np.polyfit(np.log(ts), np.log(e), 1)[0]
    assert q_slope == pytest.approx(1.5, abs=0.01)  # Q = O(T^{3/2}) as printed
    assert e_slope == pytest.approx(-0.5, abs=0.01)  # the paper's O(T^{-3/2}) is wrong: O(T^{-1/2})
    assert e[-1] * math.sqrt(ts[-1]) == pytest.approx(2.0, rel=1e-3)  # 2/sqrt(T rho), corrected Sigma


def test_theorem4_corrected_covariance_minimises_problem3():
    a, c = vehicle_model()
    noise = DynamicOptimalNoise(A=a, C=c, horizon=4, rho=2.0)
    gram = noise.gramian

    def objective(s):
        return float(np.trace(np.linalg.inv(s)) + 2.0 * np.trace(gram @ s))

    assert noise.objective() == pytest.approx(_min_over_covariances(objective, 2), rel=1e-6)
    published = DynamicOptimalNoise(A=a, C=c, horizon=4, rho=2.0, convention="published")
    assert published.objective() > noise.objective() * 1.1


def test_least_squares_smoother_attains_the_bound_monte_carlo():
    a, c = vehicle_model()
    noise = DynamicOptimalNoise(A=a, C=c, horizon=6, rho=1.0)
    x0 = np.array([3.0, -0.5])
    clean = np.stack([c @ np.linalg.matrix_power(a, k) @ x0 for k in range(7)])  # (T+1, m)
    y = noise.privatize(np.broadcast_to(clean, (50000, 7, 1)), rng=11)
    est = noise.least_squares_estimate(y)
    err = np.sum((est - x0) ** 2, axis=1)
    assert abs(err.mean() - noise.cramer_rao_bound().value) < 4 * err.std() / math.sqrt(err.size)
    assert np.mean(est, axis=0) == pytest.approx(x0, abs=0.02)  # unbiased
    # noise is C A^k z: one offset propagated through the dynamics
    z = np.array([1.0, 2.0])
    np.testing.assert_allclose(noise.noise_trajectory(z)[:, 0], [1.0 + 2.0 * k for k in range(7)])


def test_section4_trace_inequality_published_is_false():
    a, c = vehicle_model()
    for horizon in (1, 5, 20):
        info = DynamicOptimalNoise(A=a, C=c, horizon=horizon, rho=1.0).fisher_information().matrix
        tr_inv, tr = np.trace(np.linalg.inv(info)), np.trace(info)
        assert tr_inv >= 4 / tr  # Proposition 5: n^2 / Tr(I)
        assert tr_inv < (horizon + 1) ** 2 * 4 / tr  # the printed (T+1)^2 n^2 / Tr(I) fails


def test_dynamic_bad_inputs():
    a, c = vehicle_model()
    with pytest.raises(InvalidParameterError, match="observable"):
        DynamicOptimalNoise(A=np.eye(2), C=[[1.0, 0.0]], horizon=5, rho=1.0)
    with pytest.raises(InvalidParameterError, match="observable"):
        DynamicOptimalNoise(A=[[1.0, 0.0], [0.0, 2.0]], C=[[0.0, 1.0]], horizon=5, rho=1.0)
    with pytest.raises(InvalidParameterError, match="invertible"):
        DynamicOptimalNoise(A=a, C=c, horizon=0, rho=1.0)  # Psi_0^T Psi_0 = diag(1, 0) is singular
    with pytest.raises(InvalidParameterError, match="rho"):
        DynamicOptimalNoise(A=a, C=c, horizon=3, rho=0.0)
    with pytest.raises(InvalidParameterError, match="columns"):
        DynamicOptimalNoise(A=a, C=[[1.0, 0.0, 0.0]], horizon=3, rho=1.0)
    noise = DynamicOptimalNoise(A=a, C=c, horizon=3, rho=1.0)
    with pytest.raises(InvalidParameterError, match="trailing shape"):
        noise.privatize(np.zeros((3, 1)))

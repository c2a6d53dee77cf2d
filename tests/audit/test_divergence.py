"""δ_ε and pure ε of discrete pairs.

Oracles: hand computation on randomized response and on the thesis's lower-bound constructions
(Theorems 10.5, 10.7, 10.12), Lemma 10.6 (TV perturbation bound) on random pairs, and the exact
Gaussian privacy profile of Balle & Wang (approached from below by finer binnings).
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpcloak.audit import delta_epsilon, pure_epsilon, total_variation
from dpcloak.errors import InvalidParameterError


def rr(eps):
    p = math.exp(eps) / (1 + math.exp(eps))
    return np.array([p, 1 - p]), np.array([1 - p, p])


def test_randomized_response_by_hand():
    P, Q = rr(math.log(3))  # P = (3/4, 1/4)
    assert delta_epsilon(P, Q, math.log(3)).value == 0.0
    d0 = delta_epsilon(P, Q, 0.0)  # δ_0 = TV = 3/4 − 1/4
    assert d0.forward == pytest.approx(0.5) and d0.backward == pytest.approx(0.5)
    assert total_variation(P, Q) == pytest.approx(0.5)
    # at ε = ln 2: forward 3/4 − 2·1/4 = 1/4 on the event {0}
    d = delta_epsilon(P, Q, math.log(2))
    assert d.forward == pytest.approx(0.25) and d.event == (0,)
    assert pure_epsilon(P, Q) == pytest.approx(math.log(3))


def test_asymmetric_pair_reports_both_orders():
    P, Q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])
    d = delta_epsilon(P, Q, math.log(1.5))
    assert d.forward == pytest.approx(2 * (0.5 - 1.5 * 0.25))
    assert d.backward == pytest.approx(0.5)
    assert d.value == pytest.approx(0.5) and d.event == (2,)
    assert pure_epsilon(P, Q) == math.inf
    assert pure_epsilon([0.5, 0.5, 0.0], [0.25, 0.75, 0.0]) == pytest.approx(math.log(2))


def test_theorem_10_5_construction_close_in_tv_but_far_in_pure_epsilon():
    eps, A = 0.5, 12.0
    P0 = Q0 = np.array([math.exp(-A - eps), 1 - math.exp(-A - eps)])
    P1 = np.array([math.exp(-A), 1 - math.exp(-A)])
    Q1 = np.array([math.exp(-2 * A), 1 - math.exp(-2 * A)])
    assert pure_epsilon(P0, P1) == pytest.approx(eps)
    assert pure_epsilon(Q0, Q1) == pytest.approx(A - eps)  # α-far for any α < A − 2ε
    assert total_variation(P1, Q1) == pytest.approx(math.exp(-A) - math.exp(-2 * A))
    assert delta_epsilon(Q0, Q1, eps).value < 1e-5  # yet (Q0, Q1) is almost (ε, 0)-aDP


def test_theorem_10_7_construction_is_private_in_one_order_only():
    eps, delta, alpha = 0.1, 0.1, 0.05
    e = math.exp(eps)
    P0 = np.array([0.5, 0.5])
    P1 = np.array([e / 2 + delta, 1 - e / 2 - delta])
    Q1 = np.array([e / 2 + delta + alpha, 1 - e / 2 - delta - alpha])
    # δ_ε(P1‖P0) = e^ε/2 + δ − e^ε/2 = δ and δ_ε(Q1‖P0) = δ + α, as the proof uses
    assert delta_epsilon(P0, P1, eps).backward == pytest.approx(delta)
    assert delta_epsilon(P0, Q1, eps).backward == pytest.approx(delta + alpha)
    # but the other order gives (1 − e^ε)²/2 + e^ε δ > δ: the pair is not (ε, δ)-DP symmetrically
    assert delta_epsilon(P0, P1, eps).forward == pytest.approx((1 - e) ** 2 / 2 + e * delta)
    assert delta_epsilon(P0, P1, eps).value > delta


def test_theorem_10_12_side_information_is_not_epsilon_private():
    eps, beta = 0.5, 0.1
    e = math.exp(eps)
    Q0 = np.array([beta, beta, 1 - 2 * beta])
    Q1 = np.array([e * beta, (2 - e) * beta, 1 - 2 * beta])
    # the proof says (Q0, Q1) is ε-pDP; the second outcome has ratio 1/(2 − e^ε) > e^ε
    assert pure_epsilon(Q0, Q1) == pytest.approx(-math.log(2 - e))
    assert pure_epsilon(Q0, Q1) > eps


def test_lemma_10_6_tv_perturbation_bound_on_random_pairs():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 8))
        P0, P1 = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        Q0 = 0.8 * P0 + 0.2 * rng.dirichlet(np.ones(n))
        Q1 = 0.8 * P1 + 0.2 * rng.dirichlet(np.ones(n))
        eps = float(rng.uniform(0, 2))
        a = max(total_variation(P0, Q0), total_variation(P1, Q1))
        assert delta_epsilon(Q0, Q1, eps).value <= delta_epsilon(P0, P1, eps).value + (1 + math.exp(eps)) * a + 1e-12


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
def test_binned_gaussians_approach_balle_wang_profile_from_below(sigma):
    eps = 0.7
    a, b = 1 / (2 * sigma), eps * sigma
    exact = stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)  # Balle & Wang 2018, Theorem 8
    previous = 0.0
    for k in (5, 41, 4001):  # nested grids: 4, 40 and 4000 equal cells
        edges = np.concatenate([[-np.inf], np.linspace(-12 * sigma, 1 + 12 * sigma, k), [np.inf]])
        P = np.diff(stats.norm.cdf(edges, loc=0.0, scale=sigma))
        Q = np.diff(stats.norm.cdf(edges, loc=1.0, scale=sigma))
        value = delta_epsilon(P, Q, eps).value
        assert value <= exact + 1e-12  # post-processing cannot increase δ_ε
        assert value >= previous - 1e-12  # refining the bins cannot decrease it
        previous = value
    assert previous == pytest.approx(exact, abs=1e-3)


@pytest.mark.parametrize(
    ("P", "Q", "eps", "match"),
    [
        ([0.5, 0.5], [0.5, 0.5], -0.1, "epsilon"),
        ([0.5, 0.5], [0.5, 0.5], math.nan, "epsilon"),
        ([0.5, 0.6], [0.5, 0.5], 1.0, "sum to 1"),
        ([1.2, -0.2], [0.5, 0.5], 1.0, "non-negative"),
        ([0.5, 0.5], [0.2, 0.3, 0.5], 1.0, "same support"),
        ([[0.5, 0.5]], [0.5, 0.5], 1.0, "shape"),
        ([0.5, math.nan], [0.5, 0.5], 1.0, "finite"),
    ],
)
def test_bad_inputs(P, Q, eps, match):
    with pytest.raises(InvalidParameterError, match=match):
        delta_epsilon(P, Q, eps)

"""Thesis Algorithms 4–6 and the identity tester: completeness and soundness at the stated sample sizes.

Oracle: a seeded statistical test. Each tester runs ``RUNS`` times (seeds 0..RUNS-1) on a pair at
the completeness boundary (exactly private) and on a pair exactly at the guaranteed proximity
(just far enough); the number of wrong verdicts must be compatible with an error probability
≤ 1/3 (one-sided binomial test at level 1e-3). A control shows the check can fail: with a budget
far below the stated one the same instance is misjudged too often.
"""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpcloak.audit import (
    adp_fi_tester,
    adp_tester,
    adp_tester_queries,
    delta_epsilon,
    identity_tester,
    pdp_fi_tester,
    pdp_fi_tester_queries,
    pure_epsilon,
    total_variation,
)
from dpcloak.errors import InvalidParameterError

RUNS = 40


def max_wrong(runs=RUNS, p=1 / 3, level=1e-3):
    """Largest number of wrong verdicts compatible with error probability ≤ p (binomial tail ≥ level)."""
    return int(stats.binom.isf(level, runs, p))


def sampler(p):
    p = np.asarray(p, dtype=float)
    return lambda size, rng: rng.choice(p.size, size=size, p=p)


def wrong_verdicts(expected, tester, *args, **kwargs):
    """Wrong verdicts of ``tester(*args, rng=seed, **kwargs)`` over seeds 0..RUNS-1."""
    return sum(tester(*args, rng=seed, **kwargs).verdict != expected for seed in range(RUNS))


def mixture_pair(n, t):
    """Symmetric pair (1−t)U + tχ_0, (1−t)U + tχ_1 on n outcomes."""
    u = np.full(n, 1.0 / n)
    P, Q = (1 - t) * u, (1 - t) * u
    P[0] += t
    Q[1] += t
    return P, Q


def pair_with_delta(n, eps, target):
    t = optimize.brentq(lambda t: delta_epsilon(*mixture_pair(n, t), eps).value - target, 0.0, 1.0, xtol=1e-14)
    return mixture_pair(n, t)


# ------------------------------------------------------------------------------------------- Algorithm 4

EPS, DELTA, ALPHA, N = 0.5, 0.1, 0.05, 4


def test_algorithm4_sample_size_is_the_thesis_formula():
    c = 1 + math.exp(2 * EPS)
    assert adp_tester_queries(n=N, epsilon=EPS, alpha=ALPHA, symmetric=False) == pytest.approx(
        max(4 * N * c, 12 * c) / ALPHA**2)
    assert adp_tester_queries(n=N, epsilon=EPS, alpha=ALPHA) == pytest.approx(max(4 * N * c, 24 * c) / ALPHA**2)


@pytest.mark.parametrize(("delta_true", "expected"), [(DELTA, "ACCEPT"), (DELTA + 2 * ALPHA, "REJECT")])
def test_algorithm4_errs_at_most_one_third(delta_true, expected):
    P, Q = pair_with_delta(N, EPS, delta_true)
    assert delta_epsilon(P, Q, EPS).value == pytest.approx(delta_true)
    res = adp_tester(sampler(P), sampler(Q), n=N, epsilon=EPS, delta=DELTA, alpha=ALPHA, rng=0)
    assert res.proximity == pytest.approx(2 * ALPHA) and res.proximity_metric == "delta_epsilon"
    assert abs(sum(res.queries) / 2 - res.expected_queries) < 5 * math.sqrt(res.expected_queries)
    assert wrong_verdicts(expected, adp_tester, sampler(P), sampler(Q), n=N, epsilon=EPS, delta=DELTA,
                          alpha=ALPHA) <= max_wrong()


def test_algorithm4_check_can_fail_with_a_tiny_budget():
    P, Q = pair_with_delta(N, EPS, DELTA + 2 * ALPHA)
    tiny = adp_tester_queries(n=N, epsilon=EPS, alpha=ALPHA) / 25  # alpha 5× larger, still below (1 − δ)/2
    assert wrong_verdicts("REJECT", adp_tester, sampler(P), sampler(Q), n=N, epsilon=EPS, delta=DELTA,
                          budget=tiny) > max_wrong()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"budget": 1e-12}, "budget=1e-12 queries per database gives alpha"),  # issue 18: was ACCEPT after 0 queries
    ({"alpha": 0.45}, "alpha=0.45"),  # δ + 2α = 1: nothing could be rejected
    ({"alpha": 0.1, "delta": 1.0}, "nothing to test"),
])
def test_algorithm4_refuses_a_test_that_could_look_at_nothing(kwargs, match):
    looked = []

    def counting(size, rng):
        looked.append(size)
        return rng.integers(0, 2, size)

    args = {"n": 2, "epsilon": 1.0, "delta": 0.1, "rng": 0, **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        adp_tester(counting, counting, **args)
    assert looked == []
    # the smallest budget the message names is accepted and queries both databases
    c = 1 + math.exp(2.0)
    res = adp_tester(counting, counting, n=2, epsilon=1.0, delta=0.1, budget=1.01 * 24 * c / 0.45**2, rng=0)
    assert min(res.queries) > 0


def test_algorithm4_budget_gives_the_matching_alpha():
    P, Q = pair_with_delta(N, EPS, DELTA)
    res = adp_tester(sampler(P), sampler(Q), n=N, epsilon=EPS, delta=DELTA, budget=20000, rng=1)
    assert adp_tester_queries(n=N, epsilon=EPS, alpha=res.alpha) == pytest.approx(20000)
    assert res.threshold == pytest.approx(DELTA + res.alpha)


def test_algorithm4_one_sided_order_misses_a_backward_violation():
    # only P1 ≫ P0 on outcome 1: the forward statistic alone sees nothing
    P, Q = np.array([0.5, 0.5]), np.array([0.1, 0.9])
    fwd = adp_tester(sampler(P), sampler(Q), n=2, epsilon=0.1, delta=0.0, alpha=0.05, symmetric=False, rng=2)
    both = adp_tester(sampler(P), sampler(Q), n=2, epsilon=0.1, delta=0.0, alpha=0.05, rng=2)
    assert delta_epsilon(P, Q, 0.1).forward > 0.3 and fwd.verdict == "REJECT"
    assert both.verdict == "REJECT"
    rev = adp_tester(sampler(Q), sampler(P), n=2, epsilon=0.1, delta=0.0, alpha=0.05, rng=2)
    assert rev.verdict == "REJECT"


# ------------------------------------------------------------------------------------- identity tester


def far_alternatives(q, alpha):
    """Distributions at TV exactly α from q: p = q + α(u − v), u and v distributions with disjoint supports."""
    n = q.size
    order = np.argsort(q)

    def restricted(idx):
        w = np.zeros(n)
        w[idx] = q[idx]
        return w / w.sum()

    even, odd = np.arange(0, n, 2), np.arange(1, n, 2)
    rarest_quarter = np.zeros(n)
    rarest_quarter[order[: n // 4]] = 4.0 / n
    spike = np.zeros(n)
    spike[order[0]] = 1.0
    moves = [
        (restricted(even), restricted(odd)),  # small perturbation of every outcome
        (rarest_quarter, restricted(order[n // 4:])),  # mass moved onto the rarest outcomes
        (spike, restricted(order[1:])),  # mass moved onto one outcome
    ]
    return [q + alpha * (u - v) for u, v in moves]


@pytest.mark.parametrize("shape", ["uniform", "zipf"])
def test_identity_tester_errs_at_most_one_third(shape):
    n, alpha = 40, 0.2
    q = np.full(n, 1.0 / n) if shape == "uniform" else 1.0 / np.arange(1, n + 1)
    q = q / q.sum()
    assert wrong_verdicts("ACCEPT", identity_tester, sampler(q), q, alpha=alpha) <= max_wrong()
    for p in far_alternatives(q, alpha):
        assert total_variation(p, q) == pytest.approx(alpha) and p.min() >= 0
        assert wrong_verdicts("REJECT", identity_tester, sampler(p), q, alpha=alpha) <= max_wrong()


def test_identity_tester_rejects_mass_outside_the_support():
    q = np.array([0.5, 0.5, 0.0])
    res = identity_tester(sampler([0.4, 0.4, 0.2]), q, alpha=0.2, rng=0)
    assert res.verdict == "REJECT" and res.statistic == math.inf


# ------------------------------------------------------------------------------------------- Algorithm 5


def test_algorithm5_errs_at_most_one_third():
    eps, delta, alpha = 0.5, 0.1, 0.1
    Q0, Q1 = pair_with_delta(4, eps, delta)
    # far pair: move α of P0 onto outcome 0 and α of P1 off it: δ_ε grows by (1 + e^ε)α
    P0, P1 = Q0.copy(), Q1.copy()
    P0[0] += alpha
    P0[2] -= alpha
    P1[0] -= alpha
    P1[2] += alpha
    assert delta_epsilon(P0, P1, eps).value == pytest.approx(delta + (1 + math.exp(eps)) * alpha)
    kw = {"q0": Q0, "q1": Q1, "epsilon": eps, "delta": delta, "alpha": alpha}
    res = adp_fi_tester(sampler(Q0), sampler(Q1), rng=0, **kw)
    assert res.proximity == pytest.approx((1 + math.exp(eps)) * alpha)
    assert wrong_verdicts("ACCEPT", adp_fi_tester, sampler(Q0), sampler(Q1), **kw) <= max_wrong()
    assert wrong_verdicts("REJECT", adp_fi_tester, sampler(P0), sampler(P1), **kw) <= max_wrong()


def test_algorithm5_rejects_non_private_side_information_without_queries():
    Q0, Q1 = pair_with_delta(4, 0.5, 0.3)
    res = adp_fi_tester(sampler(Q0), sampler(Q1), q0=Q0, q1=Q1, epsilon=0.5, delta=0.1, alpha=0.1, rng=0)
    assert res.verdict == "REJECT" and res.queries == (0, 0) and res.statistic == pytest.approx(0.3)


# ------------------------------------------------------------------------------------------- Algorithm 6


def softmax_pair(eps, n=3):
    w0, w1 = np.ones(n), np.ones(n)
    w0[0] = w1[1] = math.exp(eps)
    return w0 / w0.sum(), w1 / w1.sum()


def test_algorithm6_sample_size_and_proximity():
    Q0, Q1 = softmax_pair(0.5)
    beta = min(Q0.min(), Q1.min())
    assert pdp_fi_tester_queries(n=3, beta=beta, alpha=0.05) == pytest.approx(
        math.log(18) / ((1 - math.exp(-0.05)) * beta) ** 2)
    res = pdp_fi_tester(sampler(Q0), sampler(Q1), q0=Q0, q1=Q1, epsilon=0.5, alpha=0.05, rng=0)
    assert res.proximity == pytest.approx(12 * 0.05) and res.threshold == pytest.approx(0.6)
    assert res.expected_queries == pytest.approx(pdp_fi_tester_queries(n=3, beta=beta, alpha=0.05))


@pytest.mark.parametrize("eps_true", [0.5, 0.5 + 12 * 0.05])
def test_algorithm6_errs_at_most_one_third(eps_true):
    eps, alpha = 0.5, 0.05
    Q0, Q1 = softmax_pair(eps)
    P0, P1 = softmax_pair(eps_true)
    assert pure_epsilon(P0, P1) == pytest.approx(eps_true)
    expected = "ACCEPT" if eps_true == eps else "REJECT"
    assert wrong_verdicts(expected, pdp_fi_tester, sampler(P0), sampler(P1), q0=Q0, q1=Q1, epsilon=eps,
                          alpha=alpha) <= max_wrong()


def test_algorithm6_rejects_side_information_with_one_sided_zero():
    res = pdp_fi_tester(sampler([0.5, 0.5]), sampler([0.5, 0.5]), q0=[1.0, 0.0], q1=[0.5, 0.5], epsilon=1.0,
                        alpha=0.1, rng=0)
    assert res.verdict == "REJECT" and res.queries == (0, 0)


# ------------------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"delta": 1.5}, "delta"),
        ({"delta": -0.1}, "delta"),
        ({"alpha": None}, "exactly one"),
        ({"budget": 1000.0}, "exactly one"),
        ({"alpha": 0.0}, "alpha"),
        ({"n": 0}, "n must"),
    ],
)
def test_algorithm4_bad_parameters(kwargs, match):
    base = {"n": 2, "epsilon": 1.0, "delta": 0.1, "alpha": 0.1, "rng": 0}
    with pytest.raises(InvalidParameterError, match=match):
        adp_tester(sampler([0.5, 0.5]), sampler([0.5, 0.5]), **{**base, **kwargs})


def test_bad_samplers_and_side_information():
    with pytest.raises(InvalidParameterError, match="outside the support"):
        adp_tester(sampler([0.5, 0.5]), sampler([0.5, 0.5]), n=1, epsilon=1.0, delta=0.1, alpha=0.4, rng=0)
    with pytest.raises(InvalidParameterError, match="shape"):
        adp_tester(lambda size, rng: np.zeros(size + 1, dtype=int), sampler([1.0]), n=1, epsilon=1.0, delta=0.1,
                   alpha=0.4, rng=0)
    with pytest.raises(InvalidParameterError, match="sum to 1"):
        adp_fi_tester(sampler([0.5, 0.5]), sampler([0.5, 0.5]), q0=[0.5, 0.6], q1=[0.5, 0.5], epsilon=1.0,
                      delta=0.1, alpha=0.1)
    with pytest.raises(InvalidParameterError, match="same support"):
        pdp_fi_tester(sampler([0.5, 0.5]), sampler([0.5, 0.5]), q0=[0.5, 0.5], q1=[0.2, 0.3, 0.5], epsilon=1.0,
                      alpha=0.1)
    with pytest.raises(InvalidParameterError, match="alpha"):
        pdp_fi_tester(sampler([0.5, 0.5]), sampler([0.5, 0.5]), q0=[0.5, 0.5], q1=[0.5, 0.5], epsilon=1.0, alpha=0.5)
    with pytest.raises(InvalidParameterError, match="too small"):
        pdp_fi_tester(sampler([0.5, 0.5]), sampler([0.5, 0.5]), q0=[0.5, 0.5], q1=[0.5, 0.5], epsilon=1.0, budget=10)

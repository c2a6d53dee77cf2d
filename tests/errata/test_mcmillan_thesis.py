"""Errata of McMillan's thesis, Part IV: Theorem 10.8, Algorithm 4 and Theorem 10.11.

Oracles: sympy for the proof's integral and exponent chain, exact Poisson sums (scipy.stats pmf)
for E[max(0, Z_i)], a replay of Algorithm 6 exactly as printed (raw counts) against dpcloak's
tester (frequencies), both fed the same seeded samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy import stats

from dpcloak.audit import pdp_fi_tester, pdp_fi_tester_queries
from dpcloak.audit.testers import adp_tester_queries


def test_theorem108_chebyshev_integral_splits_at_sqrt_var_plus_e():
    x, V = sp.symbols("x V", positive=True)
    E = sp.Symbol("E", nonpositive=True)
    # min{1, V/(x − E)²} switches where (x − E)² = V, i.e. x = √V + E (the proof prints √(V + E))
    assert E + sp.sqrt(V) in sp.solve(sp.Eq(V / (x - E) ** 2, 1), x)
    x0 = sp.sqrt(V) + E
    total = x0 + sp.integrate(V / (x - E) ** 2, (x, x0, sp.oo), conds="none")
    assert sp.simplify(total - (2 * sp.sqrt(V) + E)) == 0  # the integral (for −√V ≤ E ≤ 0) is 2√V + E
    printed = sp.sqrt(V + E) + sp.sqrt(V)
    assert sp.N(printed.subs({V: sp.Rational(1, 4), E: -sp.Rational(1, 8)})) != sp.N(
        total.subs({V: sp.Rational(1, 4), E: -sp.Rational(1, 8)}))


def _poisson_z(p: float, q: float, eps: float, r: float) -> tuple[float, float, float]:
    """Exact E[max(0, Z)], E[Z], Var Z for Z = (X − e^ε Y)/r, X ~ Poi(pr), Y ~ Poi(qr) (truncated sums)."""
    xs = np.arange(int(p * r + 40 * math.sqrt(p * r + 1)) + 1)
    ys = np.arange(int(q * r + 40 * math.sqrt(q * r + 1)) + 1)
    px, py = stats.poisson.pmf(xs, p * r), stats.poisson.pmf(ys, q * r)
    z = (xs[:, None] - math.exp(eps) * ys[None, :]) / r
    w = px[:, None] * py[None, :]
    return float((np.maximum(z, 0) * w).sum()), p - math.exp(eps) * q, (p + math.exp(2 * eps) * q) / r


@pytest.mark.parametrize(("p", "q"), [(0.04, 0.03), (0.02, 0.05), (0.001, 0.001)])
def test_theorem108_conclusion_holds_although_the_printed_step_is_undefined(p, q):
    eps, r = 0.5, 200.0
    pos, mean, var = _poisson_z(p, q, eps, r)
    assert mean <= 0
    assert var + mean < 0  # the printed √(Var Z_i + E Z_i) is the square root of a negative number here
    # max(0, Z) ≤ (Z − EZ)⁺ when EZ ≤ 0, and E(Z − EZ)⁺ = E|Z − EZ|/2 ≤ √Var/2: the proof's conclusion survives
    assert pos <= math.sqrt(var) / 2 <= math.sqrt((p + math.exp(2 * eps) * q) / r)


def test_algorithm4_index_ranges_mean_n():
    # Algorithm 4 loops over i ∈ [m] (m is not an input) and sums z_i over i = 1..r; both range over [n].
    # Summing to r instead of n changes nothing once r ≥ n (z_i = 0 beyond n), and r < n is never drawn:
    for n, eps, alpha in ((3, 0.5, 0.2), (10, 0.5, 0.1), (1000, 2.0, 0.05)):
        lam = adp_tester_queries(n=n, epsilon=eps, alpha=alpha, symmetric=False)
        assert lam == pytest.approx(max(4 * n, 12) * (1 + math.exp(2 * eps)) / alpha**2)
        assert stats.poisson.logcdf(n - 1, lam) < -100  # P(r < n) < e^{−100}


def test_theorem1011_exponent_chain_is_twelve_alpha():
    a, e = sp.symbols("alpha epsilon", positive=True)
    chain = 4 * a + a + e + 2 * a + a + 4 * a  # P0/Q0 · Q0/x · x/y · y/Q1 · Q1/P1
    assert sp.simplify(chain - (e + 12 * a)) == 0


def _softmax_pair(eps: float, n: int = 3) -> tuple[np.ndarray, np.ndarray]:
    w0, w1 = np.ones(n), np.ones(n)
    w0[0] = w1[1] = math.exp(eps)
    return w0 / w0.sum(), w1 / w1.sum()


def test_theorem1011_needs_frequencies_and_accepts_honest_pairs():
    eps, alpha = 0.5, 0.05
    Q0, Q1 = _softmax_pair(eps)
    lam = pdp_fi_tester_queries(n=3, beta=min(Q0.min(), Q1.min()), alpha=alpha)
    rng = np.random.default_rng(4)
    raw_accepts = freq_accepts = 0
    for _ in range(30):
        x = rng.poisson(lam * Q0)
        y = rng.poisson(lam * Q1)
        # Algorithm 6 as printed: e^{−α} ≤ x_i/(Q0)_i ≤ e^α with raw counts x_i ≈ λ(Q0)_i — never true
        raw_accepts += bool(np.all(np.abs(np.log(x / Q0)) <= alpha) and np.all(np.abs(np.log(y / Q1)) <= alpha))
        freq_accepts += bool(np.all(np.abs(np.log(x / lam / Q0)) <= alpha)
                             and np.all(np.abs(np.log(y / lam / Q1)) <= alpha))
    assert raw_accepts == 0 and freq_accepts >= 20
    # dpcloak's tester (frequencies x_i/λ) accepts this ε-pDP pair: an accepted pair need not be "at least
    # (ε + 10α)-pDP" as the proof's soundness sentence says; what the proof shows is "at most ε + 12α"
    sample = [lambda size, g, q=q: g.choice(3, size=size, p=q) for q in (Q0, Q1)]
    verdicts = [pdp_fi_tester(*sample, q0=Q0, q1=Q1, epsilon=eps, alpha=alpha, rng=s).accepted for s in range(12)]
    assert sum(verdicts) >= 8


def test_theorem108_bias_bound_is_cauchy_schwarz_not_the_printed_product():
    rng = np.random.default_rng(1)
    eps, r = 0.7, 1000.0
    for n in (2, 10, 100):
        p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
        bias = np.sqrt((p + math.exp(2 * eps) * q) / r).sum()
        assert bias <= math.sqrt(n * (1 + math.exp(2 * eps)) / r) * (1 + 1e-12)  # Cauchy–Schwarz
        assert math.sqrt(n * (1 + math.exp(2 * eps)) / r) < math.sqrt(n / r) * (1 + math.exp(2 * eps))  # printed
    # Algorithm 4's λ = 4n(1+e^{2ε})/α² is exactly what makes the Cauchy–Schwarz bias α/2
    n, alpha = 10, 0.1
    lam = adp_tester_queries(n=n, epsilon=eps, alpha=alpha, symmetric=False)
    assert math.sqrt(n * (1 + math.exp(2 * eps)) / lam) == pytest.approx(alpha / 2)


def test_theorem1011_printed_sample_size_leaves_the_union_bound_above_one_sixth():
    n, alpha, beta = 8, 0.1, 0.1
    lam = math.log(n) / (alpha**2 * beta**2)  # printed λ
    completeness = n * (math.exp(-2 * lam * math.expm1(alpha) ** 2 * beta**2)
                        + math.exp(-2 * lam * (-math.expm1(-alpha)) ** 2 * beta**2))
    assert completeness > 1 / 6  # the proof needs ≤ 1/6
    ours = pdp_fi_tester_queries(n=n, beta=beta, alpha=alpha)  # ln(6n)/((1 − e^{−α})²β²) at f = 1/3
    assert n * (2 * math.exp(-2 * ours * (-math.expm1(-alpha)) ** 2 * beta**2)) <= 1 / 6

"""Paper bounds (Gilbert & McMillan Theorem 8, Corollary 9, Theorem 10; McMillan's thesis Theorem 8.6).

Oracle: the published expressions re-evaluated here term by term, and the assumption list; for
Theorem 10 the ingredients of the corrected proof (see the Theorem 10 section below).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import ot
import pytest
from scipy import stats
from scipy.optimize import linprog

from dpcloak.domains import Line
from dpcloak.errors import InvalidParameterError
from dpcloak.metrics import emd
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy.sensitivity import l2_sensitivity
from dpcloak.recovery.bounds import (
    THEOREM10_CONSTANT,
    corollary9_bound,
    theorem8_bound,
    theorem10_lower_bound,
    theorem86_bound,
)


def _thm8(m, T, sigma, k, A):
    B = 2 * sigma + k / math.sqrt(2 * math.pi) * math.exp(-A * A / (4 * T))
    c = math.sqrt(T) * B
    val = (math.exp(-1 / (2 * m * m * T)) * T**0.75 * math.sqrt(B) / k
           + (k * math.sqrt(T) + T * T / k) * math.exp(-1 / (4 * m * m * T)) * B) / (1 - c)
    return val, c


def test_theorem8_matches_published_expression():
    b = theorem8_bound(m=50, t=0.1, sigma=0.1, k=1, A=0.2)
    val, c = _thm8(50, 0.05, 0.1, 1, 0.2)
    assert b.applies and b.kind == "upper" and b.value == pytest.approx(val, rel=1e-12)
    assert "not specified" in b.reason and f"{c:.4g}" in b.reason


def test_theorem8_grows_with_sigma():
    vals = [theorem8_bound(m=50, t=0.1, sigma=s, k=1, A=0.2).value for s in (0.01, 0.1, 0.5)]
    assert vals[0] < vals[1] < vals[2]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"m": 2, "t": 0.1}, "assumption 1"),
        ({"m": 50, "t": 1.2}, "assumption 2"),
        ({"m": 50, "t": 0.1, "k": 2, "separation": 0.3}, "assumption 3"),
        ({"m": 50, "t": 0.1, "k": 2}, "separation"),
        ({"m": 50, "t": 0.1, "sigma": 3.0}, "assumption 4"),
    ],
)
def test_theorem8_reports_failed_assumption(kwargs, needle):
    args = {"sigma": 0.1, "k": 1, "A": 0.2, **kwargs}
    b = theorem8_bound(**args)
    assert not b.applies and math.isnan(b.value) and needle in b.reason


def test_corollary9_substitutes_private_noise():
    n, m, t, eps, dlt = 2000, 50, 0.6, 1.0, 0.1
    T = 0.3
    b = corollary9_bound(n=n, m=m, t=t, epsilon=eps, delta=dlt, k=1, A=0.5)
    noise = 2 * math.sqrt(m) * math.log(1 / dlt) / (eps * n * T**1.5)
    val, _ = _thm8(m, T, noise / 2, 1, 0.5)
    assert b.applies and b.value == pytest.approx(val, rel=1e-12)
    paper = corollary9_bound(n=100, m=50, t=0.1, epsilon=1.0, delta=0.1, k=1, A=0.2)
    assert not paper.applies and "o(1)" in paper.reason  # the paper's own defaults violate √m/(nT) < 1


# --- Theorem 10: the corrected proof, ingredient by ingredient -------------------------------------------------
# Oracles: exact rational 1-D EMD (CDF integral), POT's emd2, an exact transport LP (HiGHS), Monte Carlo of the
# Gaussian log-likelihood ratio (scipy.stats), mpmath for the Fano constant, a simulated four-way test.

N_GRID, K_HALF = 100, 10  # a = 2k/n = 0.2 on Line(100)


def _test_vectors(n: int, k: int) -> list[np.ndarray]:
    """The four test vectors of the proof on Line(n), centre 1/2, a = 2k/n (v1..v4 of the docstring)."""
    c = n // 2 - 1  # index of the point 1/2 (points are i/n, i = 1..n)
    out = []
    for spec in ({0: 1.0}, {-k: 0.5, k: 0.5}, {-2 * k: 0.25, 0: 0.5, 2 * k: 0.25}, {0: 0.5, 2 * k: 0.5}):
        v = np.zeros(n)
        for off, w in spec.items():
            v[c + off] = w
        out.append(v)
    return out


def _exact_line_emd(p: dict, q: dict) -> Fraction:
    """1-D EMD ∫|F − G| of two finitely supported measures, in exact rationals."""
    pts = sorted(set(p) | set(q))
    total, F, G = Fraction(0), Fraction(0), Fraction(0)
    for x, y in itertools.pairwise(pts):
        F, G = F + p.get(x, 0), G + q.get(x, 0)
        total += abs(F - G) * (y - x)
    return total


def _lp_emd(p: np.ndarray, q: np.ndarray, cost: np.ndarray) -> float:
    n = len(p)
    eq = np.vstack([np.kron(np.eye(n), np.ones(n)), np.kron(np.ones(n), np.eye(n))])
    res = linprog(cost.ravel(), A_eq=eq, b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


def test_theorem10_test_vectors_are_pairwise_at_emd_half_a_in_exact_arithmetic():
    h = Fraction(1, 2)
    vs = [{0: 1}, {-h: h, h: h}, {-1: Fraction(1, 4), 0: h, 1: Fraction(1, 4)}, {0: h, 1: h}]  # unit a
    assert {_exact_line_emd(p, q) for p, q in itertools.combinations(vs, 2)} == {h}  # a/2, not a


def test_theorem10_test_vectors_emd_three_solvers():
    n, k = N_GRID, K_HALF
    a = 2 * k / n
    dom = Line(n)
    x = dom.points()
    cost = np.abs(x[:, None] - x[None, :])
    for p, q in itertools.combinations(_test_vectors(n, k), 2):
        ours = emd(p, q, dom)
        assert ours == pytest.approx(a / 2, abs=1e-12)
        assert ot.emd2(p, q, cost) == pytest.approx(a / 2, abs=1e-12)
        assert _lp_emd(p, q, cost) == pytest.approx(a / 2, abs=1e-9)


def _heat_instance():
    model = heat_kernel_1d(N_GRID, 50, 0.1)
    L = N_GRID * l2_sensitivity(model)
    sigma = 2 * K_HALF / N_GRID * L  # a = σ/L = 0.2 exactly on the grid
    return model, L, sigma


def test_theorem10_kl_diameter_is_at_most_one_eighth_on_the_heat_model():
    model, L, sigma = _heat_instance()
    a = 2 * K_HALF / N_GRID
    vs = _test_vectors(N_GRID, K_HALF)
    means = [model.matvec(v) for v in vs]
    rng = np.random.default_rng(7)
    for (i, j) in itertools.combinations(range(4), 2):
        d = float(np.linalg.norm(means[i] - means[j]))
        assert d <= L * emd(vs[i], vs[j], Line(N_GRID)) * (1 + 1e-12)  # Lemma 14 with L = nΔ2
        kl = d * d / (2 * sigma**2)
        assert kl <= 1 / 8
        assert L**2 * (a / 2) ** 2 / (2 * sigma**2) == pytest.approx(1 / 8)  # the proof's bound is attained by L
        # the closed form of the KL against Monte Carlo of log p/q under p (scipy densities, not the formula)
        p = stats.multivariate_normal(means[i], sigma**2 * np.eye(model.shape[0]))
        q = stats.multivariate_normal(means[j], sigma**2 * np.eye(model.shape[0]))
        xs = p.rvs(size=20_000, random_state=rng)
        llr = p.logpdf(xs) - q.logpdf(xs)
        assert llr.mean() == pytest.approx(kl, abs=5 * llr.std() / math.sqrt(len(llr)) + 1e-12)


def test_theorem10_constant_is_yu_fano_with_consistent_logs():
    mp.mp.dps = 30
    fano = 1 - (mp.mpf(1) / 8 + mp.log(2)) / mp.log(4)  # P(EMD ≥ a/4), natural logs throughout
    assert float(fano) == pytest.approx(0.40983155994443976, rel=1e-15)
    bits = 1 - (1 / (8 * mp.log(2)) + 1) / 2  # the printed base-2 Lemma 15 with the KL in bits: the same
    assert float(bits) == pytest.approx(float(fano), rel=1e-15)
    assert float(fano) < 7 / 16  # the mixed bases (KL in nats, log2 M) overstate it
    assert pytest.approx(float(fano / 4), rel=1e-15) == THEOREM10_CONSTANT
    _, L, sigma = _heat_instance()
    b = theorem10_lower_bound(m=50, t=0.1, sigma=sigma, lipschitz=L, n=N_GRID)
    assert b.applies and b.value == pytest.approx(float(fano / 4) * 0.2, rel=1e-12)


def test_fano_inequality_holds_for_four_gaussians_at_kl_one_eighth():
    # worst case of the KL-diameter bound: a regular tetrahedron of means, every pairwise KL exactly 1/8
    sigma = 1.0
    means = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float) * (0.5 / (2 * math.sqrt(2)))
    d = np.linalg.norm(means[0] - means[1])
    assert d * d / (2 * sigma**2) == pytest.approx(1 / 8)
    rng = np.random.default_rng(3)
    errors = []
    for v in range(4):
        y = means[v] + sigma * rng.standard_normal((40_000, 3))
        guess = np.argmin(((y[:, None, :] - means[None, :, :]) ** 2).sum(-1), axis=1)  # ML = Bayes test
        errors.append(np.mean(guess != v))
    fano = 1 - (1 / 8 + math.log(2)) / math.log(4)
    assert np.mean(errors) >= fano - 0.01  # no test beats Fano (MC tolerance 0.01 ≫ 3 s.e. ≈ 0.004)


def test_theorem10_bound_is_below_what_estimators_achieve_and_printed_three_quarters_cannot_follow():
    model, L, sigma = _heat_instance()
    a = 2 * K_HALF / N_GRID
    vs = _test_vectors(N_GRID, K_HALF)
    dom = Line(N_GRID)
    bound = theorem10_lower_bound(m=50, t=0.1, sigma=sigma, lipschitz=L, n=N_GRID).value
    # the constant estimator f̂ = v1 has risk a/2 on every test vector: no argument on these four can give 3a/4
    trivial = max(emd(vs[0], v, dom) for v in vs)
    assert trivial == pytest.approx(a / 2) and bound <= trivial < 3 * a / 4
    # the nearest-hypothesis estimator (Monte Carlo): its worst risk over the four is above the bound
    rng = np.random.default_rng(11)
    means = np.array([model.matvec(v) for v in vs])
    risks = []
    for v in range(4):
        y = means[v] + sigma * rng.standard_normal((4000, means.shape[1]))
        guess = np.argmin(((y[:, None, :] - means[None, :, :]) ** 2).sum(-1), axis=1)
        risks.append(np.mean([emd(vs[v], vs[g], dom) for g in guess]))
    assert max(risks) >= bound


def test_theorem10_grid_rounding_and_shape():
    b = theorem10_lower_bound(m=50, t=0.1, sigma=0.1)
    a = min(0.5, 0.05**1.5 * 0.1 / (math.sqrt(2) * math.sqrt(50)))
    assert b.kind == "lower" and b.value == pytest.approx(THEOREM10_CONSTANT * a) and "3a/4" in b.source
    explicit = theorem10_lower_bound(m=50, t=0.1, sigma=0.1, lipschitz=13.6)
    assert explicit.value == pytest.approx(THEOREM10_CONSTANT * min(0.5, 0.1 / 13.6))
    assert theorem10_lower_bound(m=50, t=0.1, sigma=1e6).value == pytest.approx(0.5 * THEOREM10_CONSTANT)
    # on Line(100): a = 0.237 rounds down to 2·11/100; a = 0.5 is capped by 4k ≤ n − 1 (k = 24)
    assert theorem10_lower_bound(m=50, t=0.1, sigma=0.237, lipschitz=1.0, n=100).value == pytest.approx(
        THEOREM10_CONSTANT * 0.22)
    assert theorem10_lower_bound(m=50, t=0.1, sigma=1e6, lipschitz=1.0, n=100).value == pytest.approx(
        THEOREM10_CONSTANT * 0.48)
    small = theorem10_lower_bound(m=50, t=0.1, sigma=0.01, lipschitz=1.0, n=100)
    assert not small.applies and math.isnan(small.value) and "grid" in small.reason


def test_theorem86():
    b = theorem86_bound(m=50, t=0.1, sigma=0.1, k=1, A=0.3)
    T = 0.05
    C = min(1.0, math.sqrt(T) * (0.1 + math.exp(-0.09 / (4 * T))))
    inner = math.sqrt(T**1.5 * C / (math.sqrt(T) + 1)) + C + T * T * C / (T + 1)
    assert b.applies and b.value == pytest.approx(min(1.0, inner / (1 - C)), rel=1e-12)
    trivial = theorem86_bound(m=50, t=0.4, sigma=10.0, k=1, A=0.3)
    assert trivial.value == 1.0 and "trivial" in trivial.reason


def test_bad_parameters():
    with pytest.raises(InvalidParameterError, match="sigma"):
        theorem8_bound(m=50, t=0.1, sigma=-1.0, k=1, A=0.2)
    with pytest.raises(InvalidParameterError, match="delta"):
        corollary9_bound(n=100, m=50, t=0.1, epsilon=1.0, delta=1.5, k=1, A=0.2)
    with pytest.raises(InvalidParameterError, match="k"):
        theorem86_bound(m=50, t=0.1, sigma=0.1, k=0, A=0.2)

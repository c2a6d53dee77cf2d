"""Errata of Farokhi & Sandberg, checked in exact symbolic arithmetic (sympy).

Oracle: sympy integrals and derivatives of the paper's own densities and PDE; the dpcloak
implementations are compared with those symbolic results, never with themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from dpcloak.privacy.fisher import BoundedOptimalNoise, DynamicOptimalNoise, corollary2_quality_published
from dpcloak.privacy.fisher.gaussian import GaussianOptimalNoise


def _second_moment_cos2():
    """E[w²] of Corollary 1's cos² density 2/L cos²(π(w − c)/L) on [lo, hi], symbolically.

    Integrated after the substitution w = c + L u (u in [−1/2, 1/2], the density becomes 2 cos²(πu) du): E[w²] =
    c² m0 + 2 c L m1 + L² m2 with the moments m_k = ∫ u^k 2 cos²(πu) du, which sympy integrates in a fraction of
    the time it takes over w with symbolic bounds (the same value)."""
    u, lo, hi = sp.symbols("u lo hi", real=True)
    L, c = hi - lo, (hi + lo) / 2
    half = sp.Rational(1, 2)
    m0, m1, m2 = (sp.integrate(u**k * 2 * sp.cos(sp.pi * u) ** 2, (u, -half, half)) for k in range(3))
    return sp.simplify(sp.expand(c**2 * m0 + 2 * c * L * m1 + L**2 * m2)), lo, hi


def test_corollary2_ii_printed_quality_is_off_by_exactly_m_times_wbar_wunder():
    m = sp.Symbol("m", positive=True)
    second, lo, hi = _second_moment_cos2()
    appendix_e = (sp.pi**2 - 6) * (hi - lo) ** 2 / (12 * sp.pi**2) + (hi + lo) ** 2 / 4
    assert sp.simplify(second - appendix_e) == 0  # Appendix E's variance + mean² is right
    printed = m * (hi - lo) ** 2 * (2 * sp.pi**2 - 3) / (6 * sp.pi**2)
    assert sp.expand(sp.simplify(m * second - printed)) == sp.expand(m * hi * lo)
    # so the printed Q is exact iff hi·lo = 0: supports [0, L] and [−L, 0], and only those
    for low, high, exact in ((0.0, 2.0, True), (-2.0, 0.0, True), (-1.0, 1.0, False), (1.0, 3.0, False)):
        ours = BoundedOptimalNoise(low=low, high=high).quality()
        assert ours == pytest.approx(float(second.subs({lo: low, hi: high})), rel=1e-12)
        published = corollary2_quality_published(low=low, high=high)
        assert (abs(published - ours) < 1e-12) == exact
        assert published - ours == pytest.approx(-low * high, abs=1e-12)


def _trace_hessian_over_u(dim: int):
    """Tr(D²ū)/ū for ū = exp(−zᵀPz/4), P = Σ⁻¹ symmetric (Appendices J/K's ansatz), and P, z."""
    z = sp.Matrix(sp.symbols(f"z0:{dim}", real=True))
    P = sp.Matrix(dim, dim, lambda i, j: sp.Symbol(f"p{min(i, j)}{max(i, j)}", real=True))
    u = sp.exp(-(z.T * P * z)[0] / 4)
    hess = sp.hessian(u, list(z))
    return sp.simplify(hess.trace() / u), P, z


def test_appendix_k_trace_of_hessian_has_a_quarter_the_paper_drops():
    ratio, P, z = _trace_hessian_over_u(2)
    correct = (z.T * P * P * z)[0] / 4 - P.trace() / 2
    printed = (z.T * P * P * z)[0] - P.trace() / 2  # Appendix K: ū Tr(Σ⁻¹zzᵀΣ⁻¹) − Tr(Σ⁻¹)/2
    assert sp.simplify(ratio - correct) == 0
    assert sp.simplify(ratio - printed) != 0


def _pde_residual(cov: np.ndarray, gram: np.ndarray, rho: float, z: np.ndarray) -> float:
    """Appendix K's PDE Tr(D²ū) + (μ − (ϱ/4) zᵀΨᵀΨz) ū, divided by ū, with μ = Tr(Σ⁻¹)/2 and the exact Hessian."""
    P = np.linalg.inv(cov)
    return float(z @ P @ P @ z / 4 - np.trace(P) / 2 + np.trace(P) / 2 - rho / 4 * z @ gram @ z)


def test_theorem4_and_corollary6_factor_two_comes_from_the_dropped_quarter():
    rho = 0.7
    rng = np.random.default_rng(5)
    # Theorem 4 on Example 4's vehicle: the corrected Σ = (ΨᵀΨ)^{−1/2}/√ϱ solves the PDE, the printed 2× does not
    A, C = np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([[1.0, 0.0]])
    ours = DynamicOptimalNoise(A=A, C=C, horizon=4, rho=rho)
    printed = DynamicOptimalNoise(A=A, C=C, horizon=4, rho=rho, convention="published")
    for z in rng.standard_normal((5, 2)):
        assert _pde_residual(ours.covariance, ours.gramian, rho, z) == pytest.approx(0.0, abs=1e-9)
        assert abs(_pde_residual(printed.covariance, ours.gramian, rho, z)) > 1e-3
        # with the quarter dropped (the paper's Hessian) the printed Σ is the solution instead
        P = np.linalg.inv(printed.covariance)
        assert z @ P @ P @ z - rho / 4 * z @ ours.gramian @ z == pytest.approx(0.0, abs=1e-9)
    # Corollary 6 (PDE (15) with Tr(CᵀD²uC)): stationarity Σ⁻¹CCᵀΣ⁻¹ = ϱI holds for the corrected Σ only
    Cq = np.array([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]])
    for convention, factor in (("corrected", 1.0), ("published", 4.0)):
        P = np.linalg.inv(GaussianOptimalNoise(query=Cq, rho=rho, convention=convention).covariance)
        assert P @ Cq @ Cq.T @ P == pytest.approx(rho / factor * np.eye(2), abs=1e-9)


def test_appendix_j_normalisation_is_the_square_root():
    # u = α e^{−w²/(4s)} with γ = u² = N(0, s): ∫u² = 1 needs α = (2πs)^{−1/4}, not Appendix J's (2πs)^{−1/2}
    w, s = sp.symbols("w s", positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    mass = sp.integrate((alpha * sp.exp(-(w**2) / (4 * s))) ** 2, (w, -sp.oo, sp.oo))
    assert sp.solve(sp.Eq(mass, 1), alpha) == [(2 * sp.pi * s) ** sp.Rational(-1, 4)]
    assert sp.simplify(mass.subs(alpha, 1 / sp.sqrt(2 * sp.pi * s))) != 1


def test_appendix_m_erfc_definition_is_not_erfc():
    u = sp.Symbol("u", real=True)
    printed = 2 / sp.sqrt(sp.pi) * sp.integrate(sp.exp(-(u**2) / 2), (u, 0, sp.oo))  # printed erfc at x = 0
    assert sp.simplify(printed) == sp.sqrt(2) and sp.erfc(0) == 1
    standard = 2 / sp.sqrt(sp.pi) * sp.integrate(sp.exp(-(u**2)), (u, 0, sp.oo))
    assert sp.simplify(standard) == 1


def test_example4_gramian_is_invertible_from_t_equal_one():
    A, C = sp.Matrix([[1, 1], [0, 1]]), sp.Matrix([[1, 0]])
    for horizon, det in ((0, 0), (1, 1), (2, 6)):
        psi = sp.Matrix.vstack(*[C * A**k for k in range(horizon + 1)])
        assert (psi.T * psi).det() == det  # "if T > 2" is not needed: T ≥ 1 suffices

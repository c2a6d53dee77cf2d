"""Errata of Gilbert & McMillan and the matching results of McMillan's thesis.

Oracles: direct evaluation of the printed inequalities on their index ranges (numpy), the exact Δ2
of the heat kernel (every adjacent column pair), numpy's SVD for condition numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcloak.models import heat_kernel_1d
from dpcloak.privacy.sensitivity import condition_lower_bound, heat1d_bound, l2_sensitivity


def _appendix_a_sides(n: int, m: int, T: float) -> tuple[float, float, float]:
    """Appendix A's max over i ∈ [n−1], j ∈ [m] of (1 − e^{∓x})² and its right-hand side.

    ``x = ((i/n − j/m)² − ((i+1)/n − j/m)²)/(4T)``; the RHS is ``max{(1 − e^{−3/(4nT)})², (1 − e^{−2/(4nT)})²}``.
    """
    i = np.arange(1, n)[:, None]
    j = np.arange(1, m + 1)[None, :]
    x = ((i / n - j / m) ** 2 - ((i + 1) / n - j / m) ** 2) / (4 * T)
    rhs = max(-math.expm1(-3 / (4 * n * T)), -math.expm1(-2 / (4 * n * T))) ** 2
    return float((np.expm1(-x) ** 2).max()), float((np.expm1(x) ** 2).max()), rhs


def test_appendix_a_intermediate_inequality_fails_with_either_sign():
    as_printed, other_sign, rhs = _appendix_a_sides(100, 100, 0.01)
    assert rhs == pytest.approx(0.2784, abs=1e-4)
    assert as_printed == pytest.approx(0.4050, abs=1e-4) and as_printed > rhs
    assert other_sign == pytest.approx(0.4050, abs=1e-4) and other_sign > rhs


def test_appendix_a_final_bound_survives_by_the_mean_value_theorem():
    # |e^{−u²/4T} − e^{−v²/4T}| ≤ |u − v| max|g'| = (1/n) e^{−1/2}/√(2T), so
    # Δ2 ≤ √m/(n T √(8πe)) = O(√m/(nT^{1.5})) for T ≤ 1
    for n, m, t in ((100, 100, 0.02), (100, 50, 0.1), (300, 40, 1.0), (50, 200, 0.005)):
        exact = l2_sensitivity(heat_kernel_1d(n, m, t))
        T = 0.5 * t
        mean_value = math.sqrt(m) / (n * T * math.sqrt(8 * math.pi * math.e))
        assert exact <= mean_value * (1 + 1e-12)
        assert heat1d_bound(n, m, t).value <= mean_value * (1 + 1e-12)


def _normalised_columns_gap(M: np.ndarray) -> tuple[float, float, float]:
    """(1/κ₂, min, max) of ‖M_i − M_{i+1}‖ over adjacent columns of M/‖M‖₂ (numpy SVD)."""
    s = np.linalg.svd(M, compute_uv=False)
    Mn = M / s[0]
    gaps = np.linalg.norm(np.diff(Mn, axis=1), axis=0)
    return float(s[-1] / s[0]), float(gaps.min()), float(gaps.max())


def test_lemma5_and_thesis_lemma72_min_is_harmless_and_n_le_m_is_the_condition():
    rng = np.random.default_rng(2)
    for m, n in ((6, 4), (5, 5), (30, 8)):
        for _ in range(20):
            inv_kappa, gmin, gmax = _normalised_columns_gap(rng.standard_normal((m, n)))
            # the thesis's proof shows 1/κ ≤ ‖M_i − M_j‖ for EVERY neighbouring pair, hence ≤ min ≤ max = Δ2/α
            assert inv_kappa <= gmin * (1 + 1e-12) and gmin <= gmax
            assert inv_kappa / math.sqrt(n) <= gmax  # Lemma 5 (α = 1)
            bound = condition_lower_bound(rng.standard_normal((m, n)))
            assert bound.applies
    # with n > m a duplicated column no longer lowers the rank: M = [1, 1]/√2 has Δ2 = 0 and κ₂ = 1
    inv_kappa, gmin, gmax = _normalised_columns_gap(np.array([[1.0, 1.0]]) / math.sqrt(2))
    assert inv_kappa == pytest.approx(1.0) and gmax == 0.0
    assert not condition_lower_bound(np.array([[1.0, 1.0]]) / math.sqrt(2)).applies


def test_corollary9_log_one_over_delta_bounds_the_gaussian_factor_only_for_small_delta():
    # √(2 ln(1.25/δ)) ≤ ln(1/δ) holds for δ ≤ 0.1 (2.25 < 2.30 at δ = 0.1, barely) and fails e.g. at δ = 0.2
    for delta in (1e-10, 1e-5, 1e-2, 0.1):
        assert math.sqrt(2 * math.log(1.25 / delta)) <= math.log(1 / delta)
    assert math.sqrt(2 * math.log(1.25 / 0.2)) > math.log(1 / 0.2)

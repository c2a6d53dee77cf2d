"""Seeded empirical (ε, δ)-DP check on neighbouring inputs, with a tolerance derived from the sample size.

For additive noise whose privacy loss is monotone in the output (Gaussian, Laplace and their discrete
versions), the event maximising ``P_x(E) − e^ε P_x'(E)`` is a half-line, so the check scans the
half-lines ``{y > c}`` and ``{y ≤ c}`` at every histogram edge, in both directions.

Tolerance: by the Dvoretzky–Kiefer–Wolfowitz inequality (Massart's constant), with probability at
least ``1 − β`` the empirical CDF of ``n`` samples is within ``t = sqrt(ln(2/β) / (2n))`` of the true
CDF at every point, hence every half-line probability is within ``t``. On both samples (probability
``≥ 1 − 2β``), ``P̂_x(E) − e^ε P̂_x'(E) ≤ P_x(E) − e^ε P_x'(E) + (1 + e^ε) t``. A mechanism that is
(ε, δ)-DP therefore passes ``violation ≤ δ + (1 + e^ε) t`` except with probability 2β; a mechanism
whose true half-line violation exceeds ``δ + 2(1 + e^ε) t`` fails except with probability 2β.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BETA = 1e-6


@dataclass(frozen=True)
class EmpiricalCheck:
    violation: float
    tolerance: float
    delta: float

    @property
    def passed(self) -> bool:
        return self.violation <= self.delta + self.tolerance


def dkw_tolerance(n: int, epsilon: float, beta: float = BETA) -> float:
    """(1 + e^ε) sqrt(ln(2/β) / (2n))."""
    return (1.0 + math.exp(epsilon)) * math.sqrt(math.log(2.0 / beta) / (2.0 * n))


def half_line_violation(a: np.ndarray, b: np.ndarray, epsilon: float, bins: int = 400) -> float:
    """max over half-lines E and both orders of P̂_a(E) − e^ε P̂_b(E)."""
    lo, hi = min(a.min(), b.min()), max(a.max(), b.max())
    edges = np.unique(np.concatenate([[lo - 1.0], np.linspace(lo, hi, bins), [hi + 1.0]]))
    if np.allclose(a, np.round(a)) and np.allclose(b, np.round(b)) and hi - lo < 5 * bins:
        edges = np.arange(lo - 0.5, hi + 1.5)  # integer-valued samples: one bin per value
    ca = np.histogram(a, edges)[0] / a.size
    cb = np.histogram(b, edges)[0] / b.size
    upper_a, upper_b = np.cumsum(ca[::-1])[::-1], np.cumsum(cb[::-1])[::-1]  # P(y >= left edge)
    lower_a, lower_b = 1.0 - upper_a, 1.0 - upper_b
    e = math.exp(epsilon)
    return float(max(np.max(upper_a - e * upper_b), np.max(upper_b - e * upper_a),
                     np.max(lower_a - e * lower_b), np.max(lower_b - e * lower_a)))


def check_dp(sample_x: np.ndarray, sample_x_prime: np.ndarray, *, epsilon: float, delta: float) -> EmpiricalCheck:
    """Empirical half-line violation and its DKW tolerance for two equally sized samples."""
    n = min(sample_x.size, sample_x_prime.size)
    return EmpiricalCheck(violation=half_line_violation(sample_x, sample_x_prime, epsilon),
                          tolerance=dkw_tolerance(n, epsilon), delta=delta)

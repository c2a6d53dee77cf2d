"""The interior-point method's barrier point (dpcloak.recovery._ipm._barrier_point).

Oracle: 60-digit mpmath — the root s = x − l in (0, d) of a s² − (a d + 2μ) s + μ d = 0 found by bisection
(of the distance to the nearer bound) on the barrier's stationarity a − μ/s + μ/(d − s) (μ/a with d = ∞),
x' = −1/(μ/s² + μ/(d − s)²) and ψ = a x − μ log s − μ log(d − s), at ordinary and extreme a, d and μ
(cancellation, overflow, underflow).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from dpcloak.recovery._ipm import _barrier_point


def _oracle(a: float, lo: float, d: float, mu: float) -> tuple[mpmath.mpf, mpmath.mpf, mpmath.mpf]:
    with mpmath.workdps(60):
        a, lo, mu = mpmath.mpf(a), mpmath.mpf(lo), mpmath.mpf(mu)
        if np.isinf(d):
            s = mu / a
            return lo + s, -s * s / mu, a * (lo + s) - mu * mpmath.log(s)
        d = mpmath.mpf(d)
        # the root lies within d/2 of the bound a's sign points to; bisect the distance t to it (no cancellation):
        # the stationarity a − μ/s + μ/(d − s) with s = t (a ≥ 0) or s = d − t (a < 0) is monotone in t
        sign = 1 if a >= 0 else -1
        left, right = mpmath.mpf(0), d / 2
        for _ in range(2000):
            mid = (left + right) / 2
            if sign * a - mu / mid + mu / (d - mid) < 0:
                left = mid
            else:
                right = mid
        t = (left + right) / 2
        s, other = (t, d - t) if a >= 0 else (d - t, t)
        return lo + s, -1 / (mu / s**2 + mu / other**2), a * (lo + s) - mu * mpmath.log(s) - mu * mpmath.log(other)


CASES = [(0.7, 0.0, 1.0, 1e-3), (-0.7, -1.0, 2.0, 1e-3), (0.0, 0.0, 1.0, 1e-2), (3e4, 0.0, 1.0, 1e-9),
         (-3e4, 0.0, 1.0, 1e-9), (1e-12, 0.0, 5.0, 1e-6), (2.5, 1.0, np.inf, 1e-4), (1e200, 0.0, 1.0, 1e-3),
         (-1e200, 0.0, 1.0, 1e-3), (1e-200, 0.0, 1.0, 1e-300), (1e150, 0.0, 1e10, 1e-3), (5.0, 0.0, np.inf, 1e-12)]


def test_barrier_point_against_mpmath() -> None:
    a, lo, d, mu = (np.array(v, dtype=float) for v in zip(*CASES, strict=True))
    for m in np.unique(mu):  # one μ per call, as the method calls it
        sel = mu == m
        x, xp, psi = _barrier_point(a[sel], lo[sel], d[sel], np.isfinite(d[sel]), float(m))
        for i, j in enumerate(np.flatnonzero(sel)):
            ox, oxp, opsi = _oracle(a[j], lo[j], d[j], float(m))
            assert x[i] == pytest.approx(float(ox), rel=1e-14, abs=1e-300)
            assert xp[i] == pytest.approx(float(oxp), rel=1e-12, abs=1e-300)
            assert psi[i] == pytest.approx(float(opsi), rel=1e-12, abs=1e-12 * abs(float(a[j] * ox)))


def test_the_far_bound_computed_by_cancellation_fails() -> None:
    """Weakened: s from the quadratic formula's other sign (((a d + 2μ) − √…)/(2a), which cancels) is what the
    oracle catches at a large |a| d / μ: the check above is not vacuous."""
    a, d, mu = 3e4, 1.0, 1e-9
    naive = ((a * d + 2 * mu) - np.sqrt((a * d) ** 2 + 4 * mu**2)) / (2 * a)
    ox, _, _ = _oracle(a, 0.0, d, mu)
    assert naive != pytest.approx(float(ox), rel=1e-6, abs=0.0)
    x, _, _ = _barrier_point(np.array([a]), np.zeros(1), np.array([d]), np.ones(1, bool), mu)
    assert x[0] == pytest.approx(float(ox), rel=1e-14)

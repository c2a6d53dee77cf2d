r"""Exact KKT points of "box + one quadratic" problems on a given active set, and their certificates.

The problem is that of :mod:`dpcloak.recovery._ipm`: ``min cᵀx`` over ``l ≤ x ≤ u`` subject to
``‖Gx − z‖ ≤ ρ`` (or ``cᵀx + γ/2 ‖Gx − z‖²``). Fixing which variables sit at which bound leaves an
equality-constrained least-squares problem with a closed-form solution
(:func:`solve_on_active_set`); :func:`certify` accepts a point only with a duality gap bounded by
the exact (non-smoothed) dual

.. math::

    c^T x^\star ≥ \sum_i \min(l_i a_i, u_i a_i) − w^T z − h^*(w), \qquad a = c + G^T w,

valid for any ``w`` (:func:`dual_bound`). Both solvers that guess active sets — the interior-point
method's polishing and the active-set loop of :mod:`dpcloak.recovery._active` — go through these.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray

from dpcloak.recovery.compress import DenseRows, KroneckerRows

__all__ = ["certify", "dual_bound", "solve_on_active_set", "sphere_multiplier"]

#: The compressed operator ``G``, used only through ``dot``/``tdot``/``columns``/``weighted_gram``.
Rows = DenseRows | KroneckerRows


def dual_bound(
    G: Rows, z: NDArray[np.float64], c: NDArray[np.float64], lo: NDArray[np.float64],
    hi: NDArray[np.float64], w: NDArray[np.float64], gamma: float, rho: float | None,
) -> float:
    """The exact dual bound ``Σ_i min(l_i a_i, u_i a_i) − wᵀz − h*(w)`` (``a = c + Gᵀw``), valid for any ``w``.

    Where ``u_i = ∞`` the term is ``−∞`` unless ``a_i ≥ 0``. An optimal ``w`` leaves ``a_i = 0`` on
    every free variable, which rounding turns into ``±1e-16``: ``w`` is then shrunk to ``θ w`` with
    ``θ = min c_i / (c_i − a_i)`` over the offending coordinates (possible when ``c_i > 0``), which
    makes those ``a_i`` vanish and costs only ``O(1 − θ)`` of the bound.
    """
    finite = np.isfinite(hi)
    a = c + G.tdot(w)
    bad = (a < 0) & ~finite
    if np.any(bad):
        cb = c[bad]
        if np.any(cb <= 0):
            return -math.inf
        theta = float(np.min(cb / (cb - a[bad])))
        w = theta * w
        a = c + theta * (a - c)
        a[~finite] = np.maximum(a[~finite], 0.0)  # the offending coordinates are 0 up to rounding now
    neg = a < 0
    box = float(np.sum(np.where(neg, np.where(finite, hi, 0.0) * a, lo * a)))
    conj = float(w @ w) / (2.0 * gamma) if rho is None else rho * float(np.linalg.norm(w))
    return box - float(w @ z) - conj


def solve_on_active_set(
    G: Rows, z: NDArray[np.float64], c: NDArray[np.float64], lo: NDArray[np.float64],
    hi: NDArray[np.float64], at_lo: NDArray[np.bool_], at_hi: NDArray[np.bool_], gamma: float, rho: float | None,
) -> NDArray[np.float64] | None:
    """The exact KKT point with ``at_lo`` at ``l``, ``at_hi`` at ``u`` and the rest free, or ``None``.

    The free block ``x_B = ξ − R⁻¹R⁻ᵀc_B / λ`` (``G_B = QR``, ``ξ`` its least-squares fit to the data
    left by the fixed variables): ``λ = γ`` for the penalised problem (``rho=None``), and for the
    constrained one the ``λ`` that puts ``x`` just inside the sphere ``‖Gx − z‖ = ρ``. ``None`` when no
    variable is free, more are free than ``G``'s rank, ``G_B`` is numerically rank-deficient, a
    variable is fixed at an infinite bound, or the free block cannot reach the sphere. The free values
    may lie outside the box: the callers check (and :func:`certify` decides optimality).
    """
    free = ~(at_lo | at_hi)
    x = np.where(at_hi, hi, np.where(free, 0.0, lo)).astype(float)
    nb = int(np.count_nonzero(free))
    if nb == 0 or nb > G.rank or np.any(at_hi & ~np.isfinite(hi)):
        return None
    GB = G.columns(np.flatnonzero(free))
    zt = z - G.dot(x)  # x is zero on the free block here
    Q, R = np.linalg.qr(GB)
    diag = np.abs(np.diag(R))
    if diag.min() <= 1e-12 * diag.max():
        return None
    qz = Q.T @ zt
    xi = sla.solve_triangular(R, qz, check_finite=False)
    resid = zt - Q @ qz
    outside2 = float(resid @ resid)  # explicit residual: no cancellation in ‖z̃‖² − ‖Qᵀz̃‖²
    y = sla.solve_triangular(R, c[free], trans="T", check_finite=False)
    if rho is None:
        lam = gamma
    else:
        room = (rho * (1.0 - 1e-13)) ** 2 - outside2  # land just inside the sphere despite rounding
        ny = float(np.linalg.norm(y))
        if room <= 0 or ny == 0:
            return None
        lam = ny / math.sqrt(room)
    x[free] = xi - sla.solve_triangular(R, y, check_finite=False) / lam
    return x


def sphere_multiplier(
    c: NDArray[np.float64], gte: NDArray[np.float64], free: NDArray[np.bool_] | NDArray[np.intp]
) -> float | None:
    """The ``λ`` that makes the reduced costs ``c + λ Gᵀ(Gx − z)`` vanish on ``free`` (a mask or indices, least
    squares), or ``None``.

    ``gte`` is ``Gᵀ(Gx − z)``; at a KKT point of the constrained problem the fit is exact and ``λ`` is
    the multiplier of the sphere. ``None`` when ``gte`` vanishes on the free variables.
    """
    den = float(gte[free] @ gte[free])
    return -float(c[free] @ gte[free]) / den if den > 0 else None


def certify(
    G: Rows, z: NDArray[np.float64], c: NDArray[np.float64], lo: NDArray[np.float64],
    hi: NDArray[np.float64], x: NDArray[np.float64], gamma: float, rho: float | None, tol: float,
) -> tuple[float, float, NDArray[np.float64]] | None:
    """``(objective, lower bound, w)`` if ``x`` is feasible and provably ``tol``-optimal, else ``None``.

    ``w`` is the dual point of the bound: ``γ (Gx − z)``, or for the constrained problem the multiple
    of ``Gx − z`` that makes the reduced costs ``c + Gᵀw`` vanish on the free variables (least squares).
    """
    e = G.dot(x) - z
    ee = float(e @ e)
    if rho is None:
        w = gamma * e
        f = float(c @ x) + 0.5 * gamma * ee
    else:
        if ee > rho * rho * (1 + 1e-9):  # radius within 5e-10 relative
            return None
        lam = sphere_multiplier(c, G.tdot(e), (x > lo) & (x < hi))
        if lam is None:
            return None
        w = lam * e
        f = float(c @ x)
    lb = dual_bound(G, z, c, lo, hi, w, gamma, rho)
    return (f, lb, w) if f - lb <= tol * max(1.0, abs(f)) else None

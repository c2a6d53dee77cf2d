r"""Box-constrained least squares in compressed form, by an active-set method.

Solves

.. math::

    \min_{l ≤ x ≤ u} \tfrac12 ‖G x − z‖_2^2, \qquad G ∈ R^{k×n},\ k ≪ n,\ u_i ∈ (l_i, ∞],

the smallest residual attainable in the box, which decides whether a BPDN ball is within reach.
Method: the two-sided generalisation of Lawson and Hanson's active-set algorithm (Lawson &
Hanson, *Solving Least Squares Problems*, 1974, ch. 23; Stark & Parker, *Bounded-variable least
squares*, Comput. Stat. 10, 1995). Every variable starts at its lower bound; the one whose
single-coordinate move promises the largest decrease ``g_j² / (2‖G_j‖²)`` (``g = Gᵀ(Gx − z)``)
is released, the least-squares problem on the released set is solved exactly, and a step that
would leave the box stops at the first bound met, fixing that variable there. An optimum has at
most ``rank(G)`` variables strictly inside the box, so the loop runs about ``k`` times, each at
``O(n k)`` for the gradient plus a ``k × |free|`` least-squares solve — it never needs ``u`` to be
finite, unlike a log barrier whose dual has no interior point when ``u = ∞`` and the objective is
flat along the box.

Stopping rule: the KKT conditions up to rounding — no variable at a bound has a descent direction
into the box whose cosine with the residual ``Gx − z`` exceeds ``tol`` (``|g_j| ≤ tol ‖G_j‖ ‖Gx − z‖``),
or the data are fitted to ``1e-13 ‖z‖``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["BoxLeastSquares", "box_least_squares"]

_EXACT_FIT = 1e-13  # relative residual treated as an exact fit


@dataclass(frozen=True)
class BoxLeastSquares:
    """Outcome of :func:`box_least_squares`: the point, ``‖G x − z‖₂``, steps and whether KKT holds."""

    x: NDArray[np.float64]
    residual: float
    n_iter: int
    converged: bool


def box_least_squares(
    G: NDArray[np.float64],
    z: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    *,
    tol: float = 1e-10,
    max_iter: int | None = None,
) -> BoxLeastSquares:
    """``argmin ½‖G x − z‖²`` over ``lo ≤ x ≤ hi`` (``lo`` finite, ``hi`` may hold ``inf``).

    ``max_iter`` caps the number of released variables plus bound hits (default ``10 (k + 10)``).
    """
    k, n = G.shape
    cap = 10 * (k + 10) if max_iter is None else max_iter
    norms = np.sqrt(np.einsum("ij,ij->j", G, G))
    usable = norms > 0  # a zero column never changes the residual: it stays at its lower bound
    x = lo.astype(float).copy()
    at_hi = np.zeros(n, dtype=bool)
    free = np.zeros(n, dtype=bool)
    e = G @ x - z
    steps = 0
    blocked = np.zeros(n, dtype=bool)  # released and immediately fixed again without progress
    scale = float(np.linalg.norm(z))
    while steps < cap:
        ee = float(e @ e)
        if ee <= (_EXACT_FIT * scale) ** 2:  # the data are fitted to rounding: nothing left to gain
            return BoxLeastSquares(x=x, residual=float(np.sqrt(ee)), n_iter=steps, converged=True)
        g = G.T @ e
        cosine = np.zeros(n)
        can_rise = usable & ~free & ~at_hi & (g < 0)
        can_fall = usable & ~free & at_hi & (g > 0)
        movable = (can_rise | can_fall) & ~blocked
        cosine[movable] = np.abs(g[movable]) / norms[movable]
        j = int(np.argmax(cosine))
        if cosine[j] <= tol * np.sqrt(ee):
            return BoxLeastSquares(x=x, residual=float(np.sqrt(ee)), n_iter=steps, converged=True)
        free[j] = True
        at_hi[j] = False
        before = ee
        while steps < cap:
            steps += 1
            idx = np.flatnonzero(free)
            target = z - G[:, ~free] @ x[~free]
            sol = np.linalg.lstsq(G[:, idx], target, rcond=None)[0]
            cur = x[idx]
            outside = (sol <= lo[idx]) | (sol >= hi[idx])
            if not np.any(outside):
                x[idx] = sol
                break
            # walk from the current point towards sol and stop at the first bound met
            d = sol - cur
            with np.errstate(divide="ignore", invalid="ignore"):
                to_lo = np.where(d < 0, (lo[idx] - cur) / d, np.inf)
                to_hi = np.where(d > 0, (hi[idx] - cur) / d, np.inf)
            alpha = float(np.clip(np.min(np.minimum(to_lo, to_hi)), 0.0, 1.0))
            new = cur + alpha * d
            hit_lo = ((d < 0) & (to_lo <= alpha)) | (new <= lo[idx])
            hit_hi = ((d > 0) & (to_hi <= alpha)) | (new >= hi[idx])
            new[hit_lo] = lo[idx][hit_lo]
            new[hit_hi] = hi[idx][hit_hi]
            x[idx] = new
            free[idx[hit_lo | hit_hi]] = False
            at_hi[idx[hit_hi]] = True
        e = G @ x - z
        after = float(e @ e)
        blocked[j] = not free[j] and after >= before
        if after < before:
            blocked[:] = False
    return BoxLeastSquares(x=x, residual=float(np.linalg.norm(e)), n_iter=steps, converged=False)

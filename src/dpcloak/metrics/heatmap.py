r"""Heatmap metrics of Ghazi et al. (section 4 "Metrics"): SIM, Pearson CC, KL and EMD.

The paper defers to Bylinskii et al. (BJO+19, "What do different evaluation metrics tell us about
saliency models?") for the definitions; these follow that paper's reference (MIT saliency
benchmark) conventions. ``h`` is the true heatmap and ``h_hat`` the estimate; both are 2-D arrays
of the same shape, and every metric except CC first scales each map to unit total mass.

* :func:`similarity` (SIM, histogram intersection) ``Σ min(h, ĥ)`` — in [0, 1], higher is better.
* :func:`pearson_cc` ``cov(h, ĥ) / (σ_h σ_ĥ)`` — in [−1, 1], higher is better.
* :func:`kl_divergence` ``Σ h log(ε + h / (ĥ + ε))`` in nats, ``ε = 2.220446049250313e-16``
  (double-precision machine epsilon, MATLAB's ``eps`` in the benchmark code) — lower is better.
* :func:`emd` — exact EMD with the L1 ground metric on the Δ x Δ grid of points of ``[0, 1)²``
  (Ghazi et al., section 2.1), i.e. adjacent cells are ``1/Δ`` apart and the largest possible
  value is ``2 (1 − 1/Δ)`` — lower is better.

An all-zero map (the empty answer of a private release) is read as the uniform map, dpcloak's one
rule for empty answers (:mod:`dpcloak.metrics.distribution`); the heatmap front end flags it
``degenerate``. CC stays undefined for a constant map, uniform included, and refuses it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_real
from dpcloak.domains import Grid
from dpcloak.errors import InvalidParameterError
from dpcloak.metrics.distribution import as_distribution
from dpcloak.metrics.earth_mover import emd as _emd

__all__ = ["KL_EPS", "similarity", "pearson_cc", "kl_divergence", "emd"]

#: Smoothing constant of the KL divergence: MATLAB's ``eps`` as in the saliency benchmark code.
KL_EPS = float(np.finfo(np.float64).eps)


def _pair(
    h: ArrayLike, h_hat: ArrayLike, *, nonnegative: bool = True
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = check_array("h", h, ndim=2, nonnegative=nonnegative)
    b = check_array("h_hat", h_hat, ndim=2, nonnegative=nonnegative)
    if a.shape != b.shape:
        raise InvalidParameterError(f"h and h_hat must have the same shape, got {a.shape} and {b.shape}",
                                    parameter="h_hat", allowed=f"shape {a.shape}", got=b.shape)
    return a, b


def _unit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Unit mass; an all-zero map is the empty answer, read as uniform (:func:`~dpcloak.metrics.as_distribution`)."""
    return as_distribution(x).p


def similarity(h: ArrayLike, h_hat: ArrayLike) -> float:
    """SIM: histogram intersection ``Σ min(h/‖h‖₁, ĥ/‖ĥ‖₁)``, in [0, 1] (1 iff the maps agree).

    Equals ``1 − TV`` (Ghazi et al., Corollary B.5).

    Examples
    --------
    >>> import numpy as np
    >>> similarity([[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 2.0]])  # same map at another scale
    1.0
    >>> similarity([[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]])  # disjoint supports
    0.0
    >>> similarity([[1.0, 1.0], [0.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]])  # half the mass in common
    0.5
    """
    a, b = _pair(h, h_hat)
    return float(np.minimum(_unit(a), _unit(b)).sum())


def pearson_cc(h: ArrayLike, h_hat: ArrayLike) -> float:
    """Pearson linear correlation coefficient between the two maps' cells, in [−1, 1].

    Scale- and shift-invariant, so no normalisation is needed; both maps must be non-constant.

    Examples
    --------
    >>> round(pearson_cc([[1.0, 2.0], [3.0, 4.0]], [[10.0, 20.0], [30.0, 40.0]]), 12)  # scale-invariant
    1.0
    >>> round(pearson_cc([[1.0, 2.0], [3.0, 4.0]], [[4.0, 3.0], [2.0, 1.0]]), 12)
    -1.0
    """
    a, b = _pair(h, h_hat, nonnegative=False)
    da, db = a - a.mean(), b - b.mean()
    na, nb = float(np.sqrt(np.sum(da * da))), float(np.sqrt(np.sum(db * db)))
    if na == 0.0 or nb == 0.0:
        which = "h" if na == 0.0 else "h_hat"
        raise InvalidParameterError(f"{which} must not be constant for the Pearson correlation",
                                    parameter=which, allowed="not constant")
    return float(np.clip(np.sum(da * db) / (na * nb), -1.0, 1.0))


def kl_divergence(h: ArrayLike, h_hat: ArrayLike, *, eps: float = KL_EPS) -> float:
    """``KL(h ‖ ĥ) = Σ h log(ε + h / (ĥ + ε))`` in nats for the unit-mass maps (saliency convention).

    ``ε`` (default :data:`KL_EPS`) keeps empty cells of ``ĥ`` finite; cells where ``h = 0``
    contribute 0. Lower is better; 0 iff the normalised maps agree (up to ``ε``).

    Examples
    --------
    >>> import numpy as np
    >>> abs(kl_divergence([[1.0, 1.0], [1.0, 1.0]], [[2.0, 2.0], [2.0, 2.0]])) < 1e-12  # equal after normalising
    True
    >>> round(kl_divergence([[1.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]]), 6), round(float(np.log(2)), 6)
    (0.693147, 0.693147)
    """
    a, b = _pair(h, h_hat)
    e = check_real("eps", eps, low=0.0)
    pa, pb = _unit(a), _unit(b)
    return float(np.sum(pa * np.log(e + pa / (pb + e))))


def emd(h: ArrayLike, h_hat: ArrayLike, *, extent: tuple[float, float] = (1.0, 1.0)) -> float:
    """Exact EMD between the unit-mass maps with the L1 ground metric (Ghazi et al., section 2.1).

    Cells are the points of ``[0, 1)²`` (``extent`` changes the physical size), so for a Δ x Δ
    map adjacent cells are ``1/Δ`` apart; the value is in those units. Computed by
    :func:`dpcloak.metrics.emd` on ``Grid(h.shape, extent=extent, metric="l1")``.

    Examples
    --------
    Moving all the mass one cell to the right of a 4 × 4 map costs 1/4 (cells are 1/Δ apart):

    >>> import numpy as np
    >>> h = np.zeros((4, 4)); h[0, 0] = 1.0
    >>> g = np.zeros((4, 4)); g[0, 1] = 1.0
    >>> round(emd(h, g), 12)
    0.25
    >>> round(emd(h, g, extent=(400.0, 400.0)), 9)  # in metres on a 400 m square
    100.0
    """
    a, b = _pair(h, h_hat)
    return _emd(a, b, Grid(a.shape, extent=extent, metric="l1"))

r"""The optimal bounded noise of Farokhi & Sandberg: the cos² density of Corollaries 1, 3 and 5.

On a support :math:`[\underline w, \bar w]` of width :math:`L = \bar w - \underline w` and centre
:math:`c = (\bar w + \underline w)/2`, the density minimising the Fisher information (Problem 2) is

.. math:: \gamma^*(w) = \frac{2}{L}\cos^2\!\Big(\frac{\pi}{L}(w - c)\Big)\,\mathbb 1_{[\underline w,\bar w]}(w),

for the identity query (Corollary 1, product form over coordinates), any scalar linear query
(Corollary 3) and any scalar non-linear query (Corollary 5). Closed forms used here (each checked
in the tests against quadrature, finite differences, Monte Carlo or a convex program):

* Fisher information per coordinate :math:`J = 4\pi^2/L^2` (so :math:`\operatorname{Tr}(\mathcal I^{-1})
  = \sum_i L_i^2/(4\pi^2)` for the identity query);
* CDF :math:`F(w) = s - \sin(2\pi s)/(2\pi)`, :math:`s = (w - \underline w)/L`;
* variance :math:`(\pi^2 - 6)L^2/(12\pi^2)` (Appendix E) and :math:`\mathcal Q = \sum_i
  [(\pi^2-6)L_i^2/(12\pi^2) + c_i^2]`.

Discrepancies with the paper (documented in the report)
-------------------------------------------------------
* Corollary 2 (ii) prints :math:`\mathcal Q = m L^2 (2\pi^2-3)/(6\pi^2) \approx 0.2827\,mL^2`
  for every support. Appendix E's own derivation gives :math:`\mathcal Q = m[(\pi^2-6)L^2/(12\pi^2)
  + c^2]`, and symbolically (sympy, ``tests/errata/test_farokhi_sandberg.py``)
  :math:`\mathcal Q - \mathcal Q_{\text{printed}} = m\,\bar w\,\underline w`. The printed value is
  therefore exact exactly when :math:`\bar w\,\underline w = 0`, i.e. for the supports
  :math:`[0, L]` and :math:`[-L, 0]` (Example 1's smart meter has :math:`\underline w = 0`); it is too
  large by :math:`m|\bar w\underline w|` when the support straddles 0 (by :math:`mL^2/4` for
  :math:`[-L/2, L/2]`) and too small when both ends have the same sign. :meth:`BoundedOptimalNoise.quality`
  implements the general formula; :func:`corollary2_quality_published` the printed one.
* Corollary 2 (i) writes :math:`\operatorname{Tr}(\mathcal I^{-1}) = \kappa L^2`, but Appendix E
  defines κ through :math:`\mathcal I = \kappa/L^2` (and drops the factor 4 of
  :math:`\mathcal I = 4\int u'^2`). The computation gives :math:`\mathcal I = 4\pi^2/L^2` per
  coordinate, so the statement holds with :math:`\kappa = m/(4\pi^2)`
  (:func:`corollary2_kappa`); the sentence after Corollary 2, :math:`\mathcal Q = (6\pi^2\kappa/(2\pi^2-3))
  \operatorname{Tr}(\mathcal I^{-1})`, has the ratio inverted: :math:`\mathcal Q/\operatorname{Tr}(\mathcal I^{-1})
  = (2\pi^2-3)/(6\pi^2\kappa)` (for a support with an end at 0).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_array, check_int
from dpcloak.bound import Bound
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher.gaussian import sample_shape
from dpcloak.privacy.fisher.information import (
    FisherGuarantee,
    FisherInformation,
    cramer_rao_bound,
    fisher_guarantee,
    query_fisher_information,
)
from dpcloak.privacy.mechanisms import check_values

__all__ = [
    "BoundedOptimalNoise",
    "cos2_fisher_information",
    "corollary2_kappa",
    "corollary2_quality_published",
    "check_support",
]

_TWO_PI = 2.0 * math.pi


def check_support(low: ArrayLike, high: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate the bounds of a box support: finite, broadcastable, ``low < high`` everywhere.

    Examples
    --------
    >>> check_support([0.0, -1.0], 1.0)
    (array([ 0., -1.]), array([1., 1.]))
    >>> check_support(1.0, 0.0)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: low must be < high (a support of positive width), got low=1 >= high=0
    """
    lo = check_array("low", low, dtype=float)
    hi = check_array("high", high, dtype=float)
    if lo.ndim > 1 or hi.ndim > 1:
        raise InvalidParameterError(f"low and high must be scalars or 1-D, got shapes {lo.shape} and {hi.shape}",
                                    parameter="low")
    try:
        lo, hi = np.broadcast_arrays(lo, hi)
    except ValueError:
        raise InvalidParameterError(f"low and high must have the same length, got {lo.shape} and {hi.shape}",
                                    parameter="low") from None
    bad = np.flatnonzero(~(lo < hi))
    if bad.size:
        i = int(bad[0])
        raise InvalidParameterError(
            f"low must be < high (a support of positive width), "
            f"got low={float(lo.flat[i]):g} >= high={float(hi.flat[i]):g}", parameter="low"
        )
    return np.array(lo, dtype=float), np.array(hi, dtype=float)


def cos2_fisher_information(*, width: float) -> float:
    r"""Closed-form Fisher information :math:`4\pi^2/L^2` of the cos² density of width ``L``.

    Examples
    --------
    >>> import math
    >>> cos2_fisher_information(width=2.0) == math.pi ** 2
    True
    """
    lo, hi = check_support(0.0, width)
    return float(4.0 * math.pi**2 / (hi - lo) ** 2)


def corollary2_kappa(*, m: int = 1) -> float:
    r"""κ = ``m/(4π²)`` with :math:`\operatorname{Tr}(\mathcal I^{-1}) = \kappa(\bar w - \underline w)^2` (Cor. 2 (i)).

    Corrected: see the module docstring (Appendix E's κ is the reciprocal and misses a factor 4).

    Examples
    --------
    The Cramér–Rao bound of the cos² noise on ``[−1, 1]`` is κ L² = 4κ:

    >>> k = corollary2_kappa(m=1)
    >>> round(4 * k, 12) == round(BoundedOptimalNoise(low=-1.0, high=1.0).cramer_rao_bound().value, 12)
    True
    """
    return check_int("m", m, minimum=1) / (4.0 * math.pi**2)


def corollary2_quality_published(*, low: float, high: float, m: int = 1) -> float:
    r"""Corollary 2 (ii) as printed: :math:`\mathcal Q = m(\bar w-\underline w)^2(2\pi^2-3)/(6\pi^2)`.

    Exact only when ``low · high == 0`` (support ``[0, L]`` or ``[−L, 0]``): the true value is this plus
    ``m · low · high``. Use :meth:`BoundedOptimalNoise.quality` in general.

    Examples
    --------
    Right on ``[0, L]``, off by ``m · low · high`` otherwise:

    >>> exact = BoundedOptimalNoise(low=0.0, high=1.0).quality()
    >>> round(corollary2_quality_published(low=0.0, high=1.0), 12) == round(exact, 12)
    True
    >>> round(corollary2_quality_published(low=-1.0, high=1.0) - BoundedOptimalNoise(low=-1.0, high=1.0).quality(), 12)
    1.0
    """
    lo, hi = check_support(low, high)
    if lo.ndim != 0:
        raise InvalidParameterError("corollary2_quality_published takes scalar low and high",
                                    parameter="low", allowed="scalars")
    return float(check_int("m", m, minimum=1) * (hi - lo) ** 2 * (2 * math.pi**2 - 3) / (6 * math.pi**2))


def _t_minus_sin(t: NDArray[np.float64]) -> NDArray[np.float64]:
    """``t − sin t`` without cancellation for small ``t`` (series below 0.1)."""
    t2 = t * t
    series = t * t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0)))
    return np.where(t < 0.1, series, t - np.sin(t))


def _half_quantile(u: NDArray[np.float64]) -> NDArray[np.float64]:
    """Solve ``t − sin t = 2πu`` for ``t ∈ [0, π]`` given ``u ∈ [0, 1/2]`` (Newton from the right).

    ``g(t) = t − sin t`` is increasing and convex on [0, π], so from any start in [0, π] the Newton
    iterates (clamped to [0, π]) are right of the root after at most one step and then decrease to it
    monotonically. The start is the series inversion ``t ≈ s(1 + s²/60 + s⁴/1400)``, ``s = (6·2πu)^{1/3}``,
    of ``g(t) = t³/6 − t⁵/120 + t⁷/5040 − …`` (four iterations reach 1e-13 relative accuracy).
    """
    target = _TWO_PI * u
    s = np.cbrt(6.0 * target)
    t = np.minimum(s * (1.0 + s * s / 60.0 + s**4 / 1400.0), math.pi)
    for _ in range(30):
        slope = 2.0 * np.sin(0.5 * t) ** 2  # g'(t) = 1 − cos t
        safe = slope > 0.0
        step = np.divide(_t_minus_sin(t) - target, slope, out=np.zeros_like(t), where=safe)
        new = np.clip(t - step, 0.0, math.pi)
        converged = bool(np.all(np.abs(new - t) <= 1e-13 * np.maximum(t, 1e-300)))
        t = new
        if converged:
            break
    return np.where(u > 0.0, t, 0.0)


def _unit_quantile(u: NDArray[np.float64]) -> NDArray[np.float64]:
    """Inverse of ``F(s) = s − sin(2πs)/(2π)`` on [0, 1], using the symmetry ``F(1−s) = 1 − F(s)``."""
    lower = u <= 0.5
    folded = np.where(lower, u, 1.0 - u)
    s = _half_quantile(folded) / _TWO_PI
    return np.where(lower, s, 1.0 - s)


class BoundedOptimalNoise:
    r"""Additive noise with the Fisher-information-minimising density on a bounded support (Farokhi & Sandberg).

    Parameters
    ----------
    low, high : float or array_like of shape (m,)
        The support :math:`[\underline w, \bar w]` (per coordinate for vector queries, product form
        of Corollary 1). Scalars give i.i.d. noise on every entry of whatever is privatized.

    Notes
    -----
    Density :math:`\gamma(w) = \prod_i \frac{2}{L_i}\cos^2(\pi(w_i - c_i)/L_i)` on the box
    (Corollaries 1, 3, 5 of Farokhi & Sandberg). Samples are drawn by the inverse CDF: for a uniform ``u`` the
    equation :math:`t - \sin t = 2\pi u` is solved to ~1e-13 relative accuracy by a clamped Newton
    iteration (vectorised), and ``w = low + L t/(2π)``.

    Privacy guarantee
    -----------------
    **Not differential privacy.** With ``y = x + w`` (or ``y = Cx + w``), every unbiased estimator
    of ``x`` has :math:`\mathbb E\|x - \hat x(y)\|^2 \ge \operatorname{Tr}(\mathcal I^{-1}) =
    \sum_i L_i^2/(4\pi^2)` (Proposition 1 and Corollary 2 (i), corrected κ): :meth:`guarantee`.
    Biased estimators using prior knowledge can do better, and since the noise is bounded an
    observation can rule out values of ``x`` outside ``y − [low, high]`` with certainty.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> noise = BoundedOptimalNoise(low=-1.0, high=1.0)
    >>> w = noise.sample(5, rng=0)  # simulation: seeds allowed, this is not a DP release
    >>> w.shape, bool(np.all(np.abs(w) <= 1.0))
    ((5,), True)
    >>> float(noise.cdf(0.0)), float(noise.ppf(0.5))  # symmetric about the centre
    (0.5, 0.0)
    >>> g = noise.guarantee()
    >>> g.is_differential_privacy, round(g.cramer_rao_bound, 6), round(1 / math.pi ** 2, 6)  # L²/(4π²)
    (False, 0.101321, 0.101321)

    >>> noise.fisher_information().trace == math.pi ** 2  # 4π²/L², L = 2
    True
    >>> float(noise.pdf(0.0)), float(noise.marginal_pdf(0.0))  # 2/L at the centre
    (1.0, 1.0)
    """

    def __init__(self, *, low: ArrayLike, high: ArrayLike) -> None:
        lo, hi = check_support(low, high)
        self.low: NDArray[np.float64] = lo
        self.high: NDArray[np.float64] = hi
        self.width: NDArray[np.float64] = hi - lo
        self.centre: NDArray[np.float64] = 0.5 * (hi + lo)
        self.vector = lo.ndim == 1
        self.m = int(lo.shape[0]) if self.vector else 1

    # ----------------------------------------------------------------- distribution
    def _check_last_axis(self, name: str, arr: NDArray[np.float64]) -> None:
        if self.vector and (arr.ndim == 0 or arr.shape[-1] != self.m):
            raise InvalidParameterError(f"{name} must have last axis of length m={self.m}, got shape {arr.shape}",
                                        parameter=name)

    def marginal_pdf(self, w: ArrayLike) -> NDArray[np.float64]:
        """Per-coordinate densities (same shape as ``w``; last axis = coordinates in vector mode)."""
        arr = check_array("w", w, dtype=float)
        self._check_last_axis("w", arr)
        inside = (arr >= self.low) & (arr <= self.high)
        dens = 2.0 / self.width * np.cos(math.pi * (arr - self.centre) / self.width) ** 2
        return np.where(inside, dens, 0.0)

    def pdf(self, w: ArrayLike) -> NDArray[np.float64]:
        """Joint density: elementwise for scalar bounds, product over the last axis for vector bounds."""
        dens = self.marginal_pdf(w)
        return np.prod(dens, axis=-1) if self.vector else dens

    def cdf(self, w: ArrayLike) -> NDArray[np.float64]:
        r"""Per-coordinate CDF :math:`F(w) = s - \sin(2\pi s)/(2\pi)`, :math:`s = (w - \underline w)/L` in [0, 1]."""
        arr = check_array("w", w, dtype=float)
        self._check_last_axis("w", arr)
        s = np.clip((arr - self.low) / self.width, 0.0, 1.0)
        lower = s <= 0.5
        folded = np.where(lower, s, 1.0 - s)
        half = _t_minus_sin(_TWO_PI * folded) / _TWO_PI
        return np.where(lower, half, 1.0 - half)

    def ppf(self, u: ArrayLike) -> NDArray[np.float64]:
        """Per-coordinate inverse CDF for ``u`` in [0, 1] (exact to a few ulps)."""
        arr = check_array("u", u, dtype=float)
        if arr.size and (np.min(arr) < 0.0 or np.max(arr) > 1.0):
            raise InvalidParameterError("u must lie in [0, 1]", parameter="u", allowed="[0, 1]")
        self._check_last_axis("u", arr)
        return self.low + self.width * _unit_quantile(arr)

    def noise_quantile(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """Noise values ``F⁻¹(u)`` (the :class:`~dpcloak.privacy.mechanisms.QuantileNoise` protocol)."""
        return self.ppf(u)

    def sample(self, size: int | tuple[int, ...] | None = None, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Draw noise: shape ``size`` for scalar bounds, ``size + (m,)`` for vector bounds."""
        shape = sample_shape(size)
        if self.vector:
            shape = (*shape, self.m)
        gen = as_generator(rng)
        return self.low + self.width * _unit_quantile(gen.random(shape))

    def privatize(self, values: ArrayLike, *, rng: RngLike = None) -> NDArray[np.float64]:
        """Return ``values + w`` with fresh independent noise (same shape as ``values``).

        Scalar bounds: every entry gets its own noise. Vector bounds: ``values`` has last axis m.
        The noise has mean ``(low + high)/2`` (the support need not be centred, e.g. ``[0, w̄]`` so that
        a reading never decreases); subtract it for an unbiased release.
        """
        x = check_values(values)
        self._check_last_axis("values", x)
        gen = as_generator(rng)
        return x + self.low + self.width * _unit_quantile(gen.random(x.shape))

    # ----------------------------------------------------------------- guarantees
    def fisher_information(self) -> FisherInformation:
        """Closed-form noise Fisher information ``diag(4π²/L_i²)`` (m × m; 1 × 1 for scalar bounds)."""
        j = 4.0 * math.pi**2 / np.atleast_1d(self.width) ** 2
        return FisherInformation(matrix=np.diag(j), error_estimate=0.0,
                                 source="Farokhi & Sandberg, Corollary 2 (i) (closed form 4 pi^2 / L^2 per coordinate)")

    def cramer_rao_bound(self, query: ArrayLike | None = None) -> Bound:
        """Proposition 1 for ``y = x + w`` (``query=None``, one privatized coordinate per noise coordinate)
        or for ``y = Cx + w`` (``query`` = C of shape (m, n); not applicable when ``CᵀJC`` is singular)."""
        info = self.fisher_information()
        return cramer_rao_bound(info if query is None else query_fisher_information(info, query))

    def quality(self) -> float:
        r"""Q = E‖w‖² = Σ_i [(π² − 6)L_i²/(12π²) + c_i²] (Appendix E; corrected Corollary 2 (ii))."""
        var = (math.pi**2 - 6.0) * np.atleast_1d(self.width) ** 2 / (12.0 * math.pi**2)
        return float(np.sum(var + np.atleast_1d(self.centre) ** 2))

    def guarantee(self) -> FisherGuarantee:
        """The Fisher-information guarantee of one response (labelled: NOT differential privacy)."""
        return fisher_guarantee(self, source="Farokhi & Sandberg, Corollaries 1-3 and Proposition 1")

    def __repr__(self) -> str:
        lo = self.low.tolist()
        hi = self.high.tolist()
        return f"BoundedOptimalNoise(low={lo}, high={hi}) [cos^2 density, Farokhi & Sandberg Cor. 1]"

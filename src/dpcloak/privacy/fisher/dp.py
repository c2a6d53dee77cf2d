r"""The differential-privacy view of Farokhi & Sandberg (§5): Propositions 3–4, condition (16) and the 1 + κ factor.

Setting: Example 2's weighted average :math:`f(x) = Cx`, :math:`C \in \mathbb R^{1\times n}`, over
databases :math:`x \in [\underline x, \bar x]^n`; neighbours differ in one entry, so the
sensitivity of the query is :math:`\Delta = (\bar x - \underline x)\max_i |c_i|`.

Discrepancies with the paper (each checked in the tests)
--------------------------------------------------------
* **Proposition 3** prints the Laplace scale :math:`b = \epsilon/\Delta`. Its proof (Appendix L)
  bounds the density ratio by :math:`\exp(\Delta/b)`, which is :math:`e^\epsilon` for
  :math:`b = \Delta/\epsilon` — the usual Laplace mechanism. With the printed scale the privacy
  loss is :math:`\Delta^2/\epsilon`, so more noise is needed as ε *grows*. Consequently "under
  :math:`\mathcal Q = \vartheta` one can achieve :math:`\Delta\sqrt{\vartheta/2}`-DP" becomes
  :math:`\epsilon = \Delta\sqrt{2/\vartheta}`.
* **Condition (16)** compares ϑ, a *variance* (:math:`\mathcal Q = \vartheta` for m = 1), with a
  multiple of Δ, which has the units of ``x``. The result it invokes (Le Ny & Pappas 2014) is a
  condition on the standard deviation: :math:`\sqrt\vartheta \ge \Delta(\sqrt{2\ln(1/(2\delta))}/\epsilon
  + 1/\sqrt{2\epsilon})`. ``reading="published"`` implements it as printed, ``"corrected"`` with
  :math:`\sqrt\vartheta`; they coincide when ϑ = 1 — Figure 2's setting :math:`\vartheta/\Delta = 1`
  with Δ = 1. Appendix M also misdefines erfc (:math:`e^{-u^2}`, not :math:`e^{-u^2/2}`); the
  chain of inequalities is otherwise right.
* **§5 bound (after Proposition 3).** Example 2 writes :math:`\mathbb E\|x-\hat x\|^2 \ge \|(I - C^\dagger C)x\|^2
  + \operatorname{Tr}(\mathcal I^{-1})(CC^\top)^{-1}`, correct with :math:`\mathcal I = J` the noise's
  Fisher information. §5 substitutes :math:`\mathcal I = CC^\top J` (:math:`CC^\top/b^2`,
  :math:`CC^\top/\vartheta`) into it and prints :math:`\vartheta/(2(CC^\top)^2)` and
  :math:`\vartheta/(CC^\top)^2`, i.e. a second term :math:`1/(J (CC^\top)^2)`; the :math:`(CC^\top)^2`
  is in §5, not in Example 2. For :math:`\hat x =
  C^\dagger y` the error is exactly :math:`\|(I - C^\dagger C)x\|^2 + \mathbb E w^2 / CC^\top` and
  :math:`\mathbb E w^2 \ge 1/J`, so the bound is :math:`\|(I-C^\dagger C)x\|^2 + 1/(J\,CC^\top)`; the
  printed one exceeds the *attained* error whenever :math:`CC^\top < 1` (every averaging query).
* **1 + κ.** The ratio of the optimal-Gaussian to the Laplace bound at equal Q,
  :math:`(a + \vartheta/s)/(a + \vartheta/(2s))` with :math:`a = \|(I-C^\dagger C)x\|^2`, decreases in
  ``a``; the paper's :math:`\kappa = 1/(1 + 2s\max_x a/\vartheta)` (with :math:`s = (CC^\top)^2`) is
  therefore the **infimum** over the box, not the supremum it is labelled. The supremum is at
  :math:`\min_x a` (0 when the box meets the row space of C, giving a factor 2).
  :func:`compare_laplace_gaussian` reports both, with the corrected :math:`s = CC^\top`.
* **Entropies.** §5 prints :math:`H(\gamma) = \log_2(e\sqrt2\,\vartheta)` (Laplace) and
  :math:`H(\gamma^*) = \log_2(\sqrt{2\pi e}\,\vartheta)` (Gaussian) at :math:`\mathcal Q = \vartheta`;
  with ϑ a variance they are :math:`\log_2(e\sqrt{2\vartheta})` and :math:`\log_2\sqrt{2\pi e\vartheta}`
  (ϑ should be √ϑ). The conclusion :math:`H(\gamma^*) \ge H(\gamma)` still holds (√(2πe) ≈ 4.13 > e√2 ≈ 3.84).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from dpcloak._validation import check_choice, check_int, check_probability, check_real, check_vector
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.mechanisms import gaussian_epsilon

__all__ = [
    "weighted_average_sensitivity",
    "laplace_scale",
    "laplace_scale_published",
    "laplace_epsilon_at_quality",
    "gaussian_dp_condition",
    "example2_error_bound",
    "residual_range",
    "ResidualRange",
    "LaplaceGaussianComparison",
    "compare_laplace_gaussian",
]

READINGS = ("corrected", "published")


def _weights(weights: ArrayLike) -> NDArray[np.float64]:
    c = check_vector("weights", weights)
    if not np.any(c != 0.0):
        raise InvalidParameterError("weights must have at least one non-zero entry", parameter="weights")
    return c


def _box(low: float, high: float) -> tuple[float, float]:
    lo = check_real("low", low)
    hi = check_real("high", high)
    if not lo < hi:
        raise InvalidParameterError(f"low must be < high, got low={lo:g}, high={hi:g}", parameter="low")
    return lo, hi


def weighted_average_sensitivity(*, weights: ArrayLike, low: float, high: float) -> float:
    r"""Δ = (x̄ − x̲) max_i \|c_i\|: the largest change of ``Cx`` when one entry of ``x ∈ [x̲, x̄]^n`` changes.

    Examples
    --------
    The sum of two readings in ``[0, 2]`` changes by at most 2 when one reading changes:

    >>> weighted_average_sensitivity(weights=[1.0, 1.0], low=0.0, high=2.0)
    2.0
    """
    c = _weights(weights)
    lo, hi = _box(low, high)
    return float((hi - lo) * np.max(np.abs(c)))


def laplace_scale(*, epsilon: float, weights: ArrayLike, low: float, high: float) -> float:
    """Proposition 3, corrected: Laplace scale ``b = Δ/ε`` makes the weighted average ε-DP.

    Privacy guarantee
    -----------------
    ``Cx + Lap(b)`` is ε-DP for databases differing in one entry (Appendix L's proof).

    Examples
    --------
    >>> laplace_scale(epsilon=0.5, weights=[1.0, 1.0], low=0.0, high=2.0)  # Δ/ε = 2/0.5
    4.0
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    return weighted_average_sensitivity(weights=weights, low=low, high=high) / eps


def laplace_scale_published(*, epsilon: float, weights: ArrayLike, low: float, high: float) -> float:
    """Proposition 3 as printed: ``b = ε/Δ`` (privacy loss Δ²/ε — not ε-DP in general; see module notes).

    Examples
    --------
    The printed ``ε/Δ`` is 16 times too small here:

    >>> laplace_scale_published(epsilon=0.5, weights=[1.0, 1.0], low=0.0, high=2.0)
    0.25
    >>> laplace_scale(epsilon=0.5, weights=[1.0, 1.0], low=0.0, high=2.0)
    4.0
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    return eps / weighted_average_sensitivity(weights=weights, low=low, high=high)


def laplace_epsilon_at_quality(*, theta: float, weights: ArrayLike, low: float, high: float,
                               reading: str = "corrected") -> float:
    r"""ε of the Laplace noise with :math:`\mathcal Q = 2b^2 = \vartheta`.

    ``Δ√(2/ϑ)`` (corrected) or the printed ``Δ√(ϑ/2)`` (``reading="published"``).

    Examples
    --------
    At ϑ = 8 (b = 2) and Δ = 2, the corrected ε = Δ/b = 1; the printed reading gives 4:

    >>> laplace_epsilon_at_quality(theta=8.0, weights=[1.0, 1.0], low=0.0, high=2.0)
    1.0
    >>> laplace_epsilon_at_quality(theta=8.0, weights=[1.0, 1.0], low=0.0, high=2.0, reading="published")
    4.0
    """
    th = check_real("theta", theta, low=0.0)
    check_choice("reading", reading, READINGS)
    delta_q = weighted_average_sensitivity(weights=weights, low=low, high=high)
    return delta_q * math.sqrt(2.0 / th) if reading == "corrected" else delta_q * math.sqrt(th / 2.0)


def gaussian_dp_condition(*, epsilon: ArrayLike, delta: ArrayLike, theta: float, weights: ArrayLike,
                          low: float, high: float, reading: str = "corrected") -> NDArray[np.bool_]:
    r"""Condition (16) of Proposition 4, vectorised over ``epsilon`` and ``delta`` (broadcast).

    ``True`` where the Gaussian of Corollary 6 (variance ϑ) is certified (ε, δ)-DP:
    :math:`s \ge \Delta(\sqrt{2\ln(1/(2\delta))}/\epsilon + 1/\sqrt{2\epsilon})` and δ ≤ 1/2, with
    :math:`s = \sqrt\vartheta` (``reading="corrected"``) or :math:`s = \vartheta` (as printed).

    Examples
    --------
    With variance ϑ = 100 (σ = 10) and Δ = 1, ε = 5 is certified at δ = 1e-5 but ε = 0.5 is not:

    >>> gaussian_dp_condition(epsilon=[0.5, 5.0], delta=1e-5, theta=100.0, weights=[1.0, 1.0],
    ...                       low=0.0, high=1.0).tolist()
    [False, True]
    """
    eps = np.asarray(epsilon, dtype=float)
    dlt = np.asarray(delta, dtype=float)
    if not (np.all(np.isfinite(eps)) and np.all(eps > 0)):
        raise InvalidParameterError("epsilon must be finite and > 0", parameter="epsilon")
    if not (np.all(dlt > 0) and np.all(dlt < 1)):
        raise InvalidParameterError("delta must lie in (0, 1)", parameter="delta")
    th = check_real("theta", theta, low=0.0)
    check_choice("reading", reading, READINGS)
    delta_q = weighted_average_sensitivity(weights=weights, low=low, high=high)
    scale = math.sqrt(th) if reading == "corrected" else th
    half = dlt <= 0.5
    k = np.sqrt(2.0 * np.log(1.0 / (2.0 * np.where(half, dlt, 0.5))))
    need = delta_q * (k / eps + 1.0 / np.sqrt(2.0 * eps))
    return np.asarray(half & (scale >= need))


def _residual_projector(c: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.eye(c.size) - np.outer(c, c) / float(c @ c)


@dataclass(frozen=True)
class ResidualRange:
    """Range of a(x) = ‖(I − C†C)x‖² over a box: ``minimum`` (bounded least squares), ``maximum`` (vertices).

    Examples
    --------
    >>> r = residual_range(weights=[1.0, 1.0], low=0.0, high=1.0)
    >>> isinstance(r, ResidualRange), r.minimum, r.maximum
    (True, 0.0, 0.5)
    """

    minimum: float
    maximum: float


def residual_range(*, weights: ArrayLike, low: float, high: float, max_vertices: int = 2**16) -> ResidualRange:
    r"""min and max of :math:`a(x) = \|(I - C^\dagger C)x\|^2` over the box :math:`[\underline x, \bar x]^n`.

    The max of this convex quadratic is at a vertex (enumerated, ``2^n ≤ max_vertices``); the min is
    a bounded least-squares problem (:func:`scipy.optimize.lsq_linear`).

    Examples
    --------
    For ``C = [1, 1]`` the residual of ``x`` is its difference part: 0 on the diagonal, largest at
    the vertex ``(1, 0)`` where ``a = ‖(½, −½)‖² = ½``:

    >>> residual_range(weights=[1.0, 1.0], low=0.0, high=1.0)
    ResidualRange(minimum=0.0, maximum=0.5)
    """
    c = _weights(weights)
    lo, hi = _box(low, high)
    limit = check_int("max_vertices", max_vertices, minimum=1)
    if 2**c.size > limit:
        raise InvalidParameterError(f"weights has n={c.size} entries; 2^n vertices exceed max_vertices={limit}",
                                    parameter="weights")
    proj = _residual_projector(c)
    verts = np.array(list(itertools.product((lo, hi), repeat=c.size)))
    a_max = float(np.max(np.sum((verts @ proj) ** 2, axis=1)))
    res = optimize.lsq_linear(proj, np.zeros(c.size), bounds=(lo, hi), tol=1e-12)
    return ResidualRange(minimum=float(max(2.0 * res.cost, 0.0)), maximum=a_max)


def example2_error_bound(x: ArrayLike, *, weights: ArrayLike, noise_fisher: float, reading: str = "corrected") -> float:
    r"""Example 2's lower bound on :math:`\mathbb E\|x - C^\dagger y\|^2`: :math:`a(x) + 1/(J\,s)`.

    ``s = CCᵀ`` (corrected) or ``(CCᵀ)²`` (as printed in §5, after Proposition 3); ``J`` is the noise's
    Fisher information (2/ϑ for Laplace, 1/ϑ for the optimal Gaussian at Q = ϑ).

    Examples
    --------
    ``a(x) = ½`` at ``x = (1, 0)`` for ``C = [1, 1]`` (:func:`residual_range`), plus ``1/(J s) = 1/2``:

    >>> example2_error_bound([1.0, 0.0], weights=[1.0, 1.0], noise_fisher=1.0)
    1.0
    """
    c = _weights(weights)
    xx = check_vector("x", x, length=c.size)
    j = check_real("noise_fisher", noise_fisher, low=0.0)
    check_choice("reading", reading, READINGS)
    gram = float(c @ c)
    s = gram if reading == "corrected" else gram**2
    resid = _residual_projector(c) @ xx
    return float(resid @ resid + 1.0 / (j * s))


@dataclass(frozen=True)
class LaplaceGaussianComparison:
    """Laplace (Proposition 3) against the optimal Gaussian (Corollary 6) at equal quality Q = ϑ.

    Attributes
    ----------
    theta : float
        The common quality ϑ = E w².
    sensitivity : float
        Δ of the weighted average.
    laplace_scale : float
        b = √(ϑ/2).
    laplace_fisher, gaussian_fisher : float
        Noise Fisher informations 1/b² = 2/ϑ and 1/ϑ (the Laplace noise is twice as informative).
    laplace_epsilon, laplace_epsilon_published : float
        ε of the Laplace noise: Δ√(2/ϑ) (corrected) and the printed Δ√(ϑ/2).
    gaussian_epsilon : float
        Exact ε of the Gaussian at ``delta`` (Balle & Wang profile).
    delta : float
        δ used for ``gaussian_epsilon``.
    residual_min, residual_max : float
        Range of a(x) = ‖(I − C†C)x‖² over the box.
    ratio_min, ratio_max : float
        Range over the box of (Gaussian bound)/(Laplace bound), corrected normalisation
        (``ratio_min = 1 + κ`` with the paper's κ formula and s = CCᵀ).
    kappa_published : float
        The paper's κ = 1/(1 + 2(CCᵀ)² max a/ϑ).
    laplace_entropy_bits, gaussian_entropy_bits : float
        Differential entropies (bits) at Q = ϑ: log2(e√(2ϑ)) and log2 √(2πeϑ) (corrected §5 formulas).

    Examples
    --------
    >>> c = compare_laplace_gaussian(weights=[1.0, 1.0], low=0.0, high=1.0, theta=2.0)
    >>> isinstance(c, LaplaceGaussianComparison), c.laplace_scale, c.laplace_fisher, c.gaussian_fisher
    (True, 1.0, 1.0, 0.5)
    """

    theta: float
    sensitivity: float
    laplace_scale: float
    laplace_fisher: float
    gaussian_fisher: float
    laplace_epsilon: float
    laplace_epsilon_published: float
    gaussian_epsilon: float
    delta: float
    residual_min: float
    residual_max: float
    ratio_min: float
    ratio_max: float
    kappa_published: float
    laplace_entropy_bits: float
    gaussian_entropy_bits: float


def compare_laplace_gaussian(*, weights: ArrayLike, low: float, high: float, theta: float,
                             delta: float = 1e-5) -> LaplaceGaussianComparison:
    """Side-by-side of §5: Laplace vs optimal Gaussian noise for the weighted average at Q = ϑ.

    Examples
    --------
    At equal quality ϑ = 2 the Laplace noise carries twice the Fisher information of the Gaussian
    (it is easier to see through) but is ε-DP with a smaller ε:

    >>> c = compare_laplace_gaussian(weights=[1.0, 1.0], low=0.0, high=1.0, theta=2.0)
    >>> c.laplace_fisher / c.gaussian_fisher
    2.0
    >>> c.laplace_epsilon, round(c.gaussian_epsilon, 3), c.delta
    (1.0, 2.943, 1e-05)
    """
    c = _weights(weights)
    th = check_real("theta", theta, low=0.0)
    dlt = check_probability("delta", delta)
    sens = weighted_average_sensitivity(weights=c, low=low, high=high)
    rng_a = residual_range(weights=c, low=low, high=high)
    a_min, a_max = rng_a.minimum, rng_a.maximum
    gram = float(c @ c)

    def ratio(a: float) -> float:
        return (a + th / gram) / (a + th / (2.0 * gram))

    return LaplaceGaussianComparison(
        theta=th,
        sensitivity=sens,
        laplace_scale=math.sqrt(th / 2.0),
        laplace_fisher=2.0 / th,
        gaussian_fisher=1.0 / th,
        laplace_epsilon=laplace_epsilon_at_quality(theta=th, weights=c, low=low, high=high),
        laplace_epsilon_published=laplace_epsilon_at_quality(theta=th, weights=c, low=low, high=high,
                                                             reading="published"),
        gaussian_epsilon=gaussian_epsilon(delta=dlt, sigma=math.sqrt(th), sensitivity=sens),
        delta=dlt,
        residual_min=a_min,
        residual_max=a_max,
        ratio_min=ratio(a_max),
        ratio_max=ratio(a_min),
        kappa_published=1.0 / (1.0 + 2.0 * gram**2 * a_max / th),
        laplace_entropy_bits=math.log2(math.e * math.sqrt(2.0 * th)),
        gaussian_entropy_bits=0.5 * math.log2(2.0 * math.pi * math.e * th),
    )

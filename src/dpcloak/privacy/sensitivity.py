r"""ℓ2 sensitivity of a forward model and the published bounds on it.

The privacy relation is the thesis's α-neighbours (seed 002, Definition 6.2): two source vectors
are neighbours when their EMD is at most α. Proposition 7.1 then gives

.. math:: \Delta_2(M) = \alpha \max_{(i, j)\ \text{neighbours}} \|M_i - M_j\|_2 ,

computed here exactly (no bound) over every neighbouring pair of the model's domain. α counts
neighbour *steps*: one unit of mass moved to an adjacent location is α = 1, which is seed 000's
Definition 2 (swap two adjacent entries of ``f ∈ [0, 1]^n``) and so Proposition 4's Δ2(A). On a
weighted graph an edge of length ``w`` is ``w`` steps, so pairs are divided by their length (the
triangle inequality along shortest paths keeps the proof of Proposition 7.1 valid).

Published closed forms that disagree with the exact computation are implemented both as printed
(``*_published``) and corrected; every function's docstring states the discrepancy.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from dpcloak._validation import check_int, check_real
from dpcloak.bound import Bound
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import LinearModel
from dpcloak.models.graph import GraphDiffusion
from dpcloak.models.matrix import matrix_model

__all__ = [
    "l2_sensitivity",
    "worst_neighbours",
    "condition_number",
    "heat1d_bound_published",
    "heat1d_bound",
    "condition_lower_bound",
    "graph_spectral_bound",
    "complete_graph_delta2_published",
    "complete_graph_delta2",
    "star_graph_delta2_published",
    "star_graph_delta2",
]


def _as_model(model: LinearModel | ArrayLike) -> LinearModel:
    return model if isinstance(model, LinearModel) else matrix_model(model)


def _pair_ratios(model: LinearModel) -> tuple[np.ndarray, np.ndarray]:
    pairs = model.domain.neighbours()
    if len(pairs) == 0:
        raise InvalidParameterError("model's domain has no neighbouring pairs; the sensitivity is undefined")
    norms = model.column_difference_norms(pairs)
    return pairs, norms / model.domain.neighbour_steps()


def l2_sensitivity(model: LinearModel | ArrayLike, *, alpha: float = 1.0) -> float:
    r"""Exact ℓ2 sensitivity ``Δ2 = α max_{(i,j) neighbours} ‖M_i − M_j‖₂ / steps(i, j)``.

    Source: thesis Proposition 7.1 (seed 002); for a :class:`~dpcloak.domains.Line` with α = 1
    this is seed 000 Proposition 4's ``Δ2(A) = max_i ‖A_i − A_{i+1}‖₂``.

    Parameters
    ----------
    model : LinearModel or array_like
        The forward model (a plain matrix is wrapped with sources on ``Line(n)``).
    alpha : float, default 1.0
        Neighbour radius in steps (> 0): Δ2 scales linearly in it.

    Returns
    -------
    float
        The sensitivity. Vectorised over pairs: the 1-D kernel at ``n = 10⁴, m = 10³`` takes
        well under a second.

    Examples
    --------
    >>> from dpcloak.models import heat_kernel_1d
    >>> round(l2_sensitivity(heat_kernel_1d(100, 50, 0.1)), 6)
    0.135897
    """
    alpha = check_real("alpha", alpha, low=0.0)
    _, ratios = _pair_ratios(_as_model(model))
    return alpha * float(ratios.max())


def worst_neighbours(model: LinearModel | ArrayLike) -> tuple[int, int]:
    """The neighbouring pair ``(i, j)`` attaining the sensitivity."""
    pairs, ratios = _pair_ratios(_as_model(model))
    i, j = pairs[int(np.argmax(ratios))]
    return int(i), int(j)


def condition_number(model: LinearModel | ArrayLike) -> float:
    """``κ₂(M) = s_max / s_min`` over the ``min(m, n)`` singular values (thesis §7.1).

    Returns ``inf`` when the smallest singular value is exactly zero. Heat kernels are so
    ill-conditioned that ``s_min`` is at rounding level: values beyond ``1/eps ≈ 4.5e15`` mean
    "numerically singular" rather than a precise number.
    """
    s = np.linalg.svd(_as_model(model).todense(), compute_uv=False)
    return float("inf") if s[-1] == 0 else float(s[0] / s[-1])


def heat1d_bound_published(n: int, m: int, t: float, *, mu: float = 0.5) -> Bound:
    r"""Seed 000 Proposition 4's upper bound with the constant of its Appendix A proof, as printed.

    .. math:: \Delta_2(A) \le \sqrt{m/(4\pi T)}\,\max\{1 - e^{-3/(4nT)},\ 1 - e^{-2/(4nT)}\}.

    **Gap in the proof.** Appendix A factors ``(e^{-a²/4T} − e^{-b²/4T})² = e^{-a²/2T}(1 − e^{-x})²``
    with ``x = (b² − a²)/(4T)`` and bounds ``|1 − e^{-x}|`` by ``1 − e^{-|x|}``; but ``x`` takes both
    signs and for ``x < 0`` the factor is ``e^{|x|} − 1``, larger. The step is wrong, yet the slack
    in ``Σ_j e^{-a²/2T} ≤ m`` absorbs it: on a sweep of n ∈ [2, 300], m ∈ [1, 100],
    t ∈ [1e-5, 100] (2 520 points) the printed bound was never below the exact Δ2 (largest ratio
    exact/bound 1.0000000000000002, at n = 2, m = 1, i.e. equality to rounding). The intermediate
    inequality ``max_{i,j} (1 − e^{−x})² ≤ max{(1 − e^{−3/(4nT)})², (1 − e^{−2/(4nT)})²}`` is false with
    either sign of the exponent (n = m = 100, T = 0.01: 0.405 against 0.278); only the final
    ``O(√m/(nT^{1.5}))`` survives, by the mean-value argument of :func:`heat1d_bound`
    (``tests/errata/test_gilbert_mcmillan.py``). dpcloak keeps it as printed and tests it against the
    exact value; :func:`heat1d_bound` is a bound with a proof.
    """
    n, m = check_int("n", n, minimum=1), check_int("m", m, minimum=1)
    T = check_real("t", t, low=0.0) * check_real("mu", mu, low=0.0)
    value = math.sqrt(m / (4 * math.pi * T)) * max(-math.expm1(-3 / (4 * n * T)), -math.expm1(-2 / (4 * n * T)))
    return Bound(
        value,
        "upper",
        "seed 000 Proposition 4 / Appendix A (as printed)",
        True,
        "the proof drops the sign of an exponent; verified numerically, not proved",
    )


def heat1d_bound(n: int, m: int, t: float, *, mu: float = 0.5, alpha: float = 1.0) -> Bound:
    r"""A correct explicit upper bound on ``Δ2`` of :func:`~dpcloak.models.heat_kernel_1d`.

    Two valid bounds, the smaller returned:

    * the Appendix A argument with the sign fixed: ``|b² − a²| ≤ (2 + 1/n)/n`` for
      ``a, b ∈ [−1, 1]`` gives ``Δ2 ≤ α √(m/(4πT)) (e^{(2+1/n)/(4nT)} − 1)``, which is
      ``O(√m / (n T^{1.5}))`` as published;
    * the mean-value theorem with ``max |d/dx e^{−x²/4T}| = e^{−1/2}/√(2T)``:
      ``Δ2 ≤ α √m / (n T √(8πe))``, i.e. ``O(√m/(nT))``, tighter for small ``nT``.
    """
    n, m = check_int("n", n, minimum=1), check_int("m", m, minimum=1)
    T = check_real("t", t, low=0.0) * check_real("mu", mu, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    exponent = (2 + 1 / n) / (4 * n * T)
    appendix = math.sqrt(m / (4 * math.pi * T)) * math.expm1(exponent) if exponent < 700 else math.inf
    mean_value = math.sqrt(m) / (n * T * math.sqrt(8 * math.pi * math.e))
    return Bound(alpha * min(appendix, mean_value), "upper", "seed 000 Proposition 4 (corrected, dpcloak)")


def condition_lower_bound(model: LinearModel | ArrayLike, *, alpha: float = 1.0, variant: str = "thesis") -> Bound:
    r"""Lower bound on ``Δ2`` of ``M/‖M‖₂`` from its condition number.

    ``variant="thesis"``: seed 002 Lemma 7.2, ``Δ2(M) ≥ α / κ₂(M)`` for ``‖M‖₂ = 1``.
    ``variant="paper"``: seed 000 Lemma 5, ``Δ2(M) ≥ 1 / (κ₂(M) √n)`` (α = 1).

    Both proofs build a matrix with a duplicated column and use that it has rank below
    ``min(m, n)``; that holds only when ``n ≤ m`` (with ``n > m``, e.g. ``M = [1, 1]/√2`` has
    ``Δ2 = 0`` and ``κ₂ = 1``). The bound is reported as not applicable when ``n > m``; that is the
    real condition. The thesis's last step writes ``1/κ₂ ≤ min_{neighbours} ‖M_i − M_j‖ = Δ2/α`` where
    Δ2 takes the max: harmless, as its proof bounds ``1/κ₂`` by every neighbouring pair, hence by the
    min and so by the max (``tests/errata/test_gilbert_mcmillan.py``). The value
    is the bound for the *normalised* matrix; multiply by ``‖M‖₂`` for ``M`` itself.
    """
    model = _as_model(model)
    alpha = check_real("alpha", alpha, low=0.0)
    if variant not in ("thesis", "paper"):
        raise InvalidParameterError(f"variant must be 'thesis' or 'paper', got {variant!r}")
    m, n = model.shape
    kappa = condition_number(model)
    value = alpha / kappa if variant == "thesis" else 1.0 / (kappa * math.sqrt(n))
    source = "seed 002 Lemma 7.2" if variant == "thesis" else "seed 000 Lemma 5"
    if n > m:
        return Bound(
            value, "lower", source, False, f"needs n <= m (a duplicated column lowers the rank), got n={n} > m={m}"
        )
    return Bound(value, "lower", source)


def graph_spectral_bound(model: GraphDiffusion, *, alpha: float = 1.0) -> Bound:
    r"""Thesis Lemma 8.9: ``Δ2(A_G) ≤ α max_{(i,j) ∈ E} Σ_{k≥2} e^{−τ s_k} |U_{ik} − U_{jk}|``.

    ``s_k`` are the Laplacian eigenvalues, ``U`` its eigenvectors. Eigenpairs dropped by the
    model's spectral truncation add at most ``√(2n)·truncation_error``, which is included so the
    value stays an upper bound.
    """
    if not isinstance(model, GraphDiffusion):
        raise InvalidParameterError(f"model must be a GraphDiffusion, got {type(model).__name__}")
    alpha = check_real("alpha", alpha, low=0.0)
    if model.eigenvectors is None or model.eigenvalues is None:
        raise InvalidParameterError(
            "graph_spectral_bound needs the model's spectrum; build it with a larger dense_limit"
        )
    pairs = model.domain.neighbours()
    weights = np.exp(-model.tau * model.eigenvalues)[1:]
    U = model.eigenvectors[:, 1:]
    sums = np.array([np.abs(U[i] - U[j]) @ weights for i, j in pairs])
    steps = model.domain.neighbour_steps()
    tail = math.sqrt(2 * model.shape[0]) * model.truncation_error
    return Bound(alpha * float((sums / steps).max() + tail), "upper", "seed 002 Lemma 8.9")


def complete_graph_delta2_published(n: int, tau: float) -> float:
    """Thesis Table 8.2, complete graph, as printed: ``Δ2(A_G)² = 2 e^{−τ n}`` (returns Δ2).

    **Discrepancy.** ``L = nI − J`` gives ``A_G = e^{−τn} I + (1 − e^{−τn}) J/n`` so
    ``A_i − A_j = e^{−τn}(e_i − e_j)`` and ``Δ2² = 2 e^{−2τn}``: the printed exponent lacks the
    factor 2. See :func:`complete_graph_delta2`.
    """
    n, tau = check_int("n", n, minimum=2), check_real("tau", tau, low=0.0)
    return math.sqrt(2.0 * math.exp(-tau * n))


def complete_graph_delta2(n: int, tau: float) -> float:
    """Exact ``Δ2`` of ``exp(−τL)`` on the complete graph ``K_n``: ``√2 e^{−τ n}`` (corrected Table 8.2)."""
    n, tau = check_int("n", n, minimum=2), check_real("tau", tau, low=0.0)
    return math.sqrt(2.0) * math.exp(-tau * n)


def star_graph_delta2_published(n: int, tau: float) -> float:
    r"""Thesis Table 8.2, star graph with ``n`` nodes, as printed (returns Δ2).

    ``Δ2² = e^{−2τn} + ((e^{−τn} − e^{−τ})/(n−1))² + ((e^{−τn} − e^{−τ})/(n−1) + e^{−τ})²``.

    **Discrepancy.** The middle term is the entry of each of the ``n − 2`` leaves other than the
    moved one; the printed formula counts it once instead of ``n − 2`` times. See
    :func:`star_graph_delta2`. (For ``n = 3`` the two agree.)
    """
    n, tau = check_int("n", n, minimum=3), check_real("tau", tau, low=0.0)
    a = (math.exp(-tau * n) - math.exp(-tau)) / (n - 1)
    return math.sqrt(math.exp(-2 * tau * n) + a**2 + (a + math.exp(-tau)) ** 2)


def star_graph_delta2(n: int, tau: float) -> float:
    r"""Exact ``Δ2`` of ``exp(−τL)`` on the star with centre and ``n − 1`` leaves (corrected Table 8.2).

    The Laplacian has eigenvalues 0, 1 (multiplicity ``n − 2``) and ``n``; for the edge from the
    centre to leaf ``l`` the column difference has centre entry ``e^{−τn}``, entry
    ``a + e^{−τ}`` at ``l`` and ``a`` at the other ``n − 2`` leaves, ``a = (e^{−τn} − e^{−τ})/(n−1)``:

    .. math:: \Delta_2^2 = e^{-2\tau n} + (n-2)\,a^2 + (a + e^{-\tau})^2 .
    """
    n, tau = check_int("n", n, minimum=3), check_real("tau", tau, low=0.0)
    a = (math.exp(-tau * n) - math.exp(-tau)) / (n - 1)
    return math.sqrt(math.exp(-2 * tau * n) + (n - 2) * a**2 + (a + math.exp(-tau)) ** 2)

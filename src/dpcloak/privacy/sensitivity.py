r"""ℓ2 sensitivity of a forward model and the published bounds on it.

Two families of neighbouring relations, each with its unit stated:

**The thesis's α-neighbours** (McMillan's thesis, Definition 6.2): two source vectors are neighbours when
their EMD is at most α. Proposition 7.1 then gives

.. math:: \Delta_2(M) = \alpha \max_{(i, j)\ \text{neighbours}} \|M_i - M_j\|_2 / \ell(i, j),

computed here exactly (no bound) over every neighbouring pair of the model's domain
(:func:`l2_sensitivity`). α counts neighbour *steps* (``unit="steps"``): one unit of mass moved
to an adjacent location is α = 1, which is Gilbert & McMillan's Definition 2 (swap two adjacent entries of
``f ∈ [0, 1]^n``) and so Proposition 4's Δ2(A). On a domain whose pairs have lengths (a graph
with edge ``length`` in metres, :class:`~dpcloak.domains.Sites`) α must come with its unit:
``unit="m"`` divides each pair by its length ``ℓ(i, j)`` (the triangle inequality along shortest
paths keeps the proof of Proposition 7.1 valid) and ``unit="hops"`` counts every edge as one step;
a bare α is refused there, because "α = 1" silently meaning one metre gave σ ≈ 0.06 people.

**Counts of people** (:class:`Relation`, :func:`relation_sensitivity`): the source vector counts
people per location, and neighbours differ by *one person moved by up to α metres (or hops)*,
or by one person added or removed. The released difference is then exactly a column difference
``M_i − M_j`` (or one column ``M_i``), so

.. math:: \Delta_2 = \max_{d(i, j) \le \alpha} \|M_i - M_j\|_2 \quad\text{or}\quad
          \Delta_2 = \max_i \|M_i\|_2 ,

in reading units, attained (hence exact, not a bound) by any count vector with a person at ``i``.

Published closed forms that disagree with the exact computation are implemented both as printed
(``*_published``) and corrected; every function's docstring states the discrepancy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._lazy import is_instance
from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.bound import Bound
from dpcloak.domains.base import Domain
from dpcloak.domains.sites import Sites, closest_pair
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import LinearModel
from dpcloak.models.matrix import matrix_model

if TYPE_CHECKING:
    from dpcloak.domains.graph import GraphDomain
    from dpcloak.models.graph import GraphDiffusion

__all__ = [
    "ALPHA_UNITS",
    "PAIR_TOLERANCE",
    "RELATION_KINDS",
    "RELATION_UNITS",
    "Relation",
    "relation_sensitivity",
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

#: Units of the thesis relation's α: neighbour steps, graph hops, or the pairs' lengths in metres.
ALPHA_UNITS = ("steps", "hops", "m")


def _as_model(model: LinearModel | ArrayLike) -> LinearModel:
    return model if isinstance(model, LinearModel) else matrix_model(model)


def _is_graph(domain: Domain) -> TypeGuard[GraphDomain]:
    return is_instance(domain, "dpcloak.domains.graph", "GraphDomain")


def _has_lengths(domain: Domain) -> bool:
    return isinstance(domain, Sites) or (_is_graph(domain) and domain.has_lengths)


def _steps(domain: Domain, unit: str | None) -> NDArray[np.float64]:
    """Length of each neighbouring pair in α's unit (see the module docstring)."""
    if unit is not None:
        check_choice("unit", unit, ALPHA_UNITS)
    if _has_lengths(domain):
        if unit is None:
            raise InvalidParameterError(
                f"alpha needs its unit on a {type(domain).__name__} whose pairs have lengths: unit='m' (alpha in the "
                "lengths' unit, e.g. metres)" + (" or unit='hops' (every edge one step)" if _is_graph(
                    domain) else ""),
                parameter="unit"
            )
        if unit == "m":
            return domain.neighbour_steps()
        if isinstance(domain, Sites) or unit == "steps":
            raise InvalidParameterError(f"unit must be 'm' for this {type(domain).__name__} with lengths, got {unit!r}",
                                        parameter="unit")
        return np.ones(len(domain.neighbours()))
    if unit == "m":
        raise InvalidParameterError(
            f"unit='m' needs pairs with lengths in metres, but this {type(domain).__name__} has none; use "
            "unit='steps', or relation_sensitivity with Relation.move(alpha, unit='m') on coordinates", parameter="unit"
        )
    return domain.neighbour_steps()


def _pair_ratios(model: LinearModel, unit: str | None) -> tuple[np.ndarray, np.ndarray]:
    pairs = model.domain.neighbours()
    if len(pairs) == 0:
        raise InvalidParameterError("model's domain has no neighbouring pairs; the sensitivity is undefined",
                                    parameter="model")
    steps = _steps(model.domain, unit)
    norms = model.column_difference_norms(pairs)
    return pairs, norms / steps


def l2_sensitivity(model: LinearModel | ArrayLike, *, alpha: float = 1.0, unit: str | None = None) -> float:
    r"""Exact ℓ2 sensitivity ``Δ2 = α max_{(i,j) neighbours} ‖M_i − M_j‖₂ / ℓ(i, j)`` (thesis α-neighbours).

    Source: McMillan's thesis, Proposition 7.1; for a :class:`~dpcloak.domains.Line` with α = 1
    this is Gilbert & McMillan Proposition 4's ``Δ2(A) = max_i ‖A_i − A_{i+1}‖₂``.

    Parameters
    ----------
    model : LinearModel or array_like
        The forward model (a plain matrix is wrapped with sources on ``Line(n)``).
    alpha : float, default 1.0
        Neighbour radius in ``unit`` (> 0): Δ2 scales linearly in it.
    unit : {"steps", "hops", "m"}, optional
        α's unit. Optional (meaning steps) on domains without lengths (Line, Grid, an unweighted
        graph); required on a graph whose edges carry ``length`` (``"m"`` or ``"hops"``) and on
        :class:`~dpcloak.domains.Sites` (``"m"``).

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
    _, ratios = _pair_ratios(_as_model(model), unit)
    return alpha * float(ratios.max())


def worst_neighbours(model: LinearModel | ArrayLike, *, unit: str | None = None) -> tuple[int, int]:
    """The neighbouring pair ``(i, j)`` attaining the sensitivity (``unit`` as in :func:`l2_sensitivity`).

    Examples
    --------
    >>> worst_neighbours([[1.0, 0.0, 0.0], [0.0, 1.0, 3.0]])  # columns 1 and 2 differ most
    (1, 2)
    """
    pairs, ratios = _pair_ratios(_as_model(model), unit)
    i, j = pairs[int(np.argmax(ratios))]
    return int(i), int(j)


def condition_number(model: LinearModel | ArrayLike) -> float:
    """``κ₂(M) = s_max / s_min`` over the ``min(m, n)`` singular values (thesis §7.1).

    Returns ``inf`` when the smallest singular value is exactly zero. Heat kernels are so
    ill-conditioned that ``s_min`` is at rounding level: values beyond ``1/eps ≈ 4.5e15`` mean
    "numerically singular" rather than a precise number.

    Examples
    --------
    >>> condition_number([[2.0, 0.0], [0.0, 0.5]])
    4.0
    """
    s = np.linalg.svd(_as_model(model).todense(), compute_uv=False)
    return float("inf") if s[-1] == 0 else float(s[0] / s[-1])


def heat1d_bound_published(n: int, m: int, t: float, *, mu: float = 0.5) -> Bound:
    r"""Gilbert & McMillan Proposition 4's upper bound with the constant of its Appendix A proof, as printed.

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

    Examples
    --------
    The printed bound holds on this example but is only verified numerically (its proof drops a sign):

    >>> from dpcloak.models import heat_kernel_1d
    >>> from dpcloak.privacy import l2_sensitivity
    >>> b = heat1d_bound_published(20, 10, 0.1)
    >>> round(b.value, 4), b.kind
    (2.105, 'upper')
    >>> bool(l2_sensitivity(heat_kernel_1d(20, 10, 0.1)) <= b.value)
    True
    """
    n, m = check_int("n", n, minimum=1), check_int("m", m, minimum=1)
    T = check_real("t", t, low=0.0) * check_real("mu", mu, low=0.0)
    value = math.sqrt(m / (4 * math.pi * T)) * max(-math.expm1(-3 / (4 * n * T)), -math.expm1(-2 / (4 * n * T)))
    return Bound(
        value,
        "upper",
        "Gilbert & McMillan Proposition 4 / Appendix A (as printed)",
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

    Examples
    --------
    >>> from dpcloak.models import heat_kernel_1d
    >>> from dpcloak.privacy import l2_sensitivity
    >>> b = heat1d_bound(20, 10, 0.1)
    >>> round(b.value, 4), b.source
    (0.3826, 'Gilbert & McMillan Proposition 4 (corrected, dpcloak)')
    >>> exact = l2_sensitivity(heat_kernel_1d(20, 10, 0.1))
    >>> bool(exact <= b.value)
    True
    """
    n, m = check_int("n", n, minimum=1), check_int("m", m, minimum=1)
    T = check_real("t", t, low=0.0) * check_real("mu", mu, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0)
    exponent = (2 + 1 / n) / (4 * n * T)
    appendix = math.sqrt(m / (4 * math.pi * T)) * math.expm1(exponent) if exponent < 700 else math.inf
    mean_value = math.sqrt(m) / (n * T * math.sqrt(8 * math.pi * math.e))
    return Bound(alpha * min(appendix, mean_value), "upper", "Gilbert & McMillan Proposition 4 (corrected, dpcloak)")


def condition_lower_bound(model: LinearModel | ArrayLike, *, alpha: float = 1.0, variant: str = "thesis") -> Bound:
    r"""Lower bound on ``Δ2`` of ``M/‖M‖₂`` from its condition number.

    ``variant="thesis"``: McMillan's thesis Lemma 7.2, ``Δ2(M) ≥ α / κ₂(M)`` for ``‖M‖₂ = 1``.
    ``variant="paper"``: Gilbert & McMillan Lemma 5, ``Δ2(M) ≥ 1 / (κ₂(M) √n)`` (α = 1).

    Both proofs build a matrix with a duplicated column and use that it has rank below
    ``min(m, n)``; that holds only when ``n ≤ m`` (with ``n > m``, e.g. ``M = [1, 1]/√2`` has
    ``Δ2 = 0`` and ``κ₂ = 1``). The bound is reported as not applicable when ``n > m``; that is the
    real condition. The thesis's last step writes ``1/κ₂ ≤ min_{neighbours} ‖M_i − M_j‖ = Δ2/α`` where
    Δ2 takes the max: harmless, as its proof bounds ``1/κ₂`` by every neighbouring pair, hence by the
    min and so by the max (``tests/errata/test_gilbert_mcmillan.py``). The value
    is the bound for the *normalised* matrix; multiply by ``‖M‖₂`` for ``M`` itself.

    Examples
    --------
    >>> import numpy as np
    >>> M = np.array([[1.0, 0.0], [0.0, 0.5], [0.0, 0.0]])
    >>> b = condition_lower_bound(M)  # 1/κ₂ = 0.5 for the normalised matrix
    >>> b.value, b.kind, b.applies
    (0.5, 'lower', True)
    >>> condition_lower_bound(M.T).applies  # n > m: the proof's rank argument fails
    False
    """
    model = _as_model(model)
    alpha = check_real("alpha", alpha, low=0.0)
    if variant not in ("thesis", "paper"):
        raise InvalidParameterError(f"variant must be 'thesis' or 'paper', got {variant!r}", parameter="variant")
    m, n = model.shape
    kappa = condition_number(model)
    value = alpha / kappa if variant == "thesis" else 1.0 / (kappa * math.sqrt(n))
    source = "McMillan's thesis Lemma 7.2" if variant == "thesis" else "Gilbert & McMillan Lemma 5"
    if n > m:
        return Bound(
            value, "lower", source, False, f"needs n <= m (a duplicated column lowers the rank), got n={n} > m={m}"
        )
    return Bound(value, "lower", source)


def graph_spectral_bound(model: GraphDiffusion, *, alpha: float = 1.0, unit: str | None = None) -> Bound:
    r"""Thesis Lemma 8.9: ``Δ2(A_G) ≤ α max_{(i,j) ∈ E} Σ_{k≥2} e^{−τ s_k} |U_{ik} − U_{jk}|``.

    ``s_k`` are the Laplacian eigenvalues, ``U`` its eigenvectors. Eigenpairs dropped by the
    model's spectral truncation add at most ``√(2n)·truncation_error``, which is included so the
    value stays an upper bound. ``unit`` as in :func:`l2_sensitivity`.

    Examples
    --------
    >>> import networkx as nx
    >>> from dpcloak.models import graph_diffusion
    >>> from dpcloak.privacy import l2_sensitivity
    >>> model = graph_diffusion(nx.path_graph(5), tau=0.5)
    >>> b = graph_spectral_bound(model)
    >>> round(b.value, 4), bool(l2_sensitivity(model) <= b.value)
    (0.9228, True)
    """
    if not is_instance(model, "dpcloak.models.graph", "GraphDiffusion"):
        raise InvalidParameterError(f"model must be a GraphDiffusion, got {type(model).__name__}", parameter="model")
    alpha = check_real("alpha", alpha, low=0.0)
    if model.eigenvectors is None or model.eigenvalues is None:
        raise InvalidParameterError(
            "graph_spectral_bound needs the model's spectrum; build it with a larger dense_limit",
            parameter="model"
        )
    pairs = model.domain.neighbours()
    weights = np.exp(-model.tau * model.eigenvalues)[1:]
    U = model.eigenvectors[:, 1:]
    sums = np.array([np.abs(U[i] - U[j]) @ weights for i, j in pairs])
    steps = _steps(model.domain, unit)
    tail = math.sqrt(2 * model.shape[0]) * model.truncation_error
    return Bound(alpha * float((sums / steps).max() + tail), "upper", "McMillan's thesis Lemma 8.9")


def complete_graph_delta2_published(n: int, tau: float) -> float:
    """Thesis Table 8.2, complete graph, as printed: ``Δ2(A_G)² = 2 e^{−τ n}`` (returns Δ2).

    **Discrepancy.** ``L = nI − J`` gives ``A_G = e^{−τn} I + (1 − e^{−τn}) J/n`` so
    ``A_i − A_j = e^{−τn}(e_i − e_j)`` and ``Δ2² = 2 e^{−2τn}``: the printed exponent lacks the
    factor 2. See :func:`complete_graph_delta2`.

    Examples
    --------
    The printed value exceeds the exact one (:func:`complete_graph_delta2`), its exponent lacks a factor 2:

    >>> round(complete_graph_delta2_published(4, 0.5), 6), round(complete_graph_delta2(4, 0.5), 6)
    (0.52026, 0.191393)
    """
    n, tau = check_int("n", n, minimum=2), check_real("tau", tau, low=0.0)
    return math.sqrt(2.0 * math.exp(-tau * n))


def complete_graph_delta2(n: int, tau: float) -> float:
    """Exact ``Δ2`` of ``exp(−τL)`` on the complete graph ``K_n``: ``√2 e^{−τ n}`` (corrected Table 8.2).

    Examples
    --------
    Checked against the sensitivity of the matrix ``exp(−τL)`` itself:

    >>> import networkx as nx
    >>> from dpcloak.models import graph_diffusion
    >>> from dpcloak.privacy import l2_sensitivity
    >>> exact = l2_sensitivity(graph_diffusion(nx.complete_graph(4), tau=0.5))
    >>> round(complete_graph_delta2(4, 0.5), 6), round(exact, 6)
    (0.191393, 0.191393)
    """
    n, tau = check_int("n", n, minimum=2), check_real("tau", tau, low=0.0)
    return math.sqrt(2.0) * math.exp(-tau * n)


def star_graph_delta2_published(n: int, tau: float) -> float:
    r"""Thesis Table 8.2, star graph with ``n`` nodes, as printed (returns Δ2).

    ``Δ2² = e^{−2τn} + ((e^{−τn} − e^{−τ})/(n−1))² + ((e^{−τn} − e^{−τ})/(n−1) + e^{−τ})²``.

    **Discrepancy.** The middle term is the entry of each of the ``n − 2`` leaves other than the
    moved one; the printed formula counts it once instead of ``n − 2`` times. See
    :func:`star_graph_delta2`. (For ``n = 3`` the two agree.)

    Examples
    --------
    The printed formula agrees with the exact one for ``n = 3`` only:

    >>> round(star_graph_delta2_published(3, 0.5), 6) == round(star_graph_delta2(3, 0.5), 6)
    True
    >>> round(star_graph_delta2_published(6, 0.5), 6), round(star_graph_delta2(6, 0.5), 6)
    (0.509983, 0.545232)
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

    Examples
    --------
    Checked against the sensitivity of the matrix ``exp(−τL)`` itself:

    >>> import networkx as nx
    >>> from dpcloak.models import graph_diffusion
    >>> from dpcloak.privacy import l2_sensitivity
    >>> exact = l2_sensitivity(graph_diffusion(nx.star_graph(5), tau=0.5))  # centre and 5 leaves
    >>> round(star_graph_delta2(6, 0.5), 6), round(exact, 6)
    (0.545232, 0.545232)
    """
    n, tau = check_int("n", n, minimum=3), check_real("tau", tau, low=0.0)
    a = (math.exp(-tau * n) - math.exp(-tau)) / (n - 1)
    return math.sqrt(math.exp(-2 * tau * n) + (n - 2) * a**2 + (a + math.exp(-tau)) ** 2)


RELATION_KINDS = ("move", "add-remove", "move-or-add-remove")
RELATION_UNITS = ("m", "hops")


@dataclass(frozen=True)
class Relation:
    """Neighbouring count vectors: one person moved by up to ``alpha`` (in ``unit``), or added/removed.

    Parameters
    ----------
    kind : {"move", "add-remove", "move-or-add-remove"}
        ``"move"``: one person moved from location ``i`` to ``j`` with ``d(i, j) ≤ alpha`` (the exact
        distance, rounded outward by :data:`PAIR_TOLERANCE` so that no pair at its own computed
        distance is dropped);
        ``"add-remove"``: one person added or removed; ``"move-or-add-remove"``: either.
    alpha : float, optional
        The move radius (> 0) for the move kinds; ``None`` for ``"add-remove"``.
    unit : {"m", "hops"}, optional
        α's unit for the move kinds: metres (Euclidean distance between the locations'
        coordinates — "as the crow flies", which covers every route — or shortest paths in edge
        ``length`` for a graph without positions) or hops (edges of the domain's neighbour graph).

    Examples
    --------
    >>> Relation.move(50.0).describe()
    'one person moved by up to 50 m'

    >>> Relation.add_remove().describe()
    'one person added or removed'
    >>> Relation.move(50.0).to_dict()
    {'kind': 'move', 'alpha': 50.0, 'unit': 'm'}
    """

    kind: str
    alpha: float | None = None
    unit: str | None = None

    def __post_init__(self) -> None:
        check_choice("relation kind", self.kind, RELATION_KINDS)
        if self.kind == "add-remove":
            if self.alpha is not None or self.unit is not None:
                raise InvalidParameterError(
                    f"the add-remove relation takes no alpha or unit, got alpha={self.alpha!r}, unit={self.unit!r}",
                    parameter="alpha", allowed="none", got=self.alpha
                )
            return
        if self.unit is None:
            raise InvalidParameterError(
                f"relation unit must be given for alpha: 'm' or 'hops', got alpha={self.alpha!r} without a unit",
                parameter="relation"
            )
        check_choice("relation unit", self.unit, RELATION_UNITS)
        object.__setattr__(self, "alpha", check_real("relation alpha", self.alpha, low=0.0))

    @classmethod
    def move(cls, alpha: float, unit: str = "m") -> Relation:
        """One person moved by up to ``alpha`` ``unit``."""
        return cls("move", alpha, unit)

    @classmethod
    def add_remove(cls) -> Relation:
        """One person added or removed."""
        return cls("add-remove")

    def describe(self) -> str:
        """The relation in words, with α's unit."""
        if self.kind == "add-remove":
            return "one person added or removed"
        moved = f"one person moved by up to {self.alpha:g} {self.unit}"
        return moved if self.kind == "move" else f"{moved}, or added or removed"

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", "alpha", "unit"}`` (``None`` where unused)."""
        return {"kind": self.kind, "alpha": self.alpha, "unit": self.unit}


def _hop_distances(domain: Domain) -> NDArray[np.float64]:
    if _is_graph(domain):
        return domain.hop_distances()
    if isinstance(domain, Sites):
        raise InvalidParameterError("a hop relation needs a graph or grid; Sites have no edges, use unit='m'",
                                    parameter="unit", allowed="m")
    import scipy.sparse as sp
    from scipy.sparse.csgraph import shortest_path

    pairs = domain.neighbours()
    adj = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(domain.size, domain.size))
    return np.asarray(shortest_path(adj.tocsr(), directed=False, unweighted=True))


#: A move relation's pairs reach this far (relative) beyond α: eight units in the last place, more than any
#: computed distance (``hypot``, ``norm``, ``sqrt`` of a sum) is off from the exact one, so a pair at its own
#: computed distance α is never dropped. Only pairs are added by it, which can only raise Δ2.
PAIR_TOLERANCE = Fraction(1, 2**50)
#: Relative slack of the floating-point pre-selection of pairs: far above a computed distance's error.
_PAIR_SLACK = 2.0**-40


def _euclidean_within(coords: NDArray[np.float64], pairs: NDArray[np.intp], alpha: float) -> NDArray[np.bool_]:
    """Which ``pairs`` lie at exact Euclidean distance ≤ ``α (1 + PAIR_TOLERANCE)`` (fractions on float coordinates).

    A computed distance more than the slack away from α decides on its own (its error is a few ulps);
    the rest, and any non-finite one, are decided by ``Σ (x_i − x_j)² ≤ (α (1 + 2⁻⁵⁰))²`` in exact
    rational arithmetic.
    """
    diff = coords[pairs[:, 0]] - coords[pairs[:, 1]]
    with np.errstate(over="ignore"):
        dist = np.sqrt(np.sum(diff * diff, axis=1))
    keep = dist <= alpha * (1.0 - _PAIR_SLACK)
    unsure = ~keep & ~(dist > alpha * (1.0 + _PAIR_SLACK) + 1e-300)
    unsure |= ~np.isfinite(dist)
    bound = (Fraction(alpha) * (1 + PAIR_TOLERANCE)) ** 2
    for k in np.flatnonzero(unsure):
        a, b = coords[pairs[k, 0]].tolist(), coords[pairs[k, 1]].tolist()
        gap = [Fraction(u) - Fraction(v) for u, v in zip(a, b, strict=True)]
        keep[k] = sum(g * g for g in gap) <= bound
    return keep


def _pairs_within(domain: Domain, alpha: float, unit: str) -> NDArray[np.intp]:
    """Every location pair ``i < j`` whose exact distance is ≤ α; refuses an α that admits no pair.

    Rounded outward: Euclidean distances (``unit="m"`` with coordinates) are decided exactly on the
    float coordinates against ``α (1 + PAIR_TOLERANCE)`` (:func:`_euclidean_within`); hop counts are
    exact integers. Shortest paths in edge ``length`` (a
    graph without positions) are float sums of at most ``n − 1`` lengths, each addition off by at
    most ``2⁻⁵³`` relative, so a path whose exact length is ≤ α is computed ≤ ``α (1 + n 2⁻⁵²)``:
    every pair up to that bound is included (rounded outward: an extra pair can only raise Δ2).
    """
    coords = domain.coordinates() if unit == "m" else None
    if domain.size < 2:
        raise InvalidParameterError("the move relation needs at least 2 source locations",
                                    parameter="model", allowed="at least 2 source locations")
    if unit == "m" and coords is not None and coords.shape[1] > 1:
        from scipy.spatial import cKDTree

        reach = alpha * (1.0 + _PAIR_SLACK) + 1e-300
        found = np.asarray(cKDTree(coords).query_pairs(r=reach, output_type="ndarray"), dtype=np.intp).reshape(-1, 2)
        pairs = found[_euclidean_within(coords, found, alpha)]
        smallest = closest_pair(coords)[2] if len(pairs) == 0 else alpha
    else:
        if unit == "m" and not _has_lengths(domain):
            raise InvalidParameterError(
                f"unit='m' needs source coordinates or edge lengths in metres; this {type(domain).__name__} has "
                "neither (use unit='hops')", parameter="unit"
            )
        dist = domain.distances() if unit == "m" else _hop_distances(domain)
        reach = alpha * (1.0 + domain.size * 2.0**-52) if unit == "m" else alpha
        i, j = np.nonzero(np.triu(dist <= reach, k=1))
        pairs = np.stack([i, j], axis=1).astype(np.intp)
        smallest = float(dist[np.triu_indices(domain.size, k=1)].min())
    if len(pairs) == 0:
        raise InvalidParameterError(
            f"relation alpha={alpha:g} {unit} is smaller than the smallest distance between two source locations "
            f"({smallest:.6g} {unit}): no move is possible, so the relation would protect nothing; choose alpha >= "
            f"{smallest!r} {unit} or the add-remove relation", parameter="relation"
        )
    return pairs


def _column_norms(model: LinearModel, chunk: int = 1024) -> NDArray[np.float64]:
    n = model.shape[1]
    out = np.empty(n)
    for start in range(0, n, chunk):
        idx = np.arange(start, min(n, start + chunk), dtype=np.intp)
        out[idx] = np.linalg.norm(model.columns(idx), axis=0)
    return out


def relation_sensitivity(model: LinearModel, relation: Relation) -> float:
    r"""Exact ℓ2 sensitivity of ``y = M f`` for count vectors ``f`` under ``relation`` (module docstring).

    ``"move"``: ``max_{i<j, d(i,j) ≤ α} ‖M_i − M_j‖₂``; ``"add-remove"``: ``max_i ‖M_i‖₂``;
    ``"move-or-add-remove"``: the larger of the two. In reading units per person.

    Raises
    ------
    InvalidParameterError
        α smaller than the smallest distance between two source locations (no move possible: the
        relation would give Δ2 = 0 and protect nothing), or a unit the domain cannot measure.

    Examples
    --------
    >>> from dpcloak.models import matrix_model
    >>> from dpcloak.domains import Sites
    >>> M = matrix_model([[1.0, 0.5, 0.0], [0.0, 0.5, 1.0]], Sites([[0, 0], [10, 0], [20, 0]]))
    >>> round(relation_sensitivity(M, Relation.move(10.0)), 6)   # neighbours 10 m apart
    0.707107
    >>> relation_sensitivity(M, Relation.add_remove())
    1.0
    """
    if not isinstance(model, LinearModel):
        raise InvalidParameterError(f"model must be a LinearModel, got {type(model).__name__}", parameter="model")
    if not isinstance(relation, Relation):
        raise InvalidParameterError(f"relation must be a Relation, got {type(relation).__name__}", parameter="relation")
    values = []
    if relation.kind != "add-remove":
        assert relation.alpha is not None and relation.unit is not None  # validated by Relation
        pairs = _pairs_within(model.domain, relation.alpha, relation.unit)
        values.append(float(model.column_difference_norms(pairs).max()))
    if relation.kind != "move":
        values.append(float(_column_norms(model).max()))
    return max(values)

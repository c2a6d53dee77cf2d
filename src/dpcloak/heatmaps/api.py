"""Front end: points (or a DataFrame) in, one normalised private heatmap out.

``private_heatmap`` runs per-user bounding → Algorithm 1 → RECONSTRUCT (Ghazi et al.); ``laplace_baseline``
runs per-user bounding → the [LXD+19] baseline. Both return :class:`HeatmapResult`.

Every front end defaults to ``noise="secure"``: exact discrete Laplace on the 2^-36 fixed-point grid
drawn from the OS CSPRNG, immune to the floating-point attack of Mironov (2012), same ε
(:mod:`dpcloak.heatmaps.aggregate`). A seed or Generator is refused with ``"secure"`` unless the caller
opts into ``simulation=True`` (:func:`~dpcloak.heatmaps.release.release_randomness`).
``noise="float"`` (numpy Laplace) is an explicit choice for experiments and simulation; its
guarantee says that it holds for idealised real-valued noise only.

What a :class:`HeatmapResult` releases is the DP aggregate and public parameters; the exact number of
users and points and the stage timings are in its ``curator`` field
(:class:`~dpcloak.heatmaps.release.CuratorDiagnostics`), labelled not private.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike
from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.aggregate import (
    check_aggregate,
    coarsen_aggregate,
    hierarchical_laplace,
    laplace_description,
    noise_randomness,
    noisy_user_count,
    user_level_guarantee,
)
from dpcloak.heatmaps.baselines import laplace_cells
from dpcloak.heatmaps.data import UserAggregate, bound_users, check_resolution
from dpcloak.heatmaps.errorbars import EmdErrorBar, emd_error_bar
from dpcloak.heatmaps.extent import Extent
from dpcloak.heatmaps.parameters import COUNT_SHARE, pyramid_parameters
from dpcloak.heatmaps.reconstruct import reconstruct
from dpcloak.heatmaps.release import CuratorDiagnostics, release_randomness
from dpcloak.heatmaps.render import render_layers
from dpcloak.privacy.accounting import split_epsilon, total_epsilon
from dpcloak.privacy.mechanisms import PrivacyGuarantee

__all__ = [
    "METHODS",
    "HeatmapResult",
    "private_heatmap",
    "laplace_baseline",
    "heatmap_from_aggregate",
    "heatmap_from_frame",
    "normalize",
]

METHODS = ("pyramid", "laplace", "dense")


@dataclass(frozen=True)
class HeatmapResult:
    """A released heatmap aggregate, and apart from it the curator's (non-private) diagnostics.

    Attributes
    ----------
    aggregate : ndarray, shape (Δ, Δ)
        â ≥ 0 with Σ â = 1 (rows are y, columns x): the DP output.
    method : str
        ``"pyramid"`` (Algorithms 1–2), ``"laplace"`` ([LXD+19] baseline) or ``"dense"`` (Appendix D).
    epsilon : float
        Total ε spent.
    resolution : int
        Δ (public).
    noise : {"secure", "float"}
        How the noise was drawn.
    privacy : PrivacyGuarantee
        What :meth:`guarantee` returns.
    parameters : mapping
        The method's public parameters (w, γ, q, per-level ε_i; top_percent; population or ε_count).
    details : mapping
        Numbers derived from the DP output only (post-processing): LP size and objective, cells kept,
        the coarse resolution and the noisy user count of the dense method.
    degenerate : bool
        True when the private estimate was all zero and the uniform distribution was returned.
    curator : CuratorDiagnostics
        **Not private**: exact n_users, n_points and timings, for the data holder only; not part of
        the release.
    extent : Extent or None
        The public extent the grid covers (metres, :mod:`dpcloak.heatmaps.extent`); ``None``: [0, 1)².
    layers : tuple of (int, ndarray)
        ``aggregate`` split by the block size it was estimated at: (block side in cells, masses spread
        uniformly over those blocks); the layers sum to ``aggregate``. Used by :meth:`render`.
    error_bar : EmdErrorBar or None
        The release's calibrated EMD error bar (:mod:`~dpcloak.heatmaps.errorbars`; post-processing, no
        privacy budget), when asked for with ``error_bar_draws``; in :meth:`public_summary`.

    Examples
    --------
    >>> result = private_heatmap([0, 0, 1, 2], [0.1, 0.2, 0.6, 0.9], [0.1, 0.2, 0.6, 0.9], epsilon=1.0, resolution=8,
    ...                          w=20)
    >>> isinstance(result, HeatmapResult), result.aggregate.shape, round(float(result.aggregate.sum()), 12)
    (True, (8, 8), 1.0)
    >>> summary = result.public_summary()  # what may be published next to the aggregate
    >>> summary["method"], summary["epsilon"], summary["levels"]
    ('pyramid', 1.0, [2, 3])
    >>> result.render(sigma=0.05).shape
    (8, 8)
    """

    aggregate: NDArray[np.float64]
    method: str
    epsilon: float
    resolution: int
    noise: str
    privacy: PrivacyGuarantee
    parameters: Mapping[str, Any]
    curator: CuratorDiagnostics
    degenerate: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    extent: Extent | None = None
    layers: tuple[tuple[int, NDArray[np.float64]], ...] = ()
    error_bar: EmdErrorBar | None = None

    def guarantee(self) -> PrivacyGuarantee:
        """ε-DP under add/remove-one-user (see the method's docstring)."""
        return self.privacy

    def public_summary(self) -> dict[str, Any]:
        """The release's public parameters and guarantee (JSON-ready); nothing computed from the exact data."""
        g = self.privacy
        return {
            "method": self.method, "noise": self.noise, "resolution": self.resolution, "kind": g.kind,
            "epsilon": g.epsilon, "delta": g.delta, "neighbouring": g.neighbouring, "mechanism": g.mechanism,
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in self.parameters.items()},
            **({} if self.extent is None else
               {**self.extent.summary(), "cell_size_m": self.extent.cell_size(self.resolution)}),
            **({} if self.error_bar is None else self.error_bar.summary()),
        }

    def render(self, *, sigma: float) -> NDArray[np.float64]:
        """The released aggregate rendered without the pyramid's blocks (``render_layers``, :mod:`~.render`).

        Each block's mass is smoothed at its own scale: H^σ_j with σ_j = √(σ² + (b_j/(2Δ))²) for blocks of
        b_j cells; the finest cells get H^σ (§2.3). Mass-preserving, post-processing of the DP output.
        """
        return render_layers(self.layers or ((1, self.aggregate),), sigma=sigma)


def normalize(estimate: NDArray[np.float64]) -> tuple[NDArray[np.float64], bool]:
    """Clip at 0 and scale to sum 1; an all-zero estimate becomes uniform (flagged degenerate).

    Examples
    --------
    >>> import numpy as np
    >>> p, degenerate = normalize(np.array([[3.0, -1.0], [1.0, 0.0]]))
    >>> p.tolist(), degenerate
    ([[0.75, 0.0], [0.25, 0.0]], False)
    >>> p, degenerate = normalize(np.zeros((2, 2)))
    >>> p.tolist(), degenerate
    ([[0.25, 0.25], [0.25, 0.25]], True)
    """
    est = np.maximum(estimate, 0.0)
    total = float(est.sum())
    if not total > 0.0:
        return np.full(est.shape, 1.0 / est.size), True
    return est / total, False


def _check_common(epsilon: float, resolution: int) -> None:
    check_real("epsilon", epsilon, low=0.0)
    check_resolution(resolution)


def heatmap_from_aggregate(
    aggregate: UserAggregate,
    *,
    method: str = "pyramid",
    epsilon: float,
    w: int | None = None,
    gamma: float = 2**-0.5,
    top_percent: float | None = None,
    population: float | None = None,
    extent: Extent | None = None,
    rng: RngLike = None,
    timings: Mapping[str, float] | None = None,
    noise: str = "secure",
    simulation: bool = False,
    error_bar_draws: int = 0,
) -> HeatmapResult:
    """Release a heatmap from an already bounded aggregate (used by every front end and the experiments).

    Parameters
    ----------
    aggregate : UserAggregate
        Output of :func:`~dpcloak.heatmaps.data.bound_users` (or the Dask path).
    method : {"pyramid", "laplace", "dense"}
        Algorithm 1 + RECONSTRUCT, the [LXD+19] baseline, or Appendix D's dense algorithm.
    epsilon : float
        ε > 0.
    w, gamma : int or None, float
        Parameters of the pyramid method. ``w=None``: w and the measured levels are chosen by the rule of
        :func:`~dpcloak.heatmaps.parameters.pyramid_parameters` from ε, Δ and ``population``, or, without
        it, from a noisy user count that spends :data:`~dpcloak.heatmaps.parameters.COUNT_SHARE` = 1/10
        of ε (``parameters`` states the rule, ``count_epsilon`` and the noisy count).
    top_percent : float or None
        Threshold of the baseline (``None``: plain baseline).
    population : float or None
        A **public** estimate of the number of users (never the data's own count). pyramid: feeds the
        parameter rule at no cost in ε. dense: fixes the coarse grid; ``None`` spends 10 % of ε on a noisy count instead
        (:func:`~dpcloak.heatmaps.dense.dense_aggregate`).
    extent : Extent or None
        The public extent the aggregate's grid covers (cell size in metres in the summary, axes).
    rng : Generator, int or None
        Randomness (see ``noise``).
    timings : mapping, optional
        Earlier stage timings to merge into the curator's diagnostics (e.g. ``bound``).
    noise : {"secure", "float"}
        ``"secure"`` (default): exact discrete Laplace on the 2^-36 grid from the OS CSPRNG (``rng``
        must be ``None`` unless ``simulation=True``). ``"float"``: numpy Laplace, for experiments and
        simulation; its guarantee holds for idealised real-valued noise only.
    simulation : bool
        Allow a seed or Generator with ``noise="secure"`` (reproducible, hence not a private release).
    error_bar_draws : int
        pyramid only: B > 0 adds the calibrated 90 % EMD error bar from B re-releases of the released map
        (:func:`~dpcloak.heatmaps.errorbars.emd_error_bar`; B ≥ 9, 19 is usual); 0 (default): none.

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user for every method (see :func:`private_heatmap`, :func:`laplace_baseline`,
    :func:`~dpcloak.heatmaps.dense.dense_aggregate`), for the released aggregate, ``parameters`` and
    ``details``; ``curator`` is not private and is not part of the release.

    Examples
    --------
    One bounded aggregate, released by each method:

    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=4)
    >>> methods = ("pyramid", "laplace", "dense")
    >>> [heatmap_from_aggregate(agg, method=m, epsilon=1.0, population=3).method for m in methods]
    ['pyramid', 'laplace', 'dense']
    >>> heatmap_from_aggregate(agg, method="dense", epsilon=1.0, population=3).details
    {'coarse_resolution': 2}
    """
    agg = check_aggregate(aggregate)
    meth = check_choice("method", method, METHODS)
    if extent is not None and not isinstance(extent, Extent):
        raise InvalidParameterError(f"extent must be an Extent (dpcloak.heatmaps.extent), got {type(extent).__name__}",
                                    parameter="extent")
    check_real("epsilon", epsilon, low=0.0)
    draws = check_int("error_bar_draws", error_bar_draws, minimum=0)
    if draws and meth != "pyramid":
        raise InvalidParameterError(f"error_bar_draws: error bars are implemented for the pyramid method, not {meth}",
                                    parameter="error_bar_draws", allowed="0 unless method='pyramid'", got=draws)
    if population is not None:  # a stated public user count must be one: a positive finite number
        population = check_real("population", population, low=0.0)
    gen = release_randomness(rng, noise, simulation=simulation)
    times = dict(timings or {})
    details: dict[str, Any] = {}
    t0 = time.perf_counter()
    if meth == "pyramid":
        pyr = _pyramid(agg, epsilon=epsilon, w=w, gamma=gamma, population=population, noise=noise,
                       source=noise_randomness(gen, noise, simulation=simulation), simulation=simulation)
        t1 = time.perf_counter()
        estimate, privacy, layers, params = pyr.estimate, pyr.privacy, pyr.layers, pyr.parameters
        details.update(lp_variables=pyr.lp_variables, lp_objective=pyr.lp_objective,
                       estimated_users=float(np.maximum(estimate, 0.0).sum()))
    elif meth == "laplace":
        rel = laplace_cells(agg, epsilon=epsilon, top_percent=top_percent, rng=gen, noise=noise, simulation=simulation)
        t1 = time.perf_counter()
        estimate, privacy = rel.estimate, rel.guarantee()
        layers = ((1, estimate),)
        params = dict(top_percent=top_percent)
        details.update(kept=rel.kept)
    else:
        from dpcloak.heatmaps.dense import dense_aggregate

        dense = dense_aggregate(agg, epsilon=epsilon, population=population, rng=gen, noise=noise,
                                simulation=simulation)
        t1 = time.perf_counter()
        estimate, privacy = dense.estimate, dense.guarantee()
        layers = ((agg.resolution // dense.coarse_resolution, estimate),)
        params = dict(population=population, count_epsilon=dense.count_epsilon, cell_epsilon=dense.cell_epsilon)
        details.update(coarse_resolution=dense.coarse_resolution)
        if population is None:
            details.update(noisy_user_count=dense.population)
    t2 = time.perf_counter()
    normalized, degenerate = normalize(estimate)
    total = float(np.maximum(estimate, 0.0).sum())
    shares = ((1, normalized),) if degenerate else tuple((b, np.maximum(a, 0.0) / total) for b, a in layers)
    t3 = time.perf_counter()
    times.update(noise=t1 - t0, reconstruct=t2 - t1, normalize=t3 - t2)
    result = HeatmapResult(
        aggregate=normalized, method=meth, epsilon=float(epsilon), resolution=agg.resolution, noise=noise,
        privacy=privacy, parameters=params, degenerate=degenerate, details=details,
        curator=CuratorDiagnostics(n_users=agg.n_users, n_points=agg.n_points, timings=times), extent=extent,
        layers=shares,
    )
    if draws:  # post-processing of the release; its randomness is public (a seed only in simulation)
        public = gen if gen is None or isinstance(gen, np.random.Generator) else np.random.default_rng([int(gen), 1])
        bar = emd_error_bar(result, draws=draws, rng=public)
        times["error_bar"] = time.perf_counter() - t3
        result = replace(result, error_bar=bar)
    times["total"] = sum(v for k, v in times.items() if k != "total")
    return result


@dataclass(frozen=True)
class _PyramidRelease:
    estimate: NDArray[np.float64]
    layers: tuple[tuple[int, NDArray[np.float64]], ...]
    privacy: PrivacyGuarantee
    parameters: dict[str, Any]
    lp_variables: int
    lp_objective: float


def _pyramid(agg: UserAggregate, *, epsilon: float, w: int | None, gamma: float, population: float | None,
             noise: str, source: RngLike, simulation: bool) -> _PyramidRelease:
    """Algorithm 1 + RECONSTRUCT with the caller's w, or the rule's w and levels from a public or a noisy n̂."""
    eps_count, eps_map, n_hat, n_noisy = 0.0, float(epsilon), population, None
    if w is not None:
        width, start, depth = check_int("w", w, minimum=1), None, agg.depth
        rule = f"w = {width} given by the caller, all levels to {agg.depth}"
    else:
        if population is None:  # the default: a stated share of ε buys a noisy user count
            eps_count, eps_map = split_epsilon(epsilon, [COUNT_SHARE, 1 - COUNT_SHARE])
            n_noisy = noisy_user_count(agg, epsilon=eps_count, noise=noise, rng=source)
            n_hat = n_noisy - 1.0 / eps_count  # one noise scale below: a lower estimate (P(n̂ > n) = e^-1/2)
        assert n_hat is not None
        chosen = pyramid_parameters(epsilon=eps_map, resolution=agg.resolution, population=max(n_hat, 1.0),
                                    source="public" if population is not None else "lower noisy")
        width, start, depth, rule = chosen.w, chosen.start_level, chosen.depth, chosen.rule
    coarse = agg if depth == agg.depth else coarsen_aggregate(agg, depth=depth)
    noisy = hierarchical_laplace(coarse, epsilon=eps_map, w=width, gamma=gamma, start_level=start, rng=source,
                                 noise=noise, simulation=simulation)
    rec = reconstruct(noisy, w=width)
    f = agg.resolution >> depth  # each coarse cell's mass spread over its f × f pixels
    spread = np.full((f, f), 1.0 / (f * f))
    layers = tuple((b * f, np.kron(layer, spread)) for b, layer in rec.layers())
    params: dict[str, Any] = dict(
        w=width, w_rule=rule, population=population, count_share=(str(COUNT_SHARE) if eps_count else None),
        count_epsilon=eps_count, noisy_population=n_noisy, depth=depth,
        gamma=noisy.budget.gamma, q=noisy.budget.q, levels=noisy.budget.levels, level_epsilons=noisy.budget.epsilons,
    )
    privacy = noisy.guarantee()
    if eps_count:
        spent = total_epsilon([eps_count, *noisy.budget.epsilons])  # basic composition, rounded up: ≤ ε
        privacy = user_level_guarantee(
            epsilon,
            mechanism=(f"noisy user count ({laplace_description(1.0 / eps_count, noise)}, ε={eps_count:.6g}, "
                       f"sensitivity 1) choosing w and the levels, composed with {privacy.mechanism}: "
                       f"ε_count + Σ ε_i = {spent!r} ≤ ε"),
            source=f"{privacy.source}; basic composition with the count",
        )
    return _PyramidRelease(estimate=np.kron(rec.estimate, spread), layers=layers, privacy=privacy, parameters=params,
                           lp_variables=rec.n_variables, lp_objective=rec.objective)


def _bounded(
    users: ArrayLike, x: ArrayLike, y: ArrayLike, resolution: int, extent: Extent | None
) -> tuple[UserAggregate, dict[str, float]]:
    t0 = time.perf_counter()
    if extent is not None:
        x, y, _ = extent.to_unit(x, y)
    agg = bound_users(users, x, y, resolution=resolution)
    return agg, {"bound": time.perf_counter() - t0}


def private_heatmap(
    users: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    *,
    epsilon: float,
    resolution: int,
    w: int | None = None,
    gamma: float = 2**-0.5,
    population: float | None = None,
    extent: Extent | None = None,
    rng: RngLike = None,
    noise: str = "secure",
    simulation: bool = False,
    error_bar_draws: int = 0,
) -> HeatmapResult:
    """ε-DP heatmap aggregate by Algorithms 1 and 2 of Ghazi et al. ("Differentially Private Heatmaps").

    Parameters
    ----------
    users : array_like, shape (N,)
        User id of each point; each user's points are bounded to one distribution (1/c per point).
    x, y : array_like, shape (N,)
        Coordinates: in [0, 1) without ``extent``; longitude and latitude (degrees) with a lon/lat extent;
        metres with a metres extent.
    epsilon : float
        ε > 0.
    resolution : int
        Δ = 2^ℓ (other sizes are rejected).
    w : int or None
        Cells kept per level by RECONSTRUCT (all levels measured); ``None``: w and the measured levels
        from the rule of :func:`~dpcloak.heatmaps.parameters.pyramid_parameters`, fed by ``population``
        or, without it, by a noisy user count costing 1/10 of ε. At low signal the rule coarsens (fewer
        levels, smaller w, down to the uniform map). ``parameters["w_rule"]`` states the choice.
    gamma : float
        Budget decay rate γ (paper: 1/√2).
    population : float or None
        A **public** estimate of the number of users (e.g. a census figure; never the data's count),
        used only to choose ``w`` and the levels; then all of ε goes to the map.
    extent : Extent or None
        The **public** square the grid covers (:mod:`dpcloak.heatmaps.extent`; never derived from the
        data); points outside it are refused.
    rng : Generator, int or None
        Randomness (see ``noise``).
    noise : {"secure", "float"}
        ``"secure"`` (default): exact discrete Laplace on the 2^-36 grid from the OS CSPRNG (``rng``
        must be ``None`` unless ``simulation=True``). ``"float"``: numpy Laplace, for experiments and
        simulation; its guarantee holds for idealised real-valued noise only.
    simulation : bool
        Allow a seed or Generator with ``noise="secure"`` (reproducible, hence not a private release).
    error_bar_draws : int
        B > 0: also compute the calibrated 90 % EMD error bar from B re-releases of the released map
        (``result.error_bar``, :mod:`~dpcloak.heatmaps.errorbars`; post-processing, no privacy budget;
        B ≥ 9, 19 is usual); 0 (default): none.

    Returns
    -------
    HeatmapResult
        ``aggregate`` ≥ 0 summing to 1; error O(√k/(εn)) in EMD for k-sparse data (Theorem 3.1).

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user: with ``w`` and ``population`` both ``None``, a noisy user count
    (sensitivity 1) spends ε_count = ε/10 (rounded down, :func:`~dpcloak.privacy.accounting.split_epsilon`);
    w and the finest level L are functions of it (post-processing). Levels q..L of the pyramid of
    s = Σ p_i (L < ℓ: of its exact 2^L-block sums, still sensitivity 1) get Laplace noise of scale 1/ε_i
    with ε_count + Σ ε_i ≤ ε exactly (basic composition, :func:`~dpcloak.privacy.accounting.total_epsilon`);
    RECONSTRUCT, spreading and normalisation are post-processing. With
    the default ``noise="secure"`` each level's noise is exact discrete Laplace at the same ε_i, so the
    guarantee holds for what is sampled; with ``"float"`` it holds for idealised real-valued noise.

    Examples
    --------
    A release draws exact noise from the OS CSPRNG; the output is a distribution over the Δ × Δ cells:

    >>> users, x, y = [0, 0, 1, 2, 2, 2], [0.1, 0.1, 0.6, 0.9, 0.9, 0.2], [0.1, 0.2, 0.6, 0.9, 0.8, 0.2]
    >>> result = private_heatmap(users, x, y, epsilon=1.0, resolution=8)
    >>> result.aggregate.shape, bool(np.all(result.aggregate >= 0)), round(float(result.aggregate.sum()), 12)
    ((8, 8), True, 1.0)
    >>> result.guarantee().kind, result.guarantee().epsilon
    ('ε-DP', 1.0)

    Without ``w`` and ``population``, 1/10 of ε buys a noisy user count that picks w and the levels
    (three users are far too few for any detail: here the rule nearly always gives the uniform map):

    >>> result.parameters["count_share"], round(result.parameters["count_epsilon"], 12)
    ('1/10', 0.1)
    >>> result.parameters["w_rule"].startswith("ε n̂ = ")
    True
    >>> private_heatmap(users, x, y, epsilon=1.0, resolution=8, rng=0)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rng must be None for a release with noise='secure' ...

    Tests and experiments may reproduce a release with ``simulation=True``:

    >>> a = private_heatmap(users, x, y, epsilon=1.0, resolution=8, rng=0, simulation=True)
    >>> b = private_heatmap(users, x, y, epsilon=1.0, resolution=8, rng=0, simulation=True)
    >>> bool(np.array_equal(a.aggregate, b.aggregate))
    True
    """
    _check_common(epsilon, resolution)
    if w is not None:
        check_int("w", w, minimum=1)
    release_randomness(rng, noise, simulation=simulation)
    agg, times = _bounded(users, x, y, resolution, extent)
    return heatmap_from_aggregate(agg, method="pyramid", epsilon=epsilon, w=w, gamma=gamma, population=population,
                                  extent=extent, rng=rng, timings=times, noise=noise, simulation=simulation,
                                  error_bar_draws=error_bar_draws)


def laplace_baseline(
    users: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    *,
    epsilon: float,
    resolution: int,
    top_percent: float | None = None,
    extent: Extent | None = None,
    rng: RngLike = None,
    noise: str = "secure",
    simulation: bool = False,
) -> HeatmapResult:
    """The [LXD+19] baseline of Ghazi et al. §4: Lap(1/ε) on every cell, negatives zeroed, optional top-t %.

    Parameters are those of :func:`private_heatmap` (``noise="secure"`` by default, a seed only with
    ``simulation=True``; ``extent`` for lon/lat or metres input), with ``top_percent`` t ∈ (0, 100] instead
    of ``w`` and ``gamma``.

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user (the exact discrete Laplace mechanism by default, or the Laplace
    mechanism for ``noise="float"`` with idealised real-valued noise, on s with ℓ1 sensitivity 1).

    Examples
    --------
    >>> result = laplace_baseline([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], epsilon=1.0, resolution=4,
    ...                           top_percent=50)
    >>> result.method, result.parameters, int(np.count_nonzero(result.aggregate)) <= 8
    ('laplace', {'top_percent': 50}, True)
    """
    _check_common(epsilon, resolution)
    release_randomness(rng, noise, simulation=simulation)
    agg, times = _bounded(users, x, y, resolution, extent)
    return heatmap_from_aggregate(agg, method="laplace", epsilon=epsilon, top_percent=top_percent, extent=extent,
                                  rng=rng, timings=times, noise=noise, simulation=simulation)


def heatmap_from_frame(
    frame: Any,
    *,
    epsilon: float,
    resolution: int,
    method: str = "pyramid",
    user: str = "user",
    x: str = "x",
    y: str = "y",
    w: int | None = None,
    gamma: float = 2**-0.5,
    top_percent: float | None = None,
    population: float | None = None,
    extent: Extent | None = None,
    rng: RngLike = None,
    noise: str = "secure",
    simulation: bool = False,
    error_bar_draws: int = 0,
) -> HeatmapResult:
    """DataFrame front end: columns ``user``, ``x``, ``y`` (as in :func:`private_heatmap`, ``extent`` included).

    A pandas DataFrame is aggregated in memory; a Dask DataFrame is aggregated on its cluster
    (:func:`~dpcloak.heatmaps.distributed.bound_users_dask`) and only the Δ × Δ aggregate leaves it.
    ``noise``, ``simulation``, ``population`` and ``error_bar_draws`` are as in :func:`heatmap_from_aggregate`. With an
    ``extent``, the coordinate columns are mapped to [0, 1)² on each partition.

    Privacy guarantee
    -----------------
    That of the chosen method (:func:`heatmap_from_aggregate`).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"user": [0, 0, 1, 2], "x": [0.1, 0.2, 0.6, 0.9], "y": [0.1, 0.2, 0.6, 0.9]})
    >>> result = heatmap_from_frame(frame, epsilon=1.0, resolution=4)
    >>> result.aggregate.shape, result.method, result.curator.n_users
    ((4, 4), 'pyramid', 3)
    """
    check_choice("method", method, METHODS)
    _check_common(epsilon, resolution)
    release_randomness(rng, noise, simulation=simulation)
    missing = [c for c in (user, x, y) if c not in getattr(frame, "columns", ())]
    if missing:
        raise InvalidParameterError(f"frame must have columns {user!r}, {x!r}, {y!r}; missing {missing}",
                                    parameter="frame")
    t0 = time.perf_counter()
    if type(frame).__module__.startswith("dask"):
        from dpcloak.heatmaps.distributed import bound_users_dask

        agg = bound_users_dask(frame, resolution=resolution, user=user, x=x, y=y, extent=extent)
    else:
        agg, _ = _bounded(np.asarray(frame[user]), np.asarray(frame[x], dtype=float),
                          np.asarray(frame[y], dtype=float), resolution, extent)
    times = {"bound": time.perf_counter() - t0}
    return heatmap_from_aggregate(agg, method=method, epsilon=epsilon, w=w, gamma=gamma, top_percent=top_percent,
                                  population=population, extent=extent, rng=rng, timings=times, noise=noise,
                                  simulation=simulation, error_bar_draws=error_bar_draws)

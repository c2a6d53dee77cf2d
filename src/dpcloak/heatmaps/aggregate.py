"""Algorithm 1 of Ghazi et al.: hierarchical Laplace noise on the pyramid, with geometric per-level budgets.

Level i of the pyramid releases P_i s + ν_i with ν_i ~ Lap(1/ε_i)^{4^i}; the measurement used by
RECONSTRUCT is y'_i = 2^-i (P_i s + ν_i). Budgets (proof of Theorem 3.1, §4 "Implementation details"):

    q = ⌊log₂ √w⌋,   ε_i = γ^{|i−q|} ε / Z,   Z = Σ_{measured i} γ^{|i−q|}.

As in the paper's implementation, levels i < q are not measured (start at level q, whose 4^q ≤ w
cells are all kept by the top-w descent); Z then sums over the measured levels q..ℓ only, so the
ε_i still add up to ε. ``start_level=0`` gives the algorithm exactly as analysed in Theorem 3.1.
The default γ = 1/√2 minimises the second error term of the proof (footnote 5).

Noise: ``noise="secure"`` (default) or ``noise="float"``
--------------------------------------------------------
Every release path, these building blocks included (:func:`hierarchical_laplace`,
:func:`~dpcloak.heatmaps.baselines.laplace_cells`, :func:`~dpcloak.heatmaps.dense.dense_aggregate`),
defaults to ``"secure"`` and refuses a seed or Generator with it unless ``simulation=True``
(:func:`~dpcloak.heatmaps.release.release_randomness`), as the front ends do.

``"float"`` (an explicit opt-in, for experiments and simulation) draws textbook Laplace noise as IEEE
doubles with numpy (:class:`~dpcloak.privacy.LaplaceMechanism`); its guarantee is labelled as holding
for idealised real-valued noise only. Its low-order bits can leak the input (Mironov, CCS 2012), so
it is **not** the setting for deployment.

``"secure"`` (the default; with ``rng=None``: a ChaCha20 stream under a fresh key from the OS CSPRNG
per level; a seed or Generator, allowed only with ``simulation=True``, makes it reproducible and not
cryptographically secure) draws
each level's noise as exact discrete Laplace on the grid g = 2^-K, K = :data:`FIXED_POINT_BITS` = 36,
with :func:`~dpcloak.privacy.discrete.discrete_laplace_noise` (integer arithmetic only). Why this grid
and why it keeps ε_i-DP per level:

* Every per-user weight is a multiple of 2^-36 (:mod:`dpcloak.heatmaps.data`), so every level sum is
  exactly P_i s = g·S_i with S_i an integer vector; no rounding happens (g = 2^-36 is the coarsest
  grid on which all sums are exact).
* Adding or removing one user changes S_i by a non-negative integer vector of ℓ1 norm ≤ 2^36 = 1/g
  (the user's fixed-point total is ≤ 1 and P_i only merges cells): the sensitivity is an integer
  number of grid steps.
* With Y i.i.d. discrete Laplace, P(y) ∝ e^{−|y|/b} on ℤ, and neighbouring S, S′,
  P(S + Y = v)/P(S′ + Y = v) = Π_c exp((|v_c − S′_c| − |v_c − S_c|)/b) ≤ exp(‖S − S′‖₁/b) ≤ exp(2^36/b),
  the same argument as for the continuous Laplace mechanism. The scale sampled is the rational
  b = :func:`~dpcloak.privacy.discrete.laplace_grid_scale` (ε_i, 2^36) ≥ 2^36/ε_i grid steps (equal, or
  rounded up by less than 2^-56 relative), so 2^36/b ≤ ε_i exactly: each level is ε_i-DP and the ε_i
  sum to ε.
* The released g·(S_i + Y) is a fixed function of an exact integer: post-processing, nothing leaks
  through low-order bits. In count units the noise scale is b·g = 1/ε_i (to 2^-56 relative), the
  textbook scale, so the accuracy is that of ``"float"``.

The draws are vectorised and exact (:mod:`dpcloak.privacy.bulk`: numpy integer arithmetic on 64-bit
words of a ChaCha20 stream keyed by :func:`os.urandom`, or of the seeded Generator), so ``"secure"``
costs about as much as ``"float"`` (``benchmarks/bench_secure_noise.py`` measures the ratio end to end).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.data import FIXED_POINT_BITS, UserAggregate, _make_aggregate
from dpcloak.heatmaps.pyramid import pyramid_levels
from dpcloak.heatmaps.release import NOISES, release_randomness
from dpcloak.privacy.accounting import split_epsilon, total_epsilon
from dpcloak.privacy.discrete import discrete_laplace_noise, laplace_grid_scale
from dpcloak.privacy.mechanisms import LaplaceMechanism, PrivacyGuarantee

__all__ = [
    "USER_NEIGHBOURING",
    "NOISES",
    "LevelNoise",
    "noise_randomness",
    "laplace_level",
    "laplace_description",
    "FLOAT_CAVEAT",
    "LevelBudget",
    "NoisyPyramid",
    "level_budget",
    "default_start_level",
    "hierarchical_laplace",
    "check_aggregate",
    "coarsen_aggregate",
    "noisy_user_count",
    "user_level_guarantee",
    "UserLaplaceRelease",
]

USER_NEIGHBOURING = (
    "add/remove one user (each user's data is one distribution p_i over G_Δ with ‖p_i‖₁ ≤ 1, enforced by "
    "per-user bounding)"
)


_GRID = 2.0**-FIXED_POINT_BITS  # the fixed-point unit: every level sum is an integer multiple of it


def noise_randomness(rng: RngLike, noise: str, *, simulation: bool = False) -> RngLike:
    """The randomness to hand to :func:`laplace_level` for a whole release (checks ``noise`` and ``rng``).

    ``"float"``: a numpy Generator (``as_generator(rng)``). ``"secure"``: ``None`` stays ``None`` (the
    OS CSPRNG keys a ChaCha20 stream per level); a seed or Generator is refused unless
    ``simulation=True`` (:func:`~dpcloak.heatmaps.release.release_randomness`), and then becomes one
    Generator shared by all levels.

    Examples
    --------
    >>> import numpy as np
    >>> noise_randomness(None, "secure") is None  # the OS CSPRNG keys each level
    True
    >>> isinstance(noise_randomness(0, "secure", simulation=True), np.random.Generator)  # reproducible, not private
    True
    >>> noise_randomness(0, "secure")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rng must be None for a release with noise='secure' ...
    >>> noise_randomness(0, "exact")
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: noise must be one of 'float', 'secure', got 'exact'
    """
    kind = check_choice("noise", noise, NOISES)
    release_randomness(rng, kind, simulation=simulation)
    return None if kind == "secure" and rng is None else as_generator(rng)


@dataclass(frozen=True)
class LevelNoise:
    """One noisy level: ``values`` = level sums (count units) + noise, and the Laplace ``scale`` used.

    Examples
    --------
    Returned by :func:`laplace_level`:

    >>> import numpy as np
    >>> level = laplace_level(np.zeros((2, 2), dtype=np.int64), epsilon=0.5, noise="float", rng=0)
    >>> isinstance(level, LevelNoise), level.values.shape, level.scale  # scale 1/ε in count units
    (True, (2, 2), 2.0)
    """

    values: NDArray[np.float64]
    scale: float


def laplace_level(fixed: NDArray[np.int64], *, epsilon: float, noise: str, rng: RngLike) -> LevelNoise:
    """Add ε-DP Laplace noise (ℓ1 sensitivity 1 = 2^36 fixed-point units) to exact fixed-point sums.

    Parameters
    ----------
    fixed : ndarray of int64
        Level sums in units of 2^-36 (:attr:`UserAggregate.fixed` or its pyramid levels).
    epsilon : float
        ε > 0 of this level.
    noise : {"float", "secure"}
        Textbook float Laplace (experiments) or exact discrete Laplace on the fixed-point grid
        (deployment); see the module docstring.
    rng : Generator, int or None
        From :func:`noise_randomness` (``None`` with ``"secure"``: ChaCha20 keyed by the OS CSPRNG).

    Privacy guarantee
    -----------------
    ``"secure"``: releases g·(S + Y), S the exact fixed-point sums, Y i.i.d. exactly discrete Laplace
    with b = :func:`~dpcloak.privacy.discrete.laplace_grid_scale` (ε, 2^36) ≥ 2^36/ε grid steps: ε-DP
    under add/remove-one-user (module docstring). ``"float"``: ε-DP only for idealised real-valued
    Laplace noise (Mironov 2012).

    Examples
    --------
    Exact discrete Laplace on the 2^-36 grid, reproducible here only because a seed is given:

    >>> import numpy as np
    >>> fixed = np.array([[2**36, 0], [0, 3 * 2**36]], dtype=np.int64)  # 1 and 3 users' mass
    >>> level = laplace_level(fixed, epsilon=1.0, noise="secure", rng=np.random.default_rng(0))
    >>> level.scale, level.values.shape
    (1.0, (2, 2))
    >>> bool(np.all(level.values * 2**36 == np.round(level.values * 2**36)))  # on the fixed-point grid
    True
    """
    if check_choice("noise", noise, NOISES) == "float":
        mech = LaplaceMechanism(epsilon=epsilon, sensitivity=1.0, neighbouring=USER_NEIGHBOURING)
        return LevelNoise(mech.privatize(fixed.astype(np.float64) / float(1 << FIXED_POINT_BITS), rng=rng), mech.scale)
    scale = laplace_grid_scale(epsilon=epsilon, grid_sensitivity=1 << FIXED_POINT_BITS)
    noisy = fixed + discrete_laplace_noise(scale, fixed.size, rng=rng).reshape(fixed.shape)
    return LevelNoise(noisy.astype(np.float64) * _GRID, float(scale) * _GRID)


FLOAT_CAVEAT = (
    "float noise: the guarantee holds only for idealised real-valued noise; IEEE-double Laplace samples leak "
    "through their low-order bits (Mironov 2012), use noise='secure' for a release"
)
"""Appended to the mechanism of every ``noise="float"`` guarantee."""


def laplace_description(scale: float, noise: str) -> str:
    """How a release's noise is named in its guarantee: ``Lap(b)`` (with :data:`FLOAT_CAVEAT`) or the exact one.

    Examples
    --------
    >>> laplace_description(2.0, "secure")
    'exact discrete Laplace on grid 2^-36, scale 2'
    >>> laplace_description(2.0, "float").split(";")[0]
    'Laplace Lap(2) [float noise: the guarantee holds only for idealised real-valued noise'
    """
    if noise == "secure":
        return f"exact discrete Laplace on grid 2^-{FIXED_POINT_BITS}, scale {scale:.6g}"
    return f"Laplace Lap({scale:.6g}) [{FLOAT_CAVEAT}]"


def default_start_level(w: int) -> int:
    """q = ⌊log₂ √w⌋: the largest q with 4^q ≤ w (exact integer arithmetic).

    Examples
    --------
    >>> [default_start_level(w) for w in (1, 3, 4, 15, 16, 64)]
    [0, 0, 1, 1, 2, 3]
    """
    return (check_int("w", w, minimum=1).bit_length() - 1) // 2


@dataclass(frozen=True)
class LevelBudget:
    r"""Per-level privacy budgets of Algorithm 1.

    Attributes
    ----------
    levels : tuple of int
        Measured levels start..ℓ.
    epsilons : tuple of float
        ε_i per measured level; their exact (rational) sum is ε up to a few ulps and never above it.
    epsilon, gamma : float
        Total budget ε and decay rate γ.
    q : int
        Centre level ⌊log₂ √w⌋ (capped at ℓ).
    normalizer : float
        Z = Σ_i γ^{\|i−q\|} over the measured levels.

    Examples
    --------
    >>> budget = level_budget(1.0, depth=4, w=20)
    >>> isinstance(budget, LevelBudget), budget.levels, budget.q
    (True, (2, 3, 4), 2)
    >>> round(sum(budget.epsilons), 12), budget.epsilons[0] > budget.epsilons[1] > budget.epsilons[2]
    (1.0, True)
    """

    levels: tuple[int, ...]
    epsilons: tuple[float, ...]
    epsilon: float
    gamma: float
    q: int
    normalizer: float


def level_budget(
    epsilon: float, *, depth: int, w: int = 20, gamma: float = 2**-0.5, start_level: int | None = None
) -> LevelBudget:
    r"""ε_i = γ^{\|i−q\|} ε / Z for the measured levels (Ghazi et al., proof of Theorem 3.1).

    Parameters
    ----------
    epsilon : float
        Total ε > 0.
    depth : int
        ℓ = log₂ Δ.
    w : int
        Sparsity parameter of RECONSTRUCT (w ≥ 1); q = ⌊log₂ √w⌋.
    gamma : float
        Decay rate γ ∈ (0, 1]; the analysis needs γ > 1/2, the paper uses 1/√2.
    start_level : int or None
        First measured level; ``None`` means min(q, ℓ) (the paper's implementation).

    Examples
    --------
    Levels start at the largest q with 4^q ≤ w (q = 2 for ``w = 20``); the budget decays by γ per level:

    >>> budget = level_budget(1.0, depth=4, w=20)
    >>> budget.levels
    (2, 3, 4)
    >>> [round(e / budget.epsilons[0], 6) for e in budget.epsilons]  # 1, γ, γ²
    [1.0, 0.707107, 0.5]
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    ell = int(check_int("depth", depth, minimum=0))
    gam = check_real("gamma", gamma, low=0.0, high=1.0, high_inclusive=True)
    q = min(default_start_level(w), ell)
    start = q if start_level is None else int(check_int("start_level", start_level, minimum=0, maximum=ell))
    return _level_budget(eps, gam, q, start, ell)


@functools.lru_cache(maxsize=1024)
def _level_budget(eps: float, gam: float, q: int, start: int, ell: int) -> LevelBudget:
    """:func:`level_budget` from its validated inputs (plain floats and ints), memoised.

    The result is a function of exactly these five values (ε, γ, q, first and last level) and immutable, so a
    release loop that asks for the same budget many times (the audit suite's heatmap rows: one pyramid per
    query) pays the exact rational split (:func:`~dpcloak.privacy.accounting.split_epsilon`) once.
    """
    levels = tuple(range(start, ell + 1))
    weights = [gam ** abs(i - q) for i in levels]
    z = math.fsum(weights)
    eps_i = split_epsilon(eps, weights)  # exact sum ≤ ε, not just its rounding
    return LevelBudget(levels=levels, epsilons=eps_i, epsilon=eps, gamma=gam, q=q, normalizer=z)


def user_level_guarantee(epsilon: float, *, mechanism: str, source: str) -> PrivacyGuarantee:
    """ε-DP (δ = 0) under add/remove-one-user, ℓ1 sensitivity 1 per released level.

    Examples
    --------
    >>> g = user_level_guarantee(0.5, mechanism="Laplace on the level sums", source="Ghazi et al. Theorem 3.1")
    >>> g.epsilon, g.delta
    (0.5, 0.0)
    >>> g.neighbouring.split(" (")[0]
    'add/remove one user'
    """
    return PrivacyGuarantee(
        kind="ε-DP",
        epsilon=float(epsilon),
        delta=0.0,
        neighbouring=USER_NEIGHBOURING,
        sensitivity=1.0,
        norm="l1",
        mechanism=mechanism,
        source=source,
    )


class UserLaplaceRelease:
    """Mixin for a release made by one Laplace mechanism on s (ℓ1 sensitivity 1) plus post-processing.

    The release has ``epsilon``, ``scale`` (the Laplace scale used) and ``noise`` (``"float"`` or
    ``"secure"``), names what the noise was added to in :meth:`_noise_on` and its paper result in
    ``_source``.

    Examples
    --------
    The baseline release is one; its guarantee comes from this mixin:

    >>> from dpcloak.heatmaps import bound_users, laplace_cells
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=4)
    >>> release = laplace_cells(agg, epsilon=0.5, noise="float", rng=0)
    >>> isinstance(release, UserLaplaceRelease), release.guarantee().epsilon, release.scale
    (True, 0.5, 2.0)
    """

    epsilon: float
    scale: float
    noise: str
    _source: ClassVar[str]

    def _noise_on(self) -> str:
        raise NotImplementedError

    def guarantee(self) -> PrivacyGuarantee:
        """ε-DP under add/remove-one-user (one Laplace mechanism, ℓ1 sensitivity 1; the rest is post-processing)."""
        return user_level_guarantee(
            self.epsilon, mechanism=f"{laplace_description(self.scale, self.noise)} on {self._noise_on()}",
            source=self._source,
        )


@dataclass(frozen=True)
class NoisyPyramid:
    """The release of Algorithm 1: noisy unscaled level sums P_i s + ν_i for i = start..ℓ.

    Attributes
    ----------
    levels : tuple of ndarray
        ``levels[k]`` is the 2^i × 2^i array for level i = ``budget.levels[k]``.
    budget : LevelBudget
        The per-level ε_i.
    scales : tuple of float
        Laplace scales b_i = 1/ε_i actually used (re-checked by :class:`LaplaceMechanism`).
    resolution : int
        Δ.
    privacy : PrivacyGuarantee or None
        Set by other protocols producing the same release (e.g. the shuffle model of
        :mod:`dpcloak.heatmaps.shuffle`); ``None`` means the central Laplace guarantee below.
    noise : {"float", "secure"}
        How the central Laplace noise was drawn (module docstring); ``"secure"`` is for deployment.

    Privacy guarantee
    -----------------
    Each level is the Laplace mechanism with ℓ1 sensitivity 1 (a user's p_i has ‖P_i p_i‖₁ ≤ 1) at
    ε_i; by basic composition the release is (Σ ε_i)-DP = ε-DP under add/remove-one-user
    (Ghazi et al., Theorem 3.1, privacy analysis); with ``noise="secure"`` each level is the exact
    discrete Laplace mechanism at ε_i on the 2^-36 grid (module docstring). With ``noise="float"`` the
    guarantee holds for idealised real-valued noise only (:data:`FLOAT_CAVEAT`). Nothing else about
    the input (such as the number of users) is part of the release.

    Examples
    --------
    Returned by :func:`hierarchical_laplace` (``noise="float"`` here: simulation, seeded):

    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=8)
    >>> pyramid = hierarchical_laplace(agg, epsilon=1.0, w=4, noise="float", rng=0)
    >>> isinstance(pyramid, NoisyPyramid), pyramid.start_level, [level.shape for level in pyramid.levels]
    (True, 1, [(2, 2), (4, 4), (8, 8)])
    """

    levels: tuple[NDArray[np.float64], ...]
    budget: LevelBudget
    scales: tuple[float, ...]
    resolution: int
    privacy: PrivacyGuarantee | None = None
    noise: str = "float"

    @property
    def start_level(self) -> int:
        """First measured level."""
        return self.budget.levels[0]

    @property
    def depth(self) -> int:
        """ℓ."""
        return self.budget.levels[-1]

    def guarantee(self) -> PrivacyGuarantee:
        """ε-DP under add/remove-one-user, ε = Σ_i ε_i (or ``privacy`` when another protocol produced it)."""
        if self.privacy is not None:
            return self.privacy
        return user_level_guarantee(
            total_epsilon(self.budget.epsilons),
            mechanism=(
                f"hierarchical {'exact discrete ' if self.noise == 'secure' else ''}Laplace on pyramid levels "
                f"{self.start_level}..{self.depth}, "
                f"ε_i = γ^|i−q| ε/Z (γ={self.budget.gamma:.6g}, q={self.budget.q})"
                + ("" if self.noise == "secure" else f" [{FLOAT_CAVEAT}]")
            ),
            source="Ghazi et al. Algorithm 1 and Theorem 3.1 (basic composition over levels)",
        )


def check_aggregate(aggregate: Any) -> UserAggregate:
    """Refuse anything but a per-user-bounded :class:`UserAggregate`.

    Examples
    --------
    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1], [0.1, 0.6], [0.1, 0.6], resolution=2)
    >>> check_aggregate(agg) is agg
    True
    >>> check_aggregate([[1.0, 0.0], [0.0, 1.0]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: aggregate must be a UserAggregate from ...
    """
    if not isinstance(aggregate, UserAggregate):
        raise InvalidParameterError(
            "aggregate must be a UserAggregate from bound_users/bound_distributions (per-user bounding), "
            f"got {type(aggregate).__name__}", parameter="aggregate"
        )
    return aggregate


def hierarchical_laplace(
    aggregate: UserAggregate,
    *,
    epsilon: float,
    w: int = 20,
    gamma: float = 2**-0.5,
    start_level: int | None = None,
    rng: RngLike = None,
    noise: str = "secure",
    simulation: bool = False,
) -> NoisyPyramid:
    """Algorithm 1 (Ghazi et al.): per-level Laplace noise on the pyramid of the bounded aggregate.

    Parameters
    ----------
    aggregate : UserAggregate
        s = Σ_i p_i from :func:`~dpcloak.heatmaps.data.bound_users` (the only accepted input).
    epsilon : float
        Total privacy budget ε > 0.
    w : int
        RECONSTRUCT's per-level width (≥ 1); fixes q = ⌊log₂ √w⌋.
    gamma : float
        Decay rate γ of the budgets.
    start_level : int or None
        First measured level (default q, as in the paper's experiments).
    rng : Generator, int or None
        Randomness. With ``noise="secure"``, ``None`` (the default) means the OS CSPRNG (a ChaCha20
        stream under a fresh OS key); a seed or Generator is refused unless ``simulation=True``.
    noise : {"secure", "float"}
        ``"secure"`` (default): exact discrete Laplace on the 2^-36 grid (module docstring).
        ``"float"``: numpy Laplace noise, an explicit opt-in for experiments and simulation; its
        guarantee holds for idealised real-valued noise only.
    simulation : bool
        Allow a seed or Generator with ``noise="secure"`` (reproducible, hence not a private release).

    Returns
    -------
    NoisyPyramid

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user: level i is the Laplace mechanism (``"float"``) or the exact
    discrete Laplace mechanism on the 2^-36 grid (``"secure"``) at ε_i with sensitivity 1, and the
    ε_i sum to ε (see :class:`NoisyPyramid`).

    Examples
    --------
    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=8)
    >>> pyramid = hierarchical_laplace(agg, epsilon=1.0, w=4, noise="float", rng=0)
    >>> pyramid.budget.levels, round(sum(pyramid.budget.epsilons), 12)
    ((1, 2, 3), 1.0)
    >>> pyramid.guarantee().kind, pyramid.guarantee().epsilon
    ('ε-DP', 1.0)
    """
    agg = check_aggregate(aggregate)
    budget = level_budget(epsilon, depth=agg.depth, w=w, gamma=gamma, start_level=start_level)
    source = noise_randomness(rng, noise, simulation=simulation)
    exact = pyramid_levels(agg.fixed, start_level=budget.levels[0])
    released = [laplace_level(level_sums, epsilon=eps_i, noise=noise, rng=source)
                for level_sums, eps_i in zip(exact, budget.epsilons, strict=True)]
    return NoisyPyramid(
        levels=tuple(r.values for r in released), budget=budget, scales=tuple(r.scale for r in released),
        resolution=agg.resolution, noise=noise,
    )


def coarsen_aggregate(aggregate: UserAggregate, *, depth: int) -> UserAggregate:
    """The same users' aggregate on the coarser 2^depth × 2^depth grid (exact sums of 2^(ℓ−depth)-blocks).

    Merging cells keeps every user's mass ≤ 1, so the coarse aggregate has the same ℓ1 sensitivity 1 and
    every mechanism may take it (:func:`~dpcloak.heatmaps.parameters.pyramid_parameters` coarsens at low signal).

    Examples
    --------
    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.3, 0.9], [0.1, 0.3, 0.9], resolution=8)
    >>> coarse = coarsen_aggregate(agg, depth=1)
    >>> coarse.resolution, coarse.n_users, (coarse.fixed // 2**36).tolist()
    (2, 3, [[2, 0], [0, 1]])
    >>> bool(coarse.fixed.sum() == agg.fixed.sum())
    True
    """
    agg = check_aggregate(aggregate)
    level = check_int("depth", depth, minimum=0, maximum=agg.depth)
    fixed = pyramid_levels(agg.fixed, start_level=level)[0]
    return _make_aggregate(fixed, 1 << level, agg.n_users, agg.n_points)


def noisy_user_count(aggregate: UserAggregate, *, epsilon: float, noise: str, rng: RngLike) -> float:
    """n + Laplace noise at ε (sensitivity 1 under add/remove-one-user), on the 2^-36 grid of :func:`laplace_level`.

    ``rng`` comes from :func:`noise_randomness`; with ``noise="secure"`` the noise is exact discrete
    Laplace from the OS CSPRNG (``rng=None``). The count may come out ≤ 0.

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user: the count changes by at most 1 (2^36 grid steps) between
    neighbours; the exact discrete Laplace mechanism (``"secure"``) or the Laplace mechanism with
    idealised real-valued noise (``"float"``).

    Examples
    --------
    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=4)
    >>> n_hat = noisy_user_count(agg, epsilon=0.5, noise="secure", rng=None)  # exact noise from the OS CSPRNG
    >>> isinstance(n_hat, float), float(n_hat * 2**36).is_integer()
    (True, True)
    """
    count = np.array([check_aggregate(aggregate).n_users << FIXED_POINT_BITS], dtype=np.int64)
    return float(laplace_level(count, epsilon=epsilon, noise=noise, rng=rng).values[0])

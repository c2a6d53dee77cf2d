"""Dense EMD aggregation, Ghazi et al. Appendix D (Theorem D.1): error Õ(1/√(εn)) without sparsity.

1. Coarsen to Δ* = 2^{ℓ*} with ℓ* = round(log₂ √(ε_cells n̂)), clipped to [0, ℓ] (the proof's
   ℓ* = log √(εn) is not an integer in general; rounding keeps Δ* within a factor √2 of √(ε n̂)).
   **n̂ is never the exact user count**: a grid chosen from n itself is a deterministic function of
   the data (127 and 128 users at ε = 1 give Δ* = 8 and 16 in every run), which no ε-DP mechanism
   may output. n̂ is either a public estimate of the population given by the caller
   (``population=``; then ε_cells = ε), or a noisy count n + Lap(1/ε_count) released with a share
   ε_count = ``count_share`` · ε of the budget (then ε_cells = ε − ε_count).
2. s̃ = P_{ℓ*} s + ν, ν(c) ~ Lap(1/ε_cells) on each of the Δ*² cells (ℓ1 sensitivity 1).
3. ŝ = argmin_{ŝ ≥ 0} ‖ŝ − s̃‖_EMD, where (§2.1) ‖w‖_EMD = min_{p − q + r = w} EMD(p, q) + α‖r‖₁,
   α = 2. With the ℓ1 ground metric, EMD on the grid is a min-cost flow on the grid graph with cost
   1/Δ* per edge, so step 3 is the LP

       minimise (1/Δ*) Σ_e (f⁺_e + f⁻_e) + α Σ_v (r⁺_v + r⁻_v)
       s.t.     ŝ_v − div(f⁺ − f⁻)_v − r⁺_v + r⁻_v = s̃_v,   ŝ, f±, r± ≥ 0,

   solved with HiGHS.
4. The coarse ŝ is spread uniformly over the Δ × Δ grid (each coarse cell's mass over its pixels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, sparse

from dpcloak._rng import RngLike
from dpcloak._validation import check_real
from dpcloak.errors import ConvergenceError
from dpcloak.heatmaps.aggregate import (
    check_aggregate,
    laplace_description,
    laplace_level,
    noise_randomness,
    noisy_user_count,
    user_level_guarantee,
)
from dpcloak.heatmaps.data import UserAggregate
from dpcloak.heatmaps.pyramid import pyramid_levels
from dpcloak.privacy.accounting import split_epsilon
from dpcloak.privacy.mechanisms import PrivacyGuarantee

__all__ = ["DenseRelease", "coarse_level", "dense_aggregate", "emd_norm_projection", "EMD_NORM_ALPHA"]

EMD_NORM_ALPHA = 2.0
"""α of the EMD norm: the ℓ1 diameter of [0, 1)² (§2.1)."""


@dataclass(frozen=True)
class DenseRelease:
    """Result of Appendix D's algorithm.

    Attributes
    ----------
    estimate : ndarray, shape (Δ, Δ)
        ŝ spread to the input resolution (non-negative, unnormalised).
    coarse : ndarray, shape (Δ*, Δ*)
        ŝ on the coarse grid.
    coarse_resolution : int
        Δ*.
    epsilon : float
        Total ε (count and cells).
    cell_epsilon, scale : float
        ε_cells of the coarse cells and their Laplace scale.
    count_epsilon : float
        ε_count spent on the noisy user count (0 when ``population`` was given).
    population : float
        n̂ used to choose Δ*: the public estimate, or the noisy count (itself ε_count-DP).
    noise : {"secure", "float"}
        How the noise was drawn (:mod:`dpcloak.heatmaps.aggregate`).

    Examples
    --------
    Returned by :func:`dense_aggregate`:

    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=4)
    >>> release = dense_aggregate(agg, epsilon=1.0)  # exact noise from the OS CSPRNG
    >>> isinstance(release, DenseRelease), release.estimate.shape, release.guarantee().epsilon
    (True, (4, 4), 1.0)
    """

    estimate: NDArray[np.float64]
    coarse: NDArray[np.float64]
    coarse_resolution: int
    epsilon: float
    cell_epsilon: float
    scale: float
    count_epsilon: float
    population: float
    noise: str

    def guarantee(self) -> PrivacyGuarantee:
        """ε-DP under add/remove-one-user: ε_count (noisy count, if any) + ε_cells (coarse cells) = ε."""
        cells = f"{laplace_description(self.scale, self.noise)} on the {self.coarse_resolution}² coarse cells"
        if self.count_epsilon > 0.0:
            grid = f"Δ* from a noisy user count (Laplace at ε={self.count_epsilon:.6g}, sensitivity 1)"
        else:
            grid = f"Δ* from the public population estimate {self.population:g}"
        return user_level_guarantee(
            self.epsilon, mechanism=f"{grid}; {cells}, EMD projection",
            source="Ghazi et al. Appendix D, Theorem D.1 (basic composition of the count and the cells)",
        )


def coarse_level(epsilon: float, population: float, depth: int) -> int:
    """ℓ* = round(log₂ √(ε n̂)) = round(log₂(ε n̂) / 2), clipped to [0, ℓ] (n̂ below 1 counts as 1).

    Examples
    --------
    >>> coarse_level(1.0, 1000.0, 8)  # round(log2(1000) / 2) = round(4.98)
    5
    >>> coarse_level(1.0, 10**9, 8), coarse_level(0.1, 0.5, 8)  # clipped to [0, ℓ]
    (8, 0)
    """
    return min(depth, max(0, round(0.5 * math.log2(epsilon * max(population, 1.0)))))


def _grid_divergence(side: int) -> sparse.csr_matrix:
    """Node-edge incidence of the side × side grid graph (+1 at the tail, −1 at the head)."""
    idx = np.arange(side * side).reshape(side, side)
    tails = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    heads = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    e = tails.size
    data = np.concatenate([np.ones(e), -np.ones(e)])
    return sparse.csr_matrix((data, (np.concatenate([tails, heads]), np.tile(np.arange(e), 2))), shape=(side * side, e))


def emd_norm_projection(target: NDArray[np.float64]) -> NDArray[np.float64]:
    """argmin_{ŝ ≥ 0} ‖ŝ − target‖_EMD on a square grid of [0, 1)² (ℓ1 ground metric, α = 2).

    Examples
    --------
    A non-negative target is its own projection; negative mass is moved, not just clipped:

    >>> import numpy as np
    >>> t = np.array([[0.5, 0.0], [0.0, 0.5]])
    >>> bool(np.allclose(emd_norm_projection(t), t))
    True
    >>> s = emd_norm_projection(np.array([[1.0, -0.25], [0.0, 0.0]]))
    >>> bool(s.min() >= 0), s.round(6).tolist()
    (True, [[0.75, 0.0], [0.0, 0.0]])
    """
    side = target.shape[0]
    m = side * side
    div = _grid_divergence(side)
    e = div.shape[1]
    eye = sparse.identity(m, format="csr")
    a_eq = sparse.hstack([eye, -div, div, -eye, eye], format="csr")
    cost = np.concatenate([np.zeros(m), np.full(2 * e, 1.0 / side), np.full(2 * m, EMD_NORM_ALPHA)])
    res = optimize.linprog(cost, A_eq=a_eq, b_eq=target.ravel(), bounds=(0, None), method="highs")
    if res.status != 0:
        raise ConvergenceError(f"EMD-norm projection LP failed: {res.message}")
    return np.maximum(res.x[:m], 0.0).reshape(side, side)


def dense_aggregate(
    aggregate: UserAggregate,
    *,
    epsilon: float,
    population: float | None = None,
    count_share: float = 0.1,
    rng: RngLike = None,
    noise: str = "secure",
    simulation: bool = False,
) -> DenseRelease:
    """Appendix D: coarsen to Δ* ≈ √(ε n̂), Laplace on every coarse cell, project back in EMD norm.

    Parameters
    ----------
    aggregate : UserAggregate
        Per-user-bounded s.
    epsilon : float
        Total ε > 0.
    population : float or None
        A **public** estimate n̂ of the number of users (e.g. a census figure), used only to choose Δ*.
        ``None``: Δ* comes from a noisy count n + Lap(1/ε_count) that spends ``count_share`` of ε.
    count_share : float
        Share of ε for the noisy count when ``population`` is ``None`` (0 < share < 1).
    rng : Generator, int or None
        Randomness (``None`` with ``"secure"`` means the OS CSPRNG; a seed or Generator is refused
        with ``"secure"`` unless ``simulation=True``).
    noise : {"secure", "float"}
        ``"secure"`` (default): exact discrete Laplace on the 2^-36 grid. ``"float"``: IEEE-double
        Laplace, an explicit opt-in for simulation; its guarantee holds for idealised real-valued noise only.
    simulation : bool
        Allow a seed or Generator with ``noise="secure"`` (reproducible, hence not a private release).

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user. The noisy count (when used) is the Laplace mechanism with
    sensitivity 1 at ε_count; the coarse sums have ℓ1 sensitivity 1 (a user's distribution has mass
    ≤ 1) and get Laplace noise at ε_cells = ε − ε_count; Δ* is a function of the public estimate or
    of the noisy count only (post-processing), as are the projection and spreading; basic
    composition gives ε_count + ε_cells = ε. With ``noise="float"`` it holds for idealised
    real-valued noise only.

    Examples
    --------
    Without a public population estimate, 10 % of ε buys a noisy user count:

    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=4)
    >>> release = dense_aggregate(agg, epsilon=1.0)
    >>> round(release.count_epsilon, 12), round(release.cell_epsilon, 12), release.noise
    (0.1, 0.9, 'secure')
    >>> dense_aggregate(agg, epsilon=1.0, population=3).count_epsilon  # public estimate: all ε on cells
    0.0
    >>> dense_aggregate(agg, epsilon=1.0, rng=0, simulation=True).noise  # a seed only for simulations
    'secure'
    """
    agg = check_aggregate(aggregate)
    eps = check_real("epsilon", epsilon, low=0.0)
    source = noise_randomness(rng, noise, simulation=simulation)
    if population is not None:
        n_hat = check_real("population", population, low=0.0)
        eps_count, eps_cells = 0.0, eps
    else:
        share = Fraction(check_real("count_share", count_share, low=0.0, high=1.0))
        eps_count, eps_cells = split_epsilon(eps, [share, 1 - share])  # exact sum ≤ ε
        n_hat = noisy_user_count(agg, epsilon=eps_count, noise=noise, rng=source)
    ell_star = coarse_level(eps_cells, n_hat, agg.depth)
    coarse_sums = pyramid_levels(agg.fixed, start_level=ell_star)[0]
    level = laplace_level(coarse_sums, epsilon=eps_cells, noise=noise, rng=source)
    coarse = emd_norm_projection(level.values)
    block = agg.resolution >> ell_star
    fine = np.repeat(np.repeat(coarse, block, axis=0), block, axis=1) / float(block * block)
    return DenseRelease(estimate=fine, coarse=coarse, coarse_resolution=1 << ell_star, epsilon=eps,
                        cell_epsilon=eps_cells, scale=level.scale, count_epsilon=eps_count, population=n_hat,
                        noise=noise)

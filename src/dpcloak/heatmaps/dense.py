"""Dense EMD aggregation, Ghazi et al. Appendix D (Theorem D.1): error Õ(1/√(εn)) without sparsity.

1. Coarsen to Δ* = 2^{ℓ*} with ℓ* = round(log₂ √(εn)), clipped to [0, ℓ] (the proof's ℓ* = log √(εn)
   is not an integer in general; rounding keeps Δ* within a factor √2 of √(εn)).
2. s̃ = P_{ℓ*} s + ν, ν(c) ~ Lap(1/ε) on each of the Δ*² cells (ℓ1 sensitivity 1).
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

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, sparse

from dpcloak._rng import RngLike
from dpcloak._validation import check_real
from dpcloak.errors import ConvergenceError
from dpcloak.heatmaps.aggregate import UserLaplaceRelease, check_aggregate, laplace_level, noise_randomness
from dpcloak.heatmaps.data import UserAggregate
from dpcloak.heatmaps.pyramid import pyramid_levels

__all__ = ["DenseRelease", "dense_aggregate", "emd_norm_projection", "EMD_NORM_ALPHA"]

EMD_NORM_ALPHA = 2.0
"""α of the EMD norm: the ℓ1 diameter of [0, 1)² (§2.1)."""


@dataclass(frozen=True)
class DenseRelease(UserLaplaceRelease):
    """Result of Appendix D's algorithm.

    Attributes
    ----------
    estimate : ndarray, shape (Δ, Δ)
        ŝ spread to the input resolution (non-negative, unnormalised).
    coarse : ndarray, shape (Δ*, Δ*)
        ŝ on the coarse grid.
    coarse_resolution : int
        Δ*.
    epsilon, scale : float
        ε and the Laplace scale.
    noise : {"float", "secure"}
        How the coarse noise was drawn (:mod:`dpcloak.heatmaps.aggregate`).
    """

    estimate: NDArray[np.float64]
    coarse: NDArray[np.float64]
    coarse_resolution: int
    epsilon: float
    scale: float
    noise: str = "float"

    _source = "seed 003 Appendix D, Theorem D.1"

    def _noise_on(self) -> str:
        return f"the {self.coarse_resolution}² coarse cells, EMD projection"


def _grid_divergence(side: int) -> sparse.csr_matrix:
    """Node-edge incidence of the side × side grid graph (+1 at the tail, −1 at the head)."""
    idx = np.arange(side * side).reshape(side, side)
    tails = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    heads = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    e = tails.size
    data = np.concatenate([np.ones(e), -np.ones(e)])
    return sparse.csr_matrix((data, (np.concatenate([tails, heads]), np.tile(np.arange(e), 2))), shape=(side * side, e))


def emd_norm_projection(target: NDArray[np.float64]) -> NDArray[np.float64]:
    """argmin_{ŝ ≥ 0} ‖ŝ − target‖_EMD on a square grid of [0, 1)² (ℓ1 ground metric, α = 2)."""
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
    aggregate: UserAggregate, *, epsilon: float, rng: RngLike = None, noise: str = "float"
) -> DenseRelease:
    """Appendix D: coarsen to Δ* ≈ √(εn), Laplace on every coarse cell, project back in EMD norm.

    ``noise="secure"`` (**for deployment**, ``rng=None``: :mod:`secrets`) draws the coarse noise as
    exact discrete Laplace on the 2^-36 grid; the default ``"float"`` is numpy Laplace (experiments).

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user: the coarse sums have ℓ1 sensitivity 1 (a user's distribution has
    mass ≤ 1) and get Lap(1/ε) noise (or its exact discrete version); the projection and spreading
    are post-processing.
    """
    agg = check_aggregate(aggregate)
    eps = check_real("epsilon", epsilon, low=0.0)
    ell_star = min(agg.depth, max(0, round(math.log2(math.sqrt(eps * max(agg.n_users, 1))))))
    coarse_sums = pyramid_levels(agg.fixed, start_level=ell_star)[0]
    level = laplace_level(coarse_sums, epsilon=eps, noise=noise, rng=noise_randomness(rng, noise))
    coarse = emd_norm_projection(level.values)
    block = agg.resolution >> ell_star
    fine = np.repeat(np.repeat(coarse, block, axis=0), block, axis=1) / float(block * block)
    return DenseRelease(estimate=fine, coarse=coarse, coarse_resolution=1 << ell_star, epsilon=eps,
                        scale=level.scale, noise=noise)

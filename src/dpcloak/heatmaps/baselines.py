"""The [LXD+19] baseline of Ghazi et al. §4: Laplace noise on every cell, negatives zeroed, optional top-t %.

s̃ = s + ν with ν(c) ~ Lap(1/ε) for every one of the Δ² cells (a user's p_i has ℓ1 norm ≤ 1, so the
ℓ1 sensitivity of s is 1), then negative cells are set to 0. The thresholding variant keeps only the
⌈t/100 · Δ²⌉ largest noisy cells (t = ``top_percent``) and zeroes the rest. ``noise="secure"`` draws ν
as exact discrete Laplace on the 2^-36 fixed-point grid (:mod:`dpcloak.heatmaps.aggregate`: the
setting for deployment); the default ``"float"`` is numpy Laplace, for experiments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcloak._rng import RngLike
from dpcloak._validation import check_real
from dpcloak.heatmaps.aggregate import UserLaplaceRelease, check_aggregate, laplace_level, noise_randomness
from dpcloak.heatmaps.data import UserAggregate

__all__ = ["BaselineRelease", "laplace_cells"]


@dataclass(frozen=True)
class BaselineRelease(UserLaplaceRelease):
    """Noisy aggregate of the baseline (non-negative, unnormalised).

    Attributes
    ----------
    estimate : ndarray, shape (Δ, Δ)
        max(s + ν, 0), thresholded to the top cells when ``top_percent`` is set.
    epsilon, scale : float
        ε and the Laplace scale b = 1/ε used ((1 + 2^-36)/ε for ``"secure"``).
    kept : int
        Number of cells kept by the threshold (Δ² without it).
    noise : {"float", "secure"}
        How ν was drawn.

    Examples
    --------
    Returned by :func:`laplace_cells`:

    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=4)
    >>> release = laplace_cells(agg, epsilon=1.0, noise="float", rng=0)
    >>> isinstance(release, BaselineRelease), release.scale, release.kept  # Lap(1/ε) on all 16 cells
    (True, 1.0, 16)
    """

    estimate: NDArray[np.float64]
    epsilon: float
    scale: float
    kept: int
    noise: str = "float"

    _source = "Ghazi et al. §4 baseline; Lemma 2.2"

    def _noise_on(self) -> str:
        return "every cell [LXD+19]"


def laplace_cells(
    aggregate: UserAggregate,
    *,
    epsilon: float,
    top_percent: float | None = None,
    rng: RngLike = None,
    noise: str = "secure",
    simulation: bool = False,
) -> BaselineRelease:
    """Laplace on every cell with negatives zeroed ([LXD+19]), optionally keeping the top t % of cells.

    Parameters
    ----------
    aggregate : UserAggregate
        Per-user-bounded s.
    epsilon : float
        ε > 0.
    top_percent : float or None
        t ∈ (0, 100]: keep the ⌈tΔ²/100⌉ largest noisy cells.
    rng : Generator, int or None
        Randomness (with ``noise="secure"``, ``None`` means the OS CSPRNG; a seed or Generator is
        refused unless ``simulation=True``).
    noise : {"secure", "float"}
        ``"secure"`` (default): exact discrete Laplace on the 2^-36 grid. ``"float"``: numpy Laplace,
        an explicit opt-in for experiments; its guarantee holds for idealised real-valued noise only.
    simulation : bool
        Allow a seed or Generator with ``noise="secure"`` (reproducible, hence not a private release).

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-user: Laplace mechanism (or its exact discrete version) with
    sensitivity 1 on s; clipping and thresholding are post-processing.

    Examples
    --------
    >>> from dpcloak.heatmaps import bound_users
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=4)
    >>> release = laplace_cells(agg, epsilon=1.0, top_percent=25)  # exact noise from the OS CSPRNG
    >>> release.kept, int(np.count_nonzero(release.estimate)) <= 4, bool(np.all(release.estimate >= 0))
    (4, True, True)
    """
    agg = check_aggregate(aggregate)
    eps = check_real("epsilon", epsilon, low=0.0)
    cells = agg.resolution**2
    kept = cells
    if top_percent is not None:
        t = check_real("top_percent", top_percent, low=0.0, high=100.0, high_inclusive=True)
        kept = min(cells, max(1, math.ceil(t / 100.0 * cells)))
    level = laplace_level(agg.fixed, epsilon=eps, noise=noise, rng=noise_randomness(rng, noise, simulation=simulation))
    noisy = np.maximum(level.values, 0.0)
    if kept < cells:
        flat = noisy.ravel()
        drop = np.argpartition(flat, noisy.size - kept)[: noisy.size - kept]
        flat[drop] = 0.0
    return BaselineRelease(estimate=noisy, epsilon=eps, scale=level.scale, kept=kept, noise=noise)

"""Scoring a released heatmap against the true one with the four metrics of Ghazi et al. §4.

SIM, CC and KL compare the rendered heatmaps H^σ (§2.3) of the true and the released aggregates
(:mod:`dpcloak.metrics.heatmap`); EMD compares the rendered heatmaps too when ``emd_on="heatmap"`` and
the aggregates themselves when ``emd_on="aggregate"`` (the quantity Theorem 3.1 bounds; by Lemma B.1
the heatmap EMD is at most the aggregate EMD, up to border truncation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpcloak._validation import check_choice, check_real
from dpcloak.heatmaps.render import render
from dpcloak.metrics import heatmap as hm

__all__ = ["HeatmapScores", "DEFAULT_SIGMA", "score_heatmap"]

DEFAULT_SIGMA = 0.01
"""Rendering σ in units of [0, 1)² (≈ 2.6 pixels at Δ = 256); the paper does not state its σ."""


@dataclass(frozen=True)
class HeatmapScores:
    """SIM and CC (higher is better), KL and EMD (lower is better; in units of ``scale``, see :func:`score_heatmap`).

    Computed against the true aggregate, so they are **not private**: curator-side evaluation only.

    Examples
    --------
    >>> p = np.zeros((8, 8)); p[4, 4] = 1.0
    >>> scores = score_heatmap(p, p)
    >>> isinstance(scores, HeatmapScores), scores.sim, scores.emd
    (True, 1.0, 0.0)
    """

    sim: float
    cc: float
    kl: float
    emd: float


def score_heatmap(
    true: ArrayLike, estimate: ArrayLike, *, sigma: float = DEFAULT_SIGMA, emd_on: str = "aggregate",
    scale: float = 1.0,
) -> HeatmapScores:
    """The §4 metrics between the true and released aggregates (both Δ × Δ, non-negative).

    ``scale`` is the side of the square the grid covers (1: the unit square; ``Extent.size``: EMD in
    metres, ℓ1 ground metric). The scores use the true data: they are not private. CC is undefined
    (NaN) when either rendered map is constant, such as the uniform map.

    Examples
    --------
    All the mass one cell to the right: no overlap without smoothing, EMD one cell width:

    >>> p = np.zeros((8, 8)); p[4, 4] = 1.0
    >>> q = np.zeros((8, 8)); q[4, 5] = 1.0
    >>> scores = score_heatmap(p, q, sigma=0.0)
    >>> scores.sim, scores.emd  # EMD on the unit square: 1/8
    (0.0, 0.125)
    >>> score_heatmap(p, q, sigma=0.0, scale=800.0).emd  # an 800 m extent: metres
    100.0
    >>> score_heatmap(p, np.full((8, 8), 1 / 64)).cc  # the uniform map: no correlation is defined
    nan
    """
    where = check_choice("emd_on", emd_on, ("aggregate", "heatmap"))
    side = check_real("scale", scale, low=0.0)
    t = np.asarray(true, dtype=float)
    e = np.asarray(estimate, dtype=float)
    ht, he = render(t, sigma=sigma), render(e, sigma=sigma)
    emd = hm.emd(t, e, extent=(side, side)) if where == "aggregate" else hm.emd(ht, he, extent=(side, side))
    constant = not (np.ptp(ht) > 0 and np.ptp(he) > 0)  # e.g. the uniform map of a low-signal release
    cc = math.nan if constant else hm.pearson_cc(ht, he)
    return HeatmapScores(sim=hm.similarity(ht, he), cc=cc, kl=hm.kl_divergence(ht, he), emd=emd)

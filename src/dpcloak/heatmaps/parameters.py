"""Choosing the pyramid's parameters (w, start level, γ) from public quantities only.

Ghazi et al. fix w = 20 and γ = 1/√2 and do not tune further, since "a privacy analysis of the
tuning step has to be taken into account" (§4). Tuning on the private data would indeed leak; a
rule that reads only **public** inputs (ε, Δ and a public estimate n̂ of the number of users, such
as a census figure; never the data's own count) is post-processing of nothing and costs no privacy.

The rule (:func:`pyramid_parameters`)::

    w = clip(round(50 · √(ε n̂ / 2000)), 50, min(4^ℓ, 4096)),   start level q = ⌊log₂ √w⌋,   γ = 1/√2.

Why this shape: a cell kept by RECONSTRUCT is worth its noise when its count is well above the
per-level Laplace scale 1/ε_i, so the number of cells that can be kept grows with the signal-to-noise
ratio ε n̂ (Theorem 3.1's error O(√w/(εn)) against the w-sparse approximation error); the growth
is sublinear because the real cells' counts are unequal. The constants come from a calibration
sweep on **synthetic** data only (Appendix E.3 generator, 20 Gaussians, 10 points per user, Δ = 256,
n̂ ∈ {200, 1000}, ε ∈ {0.1, …, 10}, w ∈ {10, 20, 50, 100, 200, 400}): w = 50 had the lowest mean EMD
for ε n̂ ≤ 2000, and w ≈ 100–200 at ε n̂ = 5000–10000. The AIS vessel data were kept out of the
calibration and serve as its check (experiment ``heatmaps-wrule``). The cap 4096 bounds the LP
(O(wℓ) variables); 4^ℓ is the number of cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcloak._validation import check_real
from dpcloak.heatmaps.aggregate import default_start_level
from dpcloak.heatmaps.data import check_resolution

__all__ = ["PyramidParameters", "pyramid_parameters", "PAPER_W", "PAPER_GAMMA"]

PAPER_W = 20
"""w of the paper's experiments (§4), used when no public population estimate is given."""

PAPER_GAMMA = 2**-0.5
"""γ = 1/√2 (§4, footnote 5)."""

_W_FLOOR = 50
_W_CAP = 4096
_SNR_REFERENCE = 2000.0


@dataclass(frozen=True)
class PyramidParameters:
    """w, the first measured level and γ for :func:`~dpcloak.heatmaps.api.private_heatmap`, and where they came from.

    Examples
    --------
    Returned by :func:`pyramid_parameters`:

    >>> p = pyramid_parameters(epsilon=1.0, resolution=64, population=10_000)
    >>> isinstance(p, PyramidParameters), p.w, p.start_level, p.gamma
    (True, 112, 3, 0.7071067811865476)
    """

    w: int
    start_level: int
    gamma: float
    rule: str


def pyramid_parameters(*, epsilon: float, resolution: int, population: float) -> PyramidParameters:
    """The rule of the module docstring: w from ε and a **public** population estimate n̂.

    Parameters
    ----------
    epsilon : float
        Total ε > 0 of the release.
    resolution : int
        Δ = 2^ℓ.
    population : float
        Public estimate n̂ > 0 of the number of users (not computed from the data).

    Returns
    -------
    PyramidParameters
        Uses public inputs only, so choosing them costs no privacy.

    Examples
    --------
    >>> p = pyramid_parameters(epsilon=1.0, resolution=64, population=10_000)
    >>> p.w, p.start_level, p.gamma
    (112, 3, 0.7071067811865476)
    >>> p.rule
    'w = clip(round(50·√(ε n̂/2000)), 50, 4096) with public n̂ = 10000'
    >>> pyramid_parameters(epsilon=1.0, resolution=64, population=10_000_000).w > p.w  # more users: more cells
    True
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    ell = check_resolution(resolution)
    n_hat = check_real("population", population, low=0.0)
    cap = min(4**ell, _W_CAP)
    w = min(cap, max(_W_FLOOR, round(_W_FLOOR * math.sqrt(eps * n_hat / _SNR_REFERENCE))))
    return PyramidParameters(
        w=w, start_level=min(default_start_level(w), ell), gamma=PAPER_GAMMA,
        rule=f"w = clip(round(50·√(ε n̂/2000)), 50, {cap}) with public n̂ = {n_hat:g}",
    )

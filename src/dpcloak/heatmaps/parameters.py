"""Choosing the pyramid's parameters (w, start level, γ) from public quantities only.

Ghazi et al. fix w = 20 and γ = 1/√2 and do not tune further, since "a privacy analysis of the
tuning step has to be taken into account" (§4). Tuning on the private data would indeed leak; a
rule that reads only **public** inputs (ε, Δ and a public estimate n̂ of the number of users, such
as a census figure; never the data's own count) is post-processing of nothing and costs no privacy.

The rule (:func:`pyramid_parameters`), with the signal-to-noise ratio s = ε n̂::

    s < 50:   w = 400                                   (low signal: start at the 16 × 16 level)
    s ≥ 50:   w = ladder(max(50, 50 · √(s / 250)))      (w ∝ √(ε n̂))
    w ≤ min(4^ℓ, 4096),   start level q = ⌊log₂ √w⌋,   γ = 1/√2,

where ``ladder`` rounds to the nearest step (in log scale) of 50 · 2^(k/2) rounded to tens: 50, 70,
100, 140, 200, 280, 400, 570, 800, … (so that a release's w is one of a few values).

Why this shape. A cell kept by RECONSTRUCT is worth its noise when its count is well above the
per-level Laplace scale 1/ε_i; the error of Theorem 3.1 is O(√w/(εn)) against the w-sparse
approximation error, so the number of cells worth keeping grows with ε n̂, as √(ε n̂) over the
calibrated range. Below s ≈ 50 no fine level carries signal: the best of the fixed w is then the
largest, whose start level q = 4 (a 16 × 16 grid, all cells kept) gets the largest share of ε, i.e.
a coarse map; this is what the calibration showed on every synthetic family.

Calibration (synthetic data only, ``docs/figures/make_heatmaps_wrule.py --split calibration``, seed
stream disjoint from the evaluation): the Appendix E.3 mixture (20 Gaussians, sd ≤ 0.02) at n = 200
and n = 1000 and a more spread-out mixture (80 Gaussians, sd ≤ 0.05) at n = 200, Δ = 256, ε of
Figure 1, w ∈ {10, 20, 30, 50, 70, 100, 140, 200, 400}. At each s the w with the smallest worst-case
ratio to the best w over the three families (minimax: the rule does not know how concentrated the
data are) was read off, and the two-piece rule above is the smooth fit of those values (s = 20:
400; 100–200: 50–70; 400–1000: 70–100; 2000: 140; 5000–10⁴: 140–200). The AIS vessel data were not
used for calibration and serve, with fresh synthetic draws, as the check (``docs/heatmaps.md``).
The cap 4096 bounds the LP (O(wℓ) variables); 4^ℓ is the number of cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpcloak._validation import check_real
from dpcloak.heatmaps.aggregate import default_start_level
from dpcloak.heatmaps.data import check_resolution

__all__ = ["PyramidParameters", "pyramid_parameters", "ladder", "PAPER_W", "PAPER_GAMMA"]

PAPER_W = 20
"""w of the paper's experiments (§4), used when no public population estimate is given."""

PAPER_GAMMA = 2**-0.5
"""γ = 1/√2 (§4, footnote 5)."""

_W_FLOOR = 50
_W_LOW_SIGNAL = 400
_W_CAP = 4096
_LOW_SIGNAL = 50.0
_SNR_REFERENCE = 250.0


def ladder(w: float) -> int:
    """The step of 50 · 2^(k/2) (k ≥ 0, rounded to tens) nearest to ``w`` ≥ 50 in log scale.

    Examples
    --------
    >>> [ladder(w) for w in (50, 55, 60, 100, 112, 130)]  # steps 50, 50·√2 ≈ 70, 100, 140, ...
    [50, 50, 70, 100, 100, 140]
    >>> ladder(60) == 70  # 60 is nearer 50·√2 ≈ 70.7 than 50 on a log scale
    True
    """
    k = max(0, round(2.0 * math.log2(w / _W_FLOOR)))
    return round(_W_FLOOR * 2.0 ** (k / 2) / 10.0) * 10


@dataclass(frozen=True)
class PyramidParameters:
    """w, the first measured level and γ for :func:`~dpcloak.heatmaps.api.private_heatmap`, and where they came from.

    Examples
    --------
    Returned by :func:`pyramid_parameters`:

    >>> p = pyramid_parameters(epsilon=1.0, resolution=64, population=10_000)
    >>> isinstance(p, PyramidParameters), p.w, p.start_level, p.gamma
    (True, 280, 4, 0.7071067811865476)
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
    >>> p.w, p.start_level, p.gamma  # ε n̂ = 10⁴: 50·√40 ≈ 316, whose nearest step is 280
    (280, 4, 0.7071067811865476)
    >>> p.rule
    'ε n̂ = 10000: w = ladder(max(50, 50·√(ε n̂/250))), at most 4096, with public n̂ = 10000'
    >>> low = pyramid_parameters(epsilon=0.1, resolution=64, population=200)  # ε n̂ = 20 < 50: coarse start
    >>> low.w, low.start_level
    (400, 4)
    >>> pyramid_parameters(epsilon=1.0, resolution=64, population=10_000_000).w > p.w  # more users: more cells
    True
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    ell = check_resolution(resolution)
    n_hat = check_real("population", population, low=0.0)
    cap = min(4**ell, _W_CAP)
    snr = eps * n_hat
    if snr < _LOW_SIGNAL:
        w, how = _W_LOW_SIGNAL, f"ε n̂ = {snr:g} < {_LOW_SIGNAL:g}: w = {_W_LOW_SIGNAL} (coarse start)"
    else:
        w = ladder(max(_W_FLOOR, _W_FLOOR * math.sqrt(snr / _SNR_REFERENCE)))
        how = f"ε n̂ = {snr:g}: w = ladder(max(50, 50·√(ε n̂/250)))"
    w = min(cap, w)
    return PyramidParameters(
        w=w, start_level=min(default_start_level(w), ell), gamma=PAPER_GAMMA,
        rule=f"{how}, at most {cap}, with public n̂ = {n_hat:g}",
    )

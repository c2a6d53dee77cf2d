"""Choosing the pyramid's parameters (w, start level, γ) from public quantities only.

Ghazi et al. fix w = 20 and γ = 1/√2 and do not tune further, since "a privacy analysis of the
tuning step has to be taken into account" (§4). Tuning on the private data would indeed leak; a
rule that reads only **public** inputs (ε, Δ and a public estimate n̂ of the number of users, such
as a census figure; never the data's own count) is post-processing of nothing and costs no privacy.

The rule (:func:`pyramid_parameters`), with the signal-to-noise ratio s = ε n̂::

    s < 50:   w = 400                                     (low signal: start at the 16 × 16 level)
    s ≥ 50:   w = max(50, 80 · (s / 1000)^0.6), rounded to a multiple of 10
    w ≤ min(4^ℓ, 4096),   start level q = ⌊log₂ √w⌋,   γ = 1/√2.

So w = 50 up to s ≈ 530, 80 at s = 1000, 120 at s = 2000, 320 at s = 10⁴.

Why this shape. A cell kept by RECONSTRUCT is worth its noise when its count is well above the
per-level Laplace scale 1/ε_i; the error of Theorem 3.1 is O(√w/(εn)) against the w-sparse
approximation error, so the number of cells worth keeping grows with ε n̂. Below s ≈ 50 no fine level
carries signal: the best of the fixed w is then the largest, whose start level q = 4 (a 16 × 16 grid,
all cells kept) gets the largest share of ε, i.e. a coarse map.

Calibration (``docs/figures/make_heatmaps_wrule.py --split calibration``; n = 200, Δ = 256): three
families, the Appendix E.3 mixture (20 Gaussians, sd ≤ 0.02), a spread-out mixture (80 Gaussians,
sd ≤ 0.05) and 200-vessel draws of the public AIS data, pooled over seed streams 1–3 (seed stream 3:
16 trials at ε n̂ = 400, 1000, 2000 with w ∈ {20, 50, 60, 70, 80, 100, 120, 140, 200}; streams 1 and
2, those of an earlier rule, 4–45 trials per point from ε n̂ = 100). At each s, the worst ratio over
the families of a w's mean EMD to the best w's was taken (the rule cannot see how concentrated the
data are) and the rule is a monotone power-law fit: its w is within 10 % of the best w on every
family at every calibrated s (worst-family ratio 1.08 at s = 100, 1.05 at 200, 1.10 at 400, 1.08 at
1000, 1.06 at 2000; the minimax w itself is 80 at s = 200–400, 70 at 1000 and 120 at 2000, but a w
that falls and rises again with s is not a rule one can defend on 16–61 trials per point). The final
check uses a fourth seed stream (``docs/heatmaps.md``).
The cap 4096 bounds the LP (O(wℓ) variables); 4^ℓ is the number of cells.
"""

from __future__ import annotations

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
_W_LOW_SIGNAL = 400
_W_CAP = 4096
_LOW_SIGNAL = 50.0
_W_AT_REFERENCE = 80.0
_SNR_REFERENCE = 1000.0
_EXPONENT = 0.6


@dataclass(frozen=True)
class PyramidParameters:
    """w, the first measured level and γ for :func:`~dpcloak.heatmaps.api.private_heatmap`, and where they came from.

    Examples
    --------
    Returned by :func:`pyramid_parameters`:

    >>> p = pyramid_parameters(epsilon=1.0, resolution=64, population=10_000)
    >>> isinstance(p, PyramidParameters), p.w, p.start_level, p.gamma
    (True, 320, 4, 0.7071067811865476)
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
    >>> p.w, p.start_level, p.gamma  # ε n̂ = 10⁴: 80 · 10^0.6 ≈ 318.5, to tens 320
    (320, 4, 0.7071067811865476)
    >>> p.rule
    'ε n̂ = 10000: w = max(50, 80·(ε n̂/1000)^0.6) to tens, at most 4096, with public n̂ = 10000'
    >>> pyramid_parameters(epsilon=1.0, resolution=64, population=500).w  # 80 · 0.5^0.6 ≈ 52.8, to tens 50
    50
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
        raw = min(float(_W_CAP), _W_AT_REFERENCE * (snr / _SNR_REFERENCE) ** _EXPONENT)  # finite even if s = inf
        w = 10 * round(max(_W_FLOOR, raw) / 10)
        how = f"ε n̂ = {snr:g}: w = max(50, 80·(ε n̂/1000)^0.6) to tens"
    w = min(cap, w)
    return PyramidParameters(
        w=w, start_level=min(default_start_level(w), ell), gamma=PAPER_GAMMA,
        rule=f"{how}, at most {cap}, with public n̂ = {n_hat:g}",
    )

"""Choosing the pyramid's parameters (w, measured levels, γ) from public quantities or a small share of ε.

Ghazi et al. fix w = 20 and γ = 1/√2 and do not tune further, since "a privacy analysis of the
tuning step has to be taken into account" (§4). Tuning on the private data would indeed leak; the
rule here (:func:`pyramid_parameters`) reads only ε, Δ and an estimate n̂ of the number of users that
is either **public** (a census figure, ``population=``; never the data's own count: free) or a
**noisy count** released with :data:`COUNT_SHARE` = 1/10 of ε (``population=None``, the default of
:func:`~dpcloak.heatmaps.api.private_heatmap`; :func:`~dpcloak.heatmaps.aggregate.noisy_user_count`,
exact discrete Laplace from the OS CSPRNG), as the dense method does, lowered by one noise scale
1/ε_count (a lower estimate: it exceeds the true count with probability e^-1/2 ≈ 18 %; at n = 20–50,
ε = 0.2 the raw noisy count lifted ε n̂ above 16 often enough to lose to the uniform map by up to 7 %).
The rule, with the signal-to-noise ratio s = ε n̂ (ε the budget left for the map)::

    finest level  L = round(log₂ √s) = round(log₄ s), clipped to [0, ℓ]   (4^L ≈ s cells);
                  L = 0 (the uniform map) when s < 16
    w             = max(50, 80 · (s / 1000)^0.6), rounded to a multiple of 10,
                    at most min(4^L, 4096)
    start level   q = min(⌊log₂ √w⌋, L),   γ = 1/√2.

At L < ℓ the pyramid is released on the 2^L × 2^L grid (exact block sums,
:func:`~dpcloak.heatmaps.aggregate.coarsen_aggregate`) and each coarse cell's mass is spread over its
pixels: at low signal the map **coarsens** (fewer levels, and w shrinks with the 4^L cells) instead of
spreading noise over fine cells. At s < 16 the release is the uniform map: there a 2 × 2 or 4 × 4 map
was up to 22 % worse than uniform on the synthetic mixture (n = 20 and 50, ε = 0.2 and 0.5, 12 trials),
while from s ≈ 20 on it was better (0.71–0.89 of the uniform map's EMD).

Why this shape. A level is worth measuring when its cells' counts are above its Laplace scale; with n̂
users spread over 4^L cells at scale ≈ 1/ε that holds up to 4^L ≈ ε n̂, the Δ* = √(ε n̂) of the dense
method (Ghazi et al., Appendix D; :func:`~dpcloak.heatmaps.dense.coarse_level`). The error of
Theorem 3.1 is O(√w/(εn)) against the w-sparse approximation error, so the number of cells worth
keeping grows with s (the w formula, calibrated for issue 16 on the Appendix E.3 mixture, a spread-out
mixture and AIS draws at Δ = 256).

Calibration of L (issue 32; calibration seeds 100–102, n = 200 and 50, Δ = 128, the Appendix E.3
mixture and AIS draws; the validation sweep ``benchmarks/bench_heatmap_defaults.py`` uses other seeds):
at ε n̂ = 40, 100, 200, 400, 1000 the best (L, w) had L = 3, 3, 4, 4–5, 5 (round(log₄ s) = 3, 3, 4, 4, 5),
and at L = round(log₄ s) the EMD was 0.6–0.95 of the best full-depth fixed w at ε n̂ ≤ 1000; at
ε n̂ = 10 the uniform map beat every full-depth w. The cap 4096 bounds the LP (O(wℓ) variables).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpcloak._validation import check_real
from dpcloak.heatmaps.aggregate import default_start_level
from dpcloak.heatmaps.data import check_resolution
from dpcloak.heatmaps.dense import coarse_level

__all__ = ["PyramidParameters", "pyramid_parameters", "PAPER_W", "PAPER_GAMMA", "COUNT_SHARE"]

PAPER_W = 20
"""w of the paper's experiments (§4)."""

PAPER_GAMMA = 2**-0.5
"""γ = 1/√2 (§4, footnote 5)."""

COUNT_SHARE = Fraction(1, 10)
"""Share of ε spent on a noisy user count when no public population estimate is given (exact rational)."""

_W_FLOOR = 50
_MIN_SIGNAL = 16.0
_W_CAP = 4096
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
    >>> isinstance(p, PyramidParameters), p.w, p.start_level, p.depth, p.gamma
    (True, 320, 4, 6, 0.7071067811865476)

    Attributes
    ----------
    w : int
        Cells kept per level by RECONSTRUCT.
    start_level, depth : int
        First and last measured level; ``depth`` < ℓ: the map is released on the 2^depth grid.
    gamma : float
        Budget decay rate γ.
    rule : str
        How they were chosen (published with the release).
    """

    w: int
    start_level: int
    depth: int
    gamma: float
    rule: str


def pyramid_parameters(
    *, epsilon: float, resolution: int, population: float, source: str = "public"
) -> PyramidParameters:
    """The rule of the module docstring: w and the measured levels from ε and an estimate n̂ of the users.

    Parameters
    ----------
    epsilon : float
        The ε > 0 the map's noise will spend.
    resolution : int
        Δ = 2^ℓ.
    population : float
        Estimate n̂ > 0 of the number of users: public, or a noisy count (never the exact count).
    source : str
        What n̂ is, for the ``rule`` text (``"public"`` or ``"lower noisy"``).

    Returns
    -------
    PyramidParameters
        A function of ε, Δ and n̂ only (post-processing of n̂).

    Examples
    --------
    >>> p = pyramid_parameters(epsilon=1.0, resolution=64, population=10_000)
    >>> p.w, p.start_level, p.depth, p.gamma  # ε n̂ = 10⁴: 80 · 10^0.6 ≈ 318.5, to tens 320; log₄ 10⁴ ≈ 6.6
    (320, 4, 6, 0.7071067811865476)
    >>> p.rule.split(": ")[0]  # the rule text is published with the release
    'ε n̂ = 10000 (public n̂ = 10000)'
    >>> "finest level L = 6 of 6" in p.rule and "w = 320" in p.rule
    True
    >>> low = pyramid_parameters(epsilon=1.0, resolution=64, population=200)  # ε n̂ = 200: a 16 × 16 map
    >>> low.w, low.start_level, low.depth
    (50, 2, 4)
    >>> tiny = pyramid_parameters(epsilon=0.1, resolution=64, population=10)  # ε n̂ = 1: the uniform map
    >>> tiny.w, tiny.start_level, tiny.depth
    (1, 0, 0)
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    ell = check_resolution(resolution)
    n_hat = check_real("population", population, low=0.0)
    snr = eps * n_hat
    depth = coarse_level(eps, n_hat, ell) if snr >= _MIN_SIGNAL else 0
    raw = min(float(_W_CAP), _W_AT_REFERENCE * (snr / _SNR_REFERENCE) ** _EXPONENT)  # finite even if s = inf
    w = min(4**depth, _W_CAP, 10 * round(max(_W_FLOOR, raw) / 10))
    return PyramidParameters(
        w=w, start_level=min(default_start_level(w), depth), depth=depth, gamma=PAPER_GAMMA,
        rule=(f"ε n̂ = {snr:g} ({source} n̂ = {n_hat:g}): finest level L = {depth} of {ell} "
              f"(round(log₄ ε n̂), 0 below ε n̂ = 16), w = {w} (max(50, 80·(ε n̂/1000)^0.6) to tens, "
              "at most min(4^L, 4096))"),
    )

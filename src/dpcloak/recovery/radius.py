"""Radius policies for the data-fit ball of basis pursuit denoising.

Algorithm 1 of Gilbert & McMillan constrains ``‖M f − ỹ‖₂ ≤ σ√m`` so that the true sources ``f₀`` are
feasible "with high probability" (Lemma 6). For Gaussian noise ``ν ~ N(0, σ² I_m)``,
``‖ν‖₂²/σ²`` is χ² with ``m`` degrees of freedom, whose median is ≈ ``m − 2/3``: the paper's radius
σ√m excludes ``f₀`` in about half of the draws, and with a low-rank, box-constrained model the
ball is then often out of reach altogether. The policies here make the choice explicit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.special import chdtri

from dpcloak._validation import check_choice, check_int, check_probability, check_real
from dpcloak.errors import InvalidParameterError

__all__ = ["RADIUS_POLICIES", "RadiusChoice", "choose_radius"]

#: ``"paper"``: σ√m (Gilbert & McMillan Algorithm 1). ``"chi2"``: the exact χ²_m quantile,
#: ``P(‖ν‖ > r) = failure_probability``. ``"lemma6"``: the Hsu–Kakade–Zhang tail bound of Gilbert & McMillan
#: Lemma 6, ``r² = σ²(m + 2√(m τ) + 2τ)`` with ``τ = log(1/failure_probability)`` (conservative).
RADIUS_POLICIES = ("chi2", "lemma6", "paper")


@dataclass(frozen=True)
class RadiusChoice:
    """A data-fit radius and the policy that produced it (``"explicit"`` when given directly).

    Examples
    --------
    >>> choose_radius(m=50, sigma=1.0, policy="paper")  # σ √m
    RadiusChoice(radius=7.0710678118654755, policy='paper', failure_probability=None)
    """

    radius: float
    policy: str
    failure_probability: float | None


def choose_radius(
    *,
    m: int,
    sigma: float | None = None,
    radius: float | None = None,
    policy: str = "chi2",
    failure_probability: float = 0.05,
) -> RadiusChoice:
    """The radius of the ball ``‖M f − ỹ‖₂ ≤ r`` from the noise level or given explicitly.

    Parameters
    ----------
    m : int
        Number of readings.
    sigma : float, optional
        Standard deviation of the i.i.d. Gaussian noise on each reading, > 0.
    radius : float, optional
        Explicit radius, ≥ 0. Exactly one of ``sigma`` and ``radius`` must be given.
    policy : {"chi2", "lemma6", "paper"}, default "chi2"
        How to turn ``sigma`` into a radius (ignored with an explicit radius):

        * ``"chi2"`` — ``r = σ √(F⁻¹_{χ²_m}(1 − β))``: the true sources are feasible with
          probability exactly ``1 − β``;
        * ``"lemma6"`` — ``r = σ √(m + 2√(m log(1/β)) + 2 log(1/β))`` (Gilbert & McMillan Lemma 6, Hsu et
          al. 2012): probability at least ``1 − β``, slightly larger than ``"chi2"``;
        * ``"paper"`` — ``r = σ√m`` (Gilbert & McMillan Algorithm 1): feasible only about half the time.
    failure_probability : float, default 0.05
        ``β`` in (0, 1) for ``"chi2"`` and ``"lemma6"``.

    Examples
    --------
    >>> choose_radius(m=50, sigma=1.0, policy="paper").radius
    7.0710678118654755
    """
    m = check_int("m", m, minimum=1)
    if (sigma is None) == (radius is None):
        raise InvalidParameterError(
            "give exactly one of sigma (noise standard deviation) and radius (explicit data-fit radius); "
            f"got sigma={sigma!r}, radius={radius!r}",
            parameter="sigma", allowed="exactly one of sigma and radius", got=sigma
        )
    if radius is not None:
        r = check_real("radius", radius, low=0.0, low_inclusive=True)
        return RadiusChoice(radius=r, policy="explicit", failure_probability=None)
    s = check_real("sigma", sigma, low=0.0)
    policy = check_choice("radius_policy", policy, RADIUS_POLICIES)
    if policy == "paper":
        return RadiusChoice(radius=s * math.sqrt(m), policy=policy, failure_probability=None)
    beta = check_probability("failure_probability", failure_probability)
    if policy == "chi2":
        r = s * math.sqrt(float(chdtri(m, beta)))  # the χ²_m upper quantile (scipy.special: light import)
    else:
        tau = math.log(1.0 / beta)
        r = s * math.sqrt(m + 2.0 * math.sqrt(m * tau) + 2.0 * tau)
    return RadiusChoice(radius=r, policy=policy, failure_probability=beta)

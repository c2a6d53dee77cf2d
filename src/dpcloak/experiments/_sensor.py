"""Shared pieces of the sensor-privacy experiments (Gilbert & McMillan section 5, thesis chapter 8).

Set-up of Gilbert & McMillan section 5: sources at ``i/n``, sensors at ``j/m``, μ = 1/2, one source at 0.5
when ``k = 1``, otherwise ``k`` distinct uniformly random locations, unit intensities; EMD between
ℓ1-normalised vectors; Δ2 computed exactly for each trial.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak.experiments.plotting import loglog_slope, summarise
from dpcloak.experiments.registry import Row
from dpcloak.models import HeatKernel1D, LinearModel, heat_kernel_1d
from dpcloak.privacy.sensitivity import l2_sensitivity

__all__ = [
    "MU", "RADIUS_POLICY", "estimate_string", "heat_model", "panel_slope", "parse_estimate", "placed_sources",
    "recover", "sources", "theory_columns",
]

#: Diffusion constant of every experiment in Gilbert & McMillan (section 5).
MU = 0.5

#: Default data-fit radius of Algorithm 1 (:mod:`dpcloak.recovery.radius`): ``"chi2"``, the exact
#: χ²_m quantile at which ``f0`` is feasible with probability 0.95 — what Gilbert & McMillan's Lemma 6 argues
#: ``σ√m`` achieves. The printed ``σ√m`` (``"paper"``) is below the noise norm about half the time;
#: Figure 1 runs both. Sweeps record the policy in a ``radius_policy`` column; infeasible trials are
#: flagged and kept (the solver then returns the least-ℓ1 point of smallest attainable residual).
RADIUS_POLICY = "chi2"


@functools.lru_cache(maxsize=32)
def heat_model(n: int, m: int, t: float) -> tuple[HeatKernel1D, float]:
    """The 1-D heat kernel of the paper (μ = 1/2) and its exact Δ2 (cached per worker process)."""
    model = heat_kernel_1d(n, m, t, mu=MU)
    return model, l2_sensitivity(model)


def sources(n: int, k: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``f0``: a unit source at 0.5 if ``k = 1`` (index ``n/2 − 1``: location ``(n/2)/n``), else ``k``
    distinct uniformly random locations with unit intensity (Gilbert & McMillan section 5)."""
    f0 = np.zeros(n)
    if k == 1:
        f0[n // 2 - 1] = 1.0
    else:
        f0[rng.choice(n, size=k, replace=False)] = 1.0
    return f0


def placed_sources(n: int, locations: Sequence[float]) -> NDArray[np.float64]:
    """Unit sources at the grid points ``i/n`` nearest to the given locations in (0, 1]."""
    f0 = np.zeros(n)
    f0[[min(n, max(1, round(x * n))) - 1 for x in locations]] = 1.0
    return f0


def estimate_string(x: NDArray[np.float64]) -> str:
    """The non-negligible entries of an estimate as ``"index:value;..."`` (kept in data.csv for profile plots)."""
    keep = np.flatnonzero(x > 1e-6 * max(float(x.max()), 1e-300))
    return ";".join(f"{i}:{x[i]:.5g}" for i in keep)


def parse_estimate(text: str, n: int) -> NDArray[np.float64]:
    """Inverse of :func:`estimate_string`."""
    x = np.zeros(n)
    for item in filter(None, str(text).split(";")):
        i, v = item.split(":")
        x[int(i)] = float(v)
    return x


def recover(
    model: LinearModel, f0: NDArray[np.float64], y_noisy: NDArray[np.float64], sigma: float, radius_policy: str,
    **solver_options: Any,
) -> dict[str, Any]:
    """Algorithm 1 (:func:`dpcloak.recovery.bpdn` with ``radius_policy``) and the EMD to ``f0``.

    ``solver_options`` go to :func:`~dpcloak.recovery.bpdn` (e.g. ``rank_rtol``).

    Returns the row fields ``emd``, ``l1_error`` and ``l2_error`` (between the ℓ1-normalised
    vectors), ``solve_time``, ``converged``, ``infeasible``, ``radius``, ``radius_policy``,
    ``zero_estimate``, ``estimate_mass`` and ``estimate`` (:func:`estimate_string`).

    When the estimate is identically zero (the zero vector is feasible whenever ``‖ỹ‖₂ ≤ radius``,
    which happens with probability up to about 1/2 when the signal is small against the noise), the
    normalised estimate of Gilbert & McMillan is undefined. The analyst then knows nothing, so the errors
    are measured against the uniform distribution (the uninformed guess) and the trial is flagged
    ``zero_estimate`` — kept and counted in the report, never dropped.
    """
    from dpcloak.metrics import emd
    from dpcloak.recovery import bpdn

    result = bpdn(model, y_noisy, sigma=sigma, radius_policy=radius_policy, **solver_options)
    x = np.clip(np.asarray(result.x, dtype=float), 0.0, None)
    mass = float(x.sum())
    zero = mass <= 1e-12 * max(1.0, float(f0.sum()))
    p, q = f0 / f0.sum(), (np.full_like(x, 1.0 / x.size) if zero else x / mass)
    return {
        "emd": float(emd(p, q, model.domain)),
        "l1_error": float(np.abs(p - q).sum()),
        "l2_error": float(np.linalg.norm(p - q)),
        "solve_time": result.solve_time,
        "converged": bool(result.converged),
        "infeasible": not result.feasible,
        "radius": float(result.radius),
        "zero_estimate": bool(zero),
        "estimate_mass": mass,
        "estimate": estimate_string(x),
    }


#: Separation margin used for one source: Theorem 8's assumption 3 is vacuous and the interference
#: term ``k e^{−A²/4T}/√(2π)`` is absent, i.e. ``A → ∞``; any A ≫ √T gives that numerically.
SINGLE_SOURCE_A = 100.0


def theory_columns(f0: NDArray[np.float64], *, m: int, t: float, sigma: float, delta2: float,
                   epsilon: float | None = None, delta: float | None = None) -> dict[str, Any]:
    """Theorem 8 (or Corollary 9 when ``epsilon``/``delta`` are given) and Theorem 10 at a trial's parameters.

    ``upper_shape`` is the bound's bracket with constant 1 (the papers give no constant; NaN where
    an assumption fails, named in ``upper_reason``); ``A`` is the largest margin assumption 3 allows
    for the trial's sources. ``lower_explicit`` is Theorem 10 with the explicit Lipschitz constant
    ``L = n Δ2`` (fully explicit, minimax over all estimators and all f0), with its test vectors on
    the trial's grid ``i/n``; NaN with ``lower_applies`` false where they do not fit on it.
    """
    from dpcloak.recovery.bounds import corollary9_bound, theorem8_bound, theorem10_lower_bound

    n = f0.size
    where = np.flatnonzero(f0) / n
    k = int(where.size)
    separation = float(np.diff(np.sort(where)).min()) if k > 1 else None
    T = MU * t
    A = SINGLE_SOURCE_A if separation is None else max((separation - np.sqrt(2 * T)) / 2, 1e-12)
    if epsilon is None or delta is None:
        upper = theorem8_bound(m=m, t=t, sigma=sigma, k=k, A=A, separation=separation, mu=MU)
    else:
        upper = corollary9_bound(n=n, m=m, t=t, epsilon=epsilon, delta=delta, k=k, A=A, separation=separation, mu=MU)
    lower = theorem10_lower_bound(m=m, t=t, sigma=sigma, mu=MU, lipschitz=n * delta2, n=n)
    return {"upper_shape": upper.value, "upper_applies": upper.applies, "upper_reason": upper.reason if not
            upper.applies else "", "lower_explicit": lower.value, "lower_applies": lower.applies}


def panel_slope(rows: Sequence[Row], panel: str, x: str, y: str, *, points: slice = slice(None)) -> float:
    """Fitted log–log exponent of the per-``x`` mean of ``y`` in one panel (over ``points``)."""
    s = summarise(rows, x, y, panel=panel)
    return loglog_slope(s.x[points], s.mean[points])

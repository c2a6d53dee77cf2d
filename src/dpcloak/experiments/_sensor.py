"""Shared pieces of the sensor-privacy experiments (seed 000 section 5, thesis chapter 8).

Set-up of seed 000 section 5: sources at ``i/n``, sensors at ``j/m``, μ = 1/2, one source at 0.5
when ``k = 1``, otherwise ``k`` distinct uniformly random locations, unit intensities; EMD between
ℓ1-normalised vectors; Δ2 computed exactly for each trial.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak.experiments.plotting import loglog_slope, summarise
from dpcloak.experiments.registry import Row
from dpcloak.models import HeatKernel1D, LinearModel, heat_kernel_1d
from dpcloak.privacy.sensitivity import l2_sensitivity

__all__ = ["MU", "heat_model", "panel_slope", "recover", "sources"]

#: Diffusion constant of every experiment in seed 000 (section 5).
MU = 0.5


@functools.lru_cache(maxsize=32)
def heat_model(n: int, m: int, t: float) -> tuple[HeatKernel1D, float]:
    """The 1-D heat kernel of the paper (μ = 1/2) and its exact Δ2 (cached per worker process)."""
    model = heat_kernel_1d(n, m, t, mu=MU)
    return model, l2_sensitivity(model)


def sources(n: int, k: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``f0``: a unit source at 0.5 if ``k = 1`` (index ``n/2 − 1``: location ``(n/2)/n``), else ``k``
    distinct uniformly random locations with unit intensity (seed 000 section 5)."""
    f0 = np.zeros(n)
    if k == 1:
        f0[n // 2 - 1] = 1.0
    else:
        f0[rng.choice(n, size=k, replace=False)] = 1.0
    return f0


def recover(model: LinearModel, f0: NDArray[np.float64], y_noisy: NDArray[np.float64], sigma: float,
            **bpdn_options: Any) -> dict[str, Any]:
    """Algorithm 1 on ``ỹ`` with noise level ``σ`` and the EMD of the result to ``f0``.

    Returns the row fields ``emd``, ``solve_time``, ``converged``, ``infeasible``, ``radius``,
    ``radius_policy``, ``estimate_mass``. When the estimate is identically zero (the zero vector is
    feasible when ``‖ỹ‖₂ ≤ radius``), the normalised EMD is undefined: ``emd`` is NaN and the
    trial is counted as ``zero_estimate`` in the data (never dropped silently).
    """
    from dpcloak.metrics import emd
    from dpcloak.recovery import bpdn

    start = time.perf_counter()
    result = bpdn(model, y_noisy, sigma=sigma, **bpdn_options)
    elapsed = time.perf_counter() - start
    x = np.clip(np.asarray(result.x, dtype=float), 0.0, None)
    mass = float(x.sum())
    zero = mass <= 1e-12 * max(1.0, float(f0.sum()))
    return {
        "emd": math.nan if zero else float(emd(f0, x, model.domain)),
        "solve_time": elapsed,
        "converged": bool(result.converged),
        "infeasible": bool(getattr(result, "infeasible", False)),
        "radius": float(result.radius),
        "radius_policy": str(getattr(result, "radius_policy", bpdn_options.get("radius_policy", "default"))),
        "zero_estimate": bool(zero),
        "estimate_mass": mass,
    }


def panel_slope(rows: Sequence[Row], panel: str, x: str, y: str, *, points: slice = slice(None)) -> float:
    """Fitted log–log exponent of the per-``x`` mean of ``y`` in one panel (over ``points``)."""
    s = summarise(rows, x, y, panel=panel)
    return loglog_slope(s.x[points], s.mean[points])

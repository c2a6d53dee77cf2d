"""EMD on a line through cumulative sums (Gilbert & McMillan, Definition 7 on the points ``i/n``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["line_emd"]


def line_emd(p: NDArray[np.float64], q: NDArray[np.float64], spacing: float) -> float:
    r"""``EMD = h Σ_{i<n} |P_i − Q_i|`` for equal-mass ``p, q`` on equispaced points (spacing ``h``).

    ``P`` and ``Q`` are the cumulative sums; on a line every unit of mass crossing the gap between
    points ``i`` and ``i+1`` pays ``h`` and exactly ``|P_i − Q_i|`` must cross it, so this is exact.
    """
    cdf = np.cumsum(p - q)[:-1]
    return float(spacing * np.sum(np.abs(cdf)))

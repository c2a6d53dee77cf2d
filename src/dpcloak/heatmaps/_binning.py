"""Compiled inner loops of per-user bounding (numba): one pass to count each user's points, one pass to add
each point's fixed-point weight to its cell, with the range check fused in. No temporaries per point.

``ids[k] - offset`` is point k's index into the per-user tables (``counts``, ``weights``): the raw
integer ids shifted by their minimum, or codes from :func:`numpy.unique` with ``offset = 0``. The callers
(:mod:`dpcloak.heatmaps.data`, :mod:`dpcloak.heatmaps.distributed`) guarantee that every index lies in
its table, so the loops index with unsigned integers (no negative-index wrap-around test per access).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def id_range(ids: NDArray[np.int64]) -> tuple[int, int]:
    """(min, max) of a non-empty id array in one pass (numpy's ``min`` and ``max`` read it twice)."""
    lo = ids[0]
    hi = ids[0]
    for k in range(1, ids.size):
        v = ids[k]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@njit(cache=True, nogil=True)
def count_ids(ids: NDArray[np.int64], offset: int, counts: NDArray[np.int64]) -> None:
    """``counts[ids[k] - offset] += 1`` for every point k."""
    for k in range(ids.size):
        counts[np.uint64(ids[k] - offset)] += 1


@njit(cache=True, nogil=True)
def add_weights(out: NDArray[np.int64], x: NDArray[np.float64], y: NDArray[np.float64], ell: int,
                weights: NDArray[np.int64], ids: NDArray[np.int64], offset: int) -> int:
    """``out[row · 2^ell + col] += weights[ids[k] - offset]`` for the points in [0, 1)²; returns how many were not.

    row = ⌊y · 2^ell⌋ and col = ⌊x · 2^ell⌋: a power-of-two multiple of a double below 1 stays below
    2^ell, so no clamp is needed. NaN fails every comparison and counts as outside.
    """
    scale = float(1 << ell)
    shift = np.uint64(ell)
    outside = 0
    for k in range(x.size):
        a = x[k]
        b = y[k]
        if (a >= 0.0) & (a < 1.0) & (b >= 0.0) & (b < 1.0):
            out[(np.uint64(b * scale) << shift) + np.uint64(a * scale)] += weights[np.uint64(ids[k] - offset)]
        else:
            outside += 1
    return outside

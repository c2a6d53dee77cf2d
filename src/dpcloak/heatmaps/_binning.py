"""Compiled inner loops of per-user bounding (numba): one pass to count each user's points, one pass to add
each point's fixed-point weight to its cell, with the range check fused in.

``ids[k] - offset`` is point k's index into the per-user tables (``counts``, ``weights``): the raw
integer ids shifted by their minimum, or codes from :func:`numpy.unique` with ``offset = 0``. The callers
(:mod:`dpcloak.heatmaps.data`, :mod:`dpcloak.heatmaps.distributed`) guarantee that every index lies in
its table, so the loops index with unsigned integers (no negative-index wrap-around test per access).

Memory traffic is what these loops cost, so each point's data is read the fewest times:

* :func:`count_compact` counts int64 ids in one pass with no range pass before it: the table starts small
  around the first id and, when an id falls outside it, is re-placed around all ids seen so far, at least
  twice as large (so the copies add up to O(final size)), with its free slots split evenly on both sides.
* :func:`add_weights` works in blocks of :data:`BLOCK` points: a first loop, branch-free and vectorised,
  turns a block's coordinates into uint32 cell indices in a buffer that stays in cache (``Δ²`` for a point
  outside [0, 1)² or NaN); a second loop adds the weights. Separating the arithmetic from the scattered
  additions lets each loop run at its own limit.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

BLOCK = 8192
"""Points per block of :func:`add_weights` (its uint32 cell buffer, 32 KiB, stays in the first-level caches)."""

_INT64_MIN = -(2**63)


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
def _placed(lo: int, hi: int, size: int) -> int:
    """First id of a table of ``size`` slots holding ids lo..hi, its free slots split evenly (none below int64's
    minimum). Unsigned arithmetic: ``hi − lo`` of any two int64 ids is exact modulo 2^64."""
    free = np.uint64(size) - np.uint64(1) - (np.uint64(hi) - np.uint64(lo))
    below = min(free // np.uint64(2), np.uint64(lo) - np.uint64(_INT64_MIN))
    return int(np.int64(np.uint64(lo) - below))


@njit(cache=True, nogil=True)
def _count_from(ids: NDArray[np.int64], start: int, base: int, counts: NDArray[np.int64]) -> int:
    """Count ids from position ``start`` into ``counts`` (slot = id − ``base``) up to the first one outside the
    table; returns its position (``ids.size`` when every id was counted)."""
    size = np.uint64(counts.size)
    ubase = np.uint64(base)
    for k in range(start, ids.size):
        slot = np.uint64(ids[k]) - ubase
        if slot >= size:
            return k
        counts[slot] += 1
    return ids.size


@njit(cache=True, nogil=True)
def count_compact(ids: NDArray[np.int64], limit: int) -> tuple[int, int, NDArray[np.int64]]:
    """Count non-empty int64 ids in one pass: (status, base, counts) with ``counts[i]`` the number of ids equal to
    ``base + i``.

    status 0: every id counted. Status 1: max − min ≥ ``limit`` (the ids are not compact; nothing returned
    is meaningful). Status 2: the table reached ``limit`` slots and would have to move again: the caller
    counts with a range pass first (:func:`id_range`, :func:`count_ids`).
    """
    size = min(limit, 1024)
    base = _placed(ids[0], ids[0], size)
    counts = np.zeros(size, dtype=np.int64)
    k = _count_from(ids, 0, base, counts)
    while k < ids.size:
        v = ids[k]
        used = np.flatnonzero(counts)
        lo = min(np.int64(np.uint64(base) + np.uint64(used[0])), v)
        hi = max(np.int64(np.uint64(base) + np.uint64(used[-1])), v)
        span = np.uint64(hi) - np.uint64(lo)
        if span >= np.uint64(limit):
            return 1, base, counts
        new_size = min(limit, max(2 * size, 2 * (int(span) + 1)))
        if new_size == size:
            return 2, base, counts
        new_base = _placed(lo, hi, new_size)
        grown = np.zeros(new_size, dtype=np.int64)
        shift = np.uint64(base) - np.uint64(new_base)  # slot j of the old table is slot j + shift of the new one
        for j in range(used[0], used[-1] + 1):
            grown[np.uint64(j) + shift] = counts[j]
        counts, base, size = grown, new_base, new_size
        k = _count_from(ids, k, base, counts)
    return 0, base, counts


@njit(cache=True, nogil=True)
def _block_cells(x: NDArray[np.float64], y: NDArray[np.float64], ell: int, cells: NDArray[np.uint32]) -> int:
    """``cells[k]`` = row · 2^ell + col of point k of a block, or 4^ell when it is outside [0, 1)² or NaN; returns
    how many are outside. Branch-free, so the loop vectorises."""
    scale = float(1 << ell)
    shift = np.uint32(ell)
    outside_cell = np.uint32(1 << (2 * ell))
    outside = 0
    for k in range(x.size):
        a = x[k]
        b = y[k]
        inside = (a >= 0.0) & (a < 1.0) & (b >= 0.0) & (b < 1.0)
        cells[k] = ((np.uint32(b * scale) << shift) + np.uint32(a * scale)) if inside else outside_cell
        outside += not inside
    return outside


@njit(cache=True, nogil=True)
def _block_add(out: NDArray[np.int64], cells: NDArray[np.uint32], weights: NDArray[np.int64],
               ids: NDArray[np.int64], offset: int) -> None:
    """``out[cells[k]] += weights[ids[k] − offset]`` for the points of a block inside the grid."""
    size = np.uint64(out.size)
    for k in range(cells.size):
        cell = np.uint64(cells[k])
        if cell < size:
            out[cell] += weights[np.uint64(ids[k] - offset)]


@njit(cache=True, nogil=True)
def add_weights(out: NDArray[np.int64], x: NDArray[np.float64], y: NDArray[np.float64], ell: int,
                weights: NDArray[np.int64], ids: NDArray[np.int64], offset: int) -> int:
    """``out[row · 2^ell + col] += weights[ids[k] - offset]`` for the points in [0, 1)²; returns how many were not.

    row = ⌊y · 2^ell⌋ and col = ⌊x · 2^ell⌋: a power-of-two multiple of a double below 1 stays below
    2^ell (ell ≤ 15, so a cell index fits in uint32), and truncation is the floor there. NaN fails every
    comparison and counts as outside; ``out`` has 4^ell entries.
    """
    cells = np.empty(BLOCK, dtype=np.uint32)
    outside = 0
    n = x.size
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        block = cells[: stop - start]
        outside += _block_cells(x[start:stop], y[start:stop], ell, block)
        _block_add(out, block, weights, ids[start:stop], offset)
    return outside

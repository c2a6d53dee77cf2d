"""The (scaled) pyramidal transform P of Ghazi et al., Definition 3.1, by reshaping and summing.

Level i (0 ≤ i ≤ ℓ) partitions [0, 1)² into the 2^i × 2^i cells C_{2^i}; P_i s is the vector of cell
sums of s and

    P = [P_0ᵀ  2^-1 P_1ᵀ  …  2^-ℓ P_ℓᵀ]ᵀ,

one row per cell, scaled by the cell's side length. Level i is obtained from level i+1 by summing
2 × 2 blocks (``reshape(2^i, 2, 2^i, 2).sum((1, 3))``), so the whole pyramid costs O(Δ²) time and
memory and P is never formed. Cell (r, c) of level i has children (2r + a, 2c + b), a, b ∈ {0, 1}, at
level i + 1 (Definition 3.2). Integer input (the exact fixed-point aggregate) stays integer, so the
level sums are exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_int
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.data import check_resolution

__all__ = ["pyramid_levels", "pyramid_transform", "pyramid_adjoint", "coarsen", "children"]


def coarsen(grid: NDArray[Any]) -> NDArray[Any]:
    """Sum 2 × 2 blocks: level i+1 cell sums → level i cell sums.

    Examples
    --------
    >>> import numpy as np
    >>> coarsen(np.arange(16).reshape(4, 4)).tolist()
    [[10, 18], [42, 50]]
    """
    half = grid.shape[0] // 2
    return grid.reshape(half, 2, half, 2).sum(axis=(1, 3))


def _square(name: str, grid: ArrayLike) -> tuple[NDArray[Any], int]:
    arr = np.asarray(grid)
    if arr.dtype.kind not in "iu":
        arr = check_array(name, arr, ndim=2)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InvalidParameterError(f"{name} must be a square Δ × Δ array, got shape {arr.shape}", parameter=name)
    return arr, check_resolution(arr.shape[0])


def pyramid_levels(grid: ArrayLike, *, start_level: int = 0) -> tuple[NDArray[Any], ...]:
    """Unscaled level sums (P_start s, …, P_ℓ s) as 2^i × 2^i arrays.

    Parameters
    ----------
    grid : array_like, shape (Δ, Δ)
        s on G_Δ (integer arrays keep their dtype, so sums are exact).
    start_level : int
        First level returned (0 ≤ start_level ≤ ℓ).

    Examples
    --------
    >>> coarse, fine = pyramid_levels(np.arange(16.0).reshape(4, 4), start_level=1)
    >>> coarse.tolist()  # sums of the 2 x 2 blocks
    [[10.0, 18.0], [42.0, 50.0]]
    >>> fine.shape
    (4, 4)
    """
    arr, ell = _square("grid", grid)
    start = check_int("start_level", start_level, minimum=0, maximum=ell)
    levels = [arr]
    for _ in range(ell - start):
        levels.append(coarsen(levels[-1]))
    return tuple(reversed(levels))


def pyramid_transform(grid: ArrayLike) -> NDArray[np.float64]:
    """Ps as one vector: levels 0..ℓ, each scaled by 2^-i and flattened row-major.

    Examples
    --------
    Level 0 (the total, 4) then level 1 scaled by 1/2:

    >>> pyramid_transform(np.ones((2, 2))).tolist()
    [4.0, 0.5, 0.5, 0.5, 0.5]
    """
    levels = pyramid_levels(grid)
    return np.concatenate([lev.ravel().astype(np.float64) * 2.0**-i for i, lev in enumerate(levels)])


def pyramid_adjoint(vector: ArrayLike, *, resolution: int) -> NDArray[np.float64]:
    """Pᵀy for y laid out as :func:`pyramid_transform` returns it (each cell's value spread to its pixels).

    Examples
    --------
    The adjoint of :func:`pyramid_transform` (``⟨Ps, y⟩ = ⟨s, Pᵀy⟩``):

    >>> rng = np.random.default_rng(0)
    >>> s, y = rng.random((4, 4)), rng.random(1 + 4 + 16)
    >>> bool(np.isclose(pyramid_transform(s) @ y, np.sum(s * pyramid_adjoint(y, resolution=4))))
    True
    """
    ell = check_resolution(resolution)
    sizes = [4**i for i in range(ell + 1)]
    y = check_array("vector", vector, shape=(sum(sizes),))
    out = np.zeros((1, 1))
    offset = 0
    for i, size in enumerate(sizes):
        side = 1 << i
        if i:
            out = np.repeat(np.repeat(out, 2, axis=0), 2, axis=1)
        out = out + 2.0**-i * y[offset : offset + size].reshape(side, side)
        offset += size
    return out


def children(cells: NDArray[np.int64], side: int) -> NDArray[np.int64]:
    """Flat indices (at the next level, side 2·side) of the four children of each flat cell index.

    Examples
    --------
    Cell 1 of a 2 × 2 level (row 0, column 1) has children rows 0–1, columns 2–3 of the 4 × 4 level:

    >>> import numpy as np
    >>> children(np.array([1]), 2).tolist()
    [2, 3, 6, 7]
    """
    rows, cols = np.divmod(np.asarray(cells, dtype=np.int64), side)
    child_side = 2 * side
    kids = [(2 * rows + a) * child_side + (2 * cols + b) for a in (0, 1) for b in (0, 1)]
    return np.stack(kids, axis=1).reshape(-1)

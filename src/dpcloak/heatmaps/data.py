"""Snapping points to the Δ × Δ grid and bounding each user's contribution to one distribution.

This module is the only way data enters the heatmap mechanisms: :func:`bound_users` (raw points) and
:func:`bound_distributions` (per-user distributions) return a :class:`UserAggregate`, and every
mechanism in :mod:`dpcloak.heatmaps` accepts nothing else. A :class:`UserAggregate` cannot be built
by hand, so the ℓ1-sensitivity argument of Ghazi et al., Theorem 3.1 (each user's data is a
distribution p_i with ‖p_i‖₁ ≤ 1, hence adding or removing a user moves every level P_i s of the
pyramid by at most 1 in ℓ1) holds for every input the mechanisms see.

Grid convention (Ghazi et al., §2): G_Δ = {(i/Δ, j/Δ)} ⊂ [0, 1)², Δ = 2^ℓ. A point (x, y) falls in the
cell with column ⌊xΔ⌋ and row ⌊yΔ⌋; arrays are indexed ``[row, col]`` (y first, image convention),
so ``plt.imshow(a, origin="lower")`` draws north up for latitude-derived y. Resolutions that are not
powers of two are **rejected** (not padded): padding would change the meaning of [0, 1)² and of the
EMD scale, so the caller picks Δ = 2^ℓ explicitly.

Exact, order-independent sums: a user with c points gives each point the weight ⌊2^K / c⌋ / 2^K
(K = :data:`FIXED_POINT_BITS` = 36), accumulated in int64. The user's total is ≤ 1 (never more, so the
sensitivity bound holds) and short of 1 by less than c·2^-36; integer sums do not depend on the
order of summation, so the in-memory path and the Dask path (:mod:`dpcloak.heatmaps.distributed`)
produce bit-identical aggregates.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_int, check_memory
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import _binning

__all__ = [
    "FIXED_POINT_BITS",
    "MAX_USERS",
    "UserAggregate",
    "check_resolution",
    "snap",
    "bound_users",
    "bound_distributions",
    "user_codes",
    "compact_counts",
    "check_user_ids",
    "fixed_point_weights",
    "accumulate_cells",
    "refuse_outside",
]

FIXED_POINT_BITS = 36
"""K: per-point weights are multiples of 2^-K, so every sum is an exact int64."""

MAX_USERS = 1 << (62 - FIXED_POINT_BITS)
"""Largest number of users whose fixed-point total (≤ n·2^K) fits in int64 with headroom."""

_ONE = 1 << FIXED_POINT_BITS
_BOUNDED = object()


def check_resolution(resolution: Any) -> int:
    """Validate Δ = 2^ℓ (ℓ ≥ 0) and return ℓ; other sizes are rejected, not padded.

    Examples
    --------
    >>> check_resolution(8), check_resolution(1)
    (3, 0)
    >>> check_resolution(6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: resolution must be a power of two Δ = 2^ℓ (the ...
    """
    res = check_int("resolution", resolution, minimum=1, maximum=1 << 15)
    if res & (res - 1):
        lower = 1 << (res.bit_length() - 1)
        raise InvalidParameterError(
            f"resolution must be a power of two Δ = 2^ℓ (the pyramid halves the grid at each level), got {res}; "
            f"use {lower} or {lower * 2}", parameter="resolution"
        )
    return res.bit_length() - 1


def _coordinate_arrays(x: ArrayLike, y: ArrayLike, *, finite: bool = True
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """x and y as contiguous float64 vectors of one length (``finite=False``: NaN not looked for yet)."""
    xa = np.ascontiguousarray(check_array("x", x, ndim=1, finite=finite))
    ya = np.ascontiguousarray(check_array("y", y, ndim=1, finite=finite))
    if xa.shape != ya.shape:
        raise InvalidParameterError(f"x and y must have the same length, got {xa.size} and {ya.size}", parameter="x")
    return xa, ya


def _coordinates(x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    xa, ya = _coordinate_arrays(x, y)
    for name, arr in (("x", xa), ("y", ya)):
        outside = np.count_nonzero((arr < 0.0) | (arr >= 1.0))
        if outside:
            raise InvalidParameterError(
                f"{name} must lie in [0, 1); {outside} of {arr.size} points are outside (range "
                f"[{arr.min():g}, {arr.max():g}]); map coordinates first with lonlat_to_unit or pixels_to_unit",
                parameter=name
            )
    return xa, ya


def refuse_outside(x: ArrayLike, y: ArrayLike) -> NoReturn:
    """Raise the error for points outside [0, 1)² (which coordinate, how many, their range), once a fused loop
    such as :func:`accumulate_cells` has found some.

    Examples
    --------
    >>> refuse_outside([0.5, 1.5], [0.5, 0.5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: x must lie in [0, 1); 1 of 2 points are outside (range [0.5, 1.5]); ...
    """
    _coordinates(x, y)
    raise InvalidParameterError("x and y must lie in [0, 1)", parameter="x")


def snap(x: ArrayLike, y: ArrayLike, *, resolution: int) -> NDArray[np.int64]:
    """Flat cell index ``row * Δ + col`` of each point, with row = ⌊yΔ⌋ and col = ⌊xΔ⌋.

    Parameters
    ----------
    x, y : array_like, shape (N,)
        Coordinates in [0, 1); anything else raises :class:`InvalidParameterError`.
    resolution : int
        Δ = 2^ℓ.

    Examples
    --------
    >>> snap([0.0, 0.5, 0.99], [0.0, 0.5, 0.99], resolution=4).tolist()  # cells (0, 0), (2, 2), (3, 3)
    [0, 10, 15]
    """
    ell = check_resolution(resolution)
    xa, ya = _coordinates(x, y)
    return _snap_unchecked(xa, ya, ell)


def _snap_unchecked(x: NDArray[np.float64], y: NDArray[np.float64], ell: int) -> NDArray[np.int64]:
    delta = 1 << ell
    col = np.minimum((x * delta).astype(np.int64), delta - 1)
    row = np.minimum((y * delta).astype(np.int64), delta - 1)
    return row * delta + col


def accumulate_cells(
    out: NDArray[np.int64], x: NDArray[np.float64], y: NDArray[np.float64], ell: int, weights: NDArray[np.int64],
    ids: NDArray[np.int64], *, offset: int = 0,
) -> int:
    """``out[cell of (x, y)] += weights[ids[k] − offset]`` for every point k in [0, 1)², exactly in int64.

    One compiled pass (numba) with no temporaries: the range check, the snapping (row ⌊yΔ⌋, column
    ⌊xΔ⌋, Δ = 2^``ell``) and the addition are fused. ``ids − offset`` must index ``weights`` (user
    codes, or integer ids shifted by their minimum). Returns the number of points **not** added
    because they lie outside [0, 1)² or are NaN: the caller refuses the input when it is not 0
    (:func:`refuse_outside`).

    Examples
    --------
    Level ``ell = 1`` is a 2 × 2 grid, flattened row by row (row = y cell, column = x cell). Points 0 and
    3 belong to user 0 (weight 3), points 1 and 2 to user 1 (weight 4):

    >>> import numpy as np
    >>> out = np.zeros(4, dtype=np.int64)
    >>> x, y = np.array([0.1, 0.2, 0.9, 0.6]), np.array([0.1, 0.3, 0.1, 0.8])
    >>> accumulate_cells(out, x, y, 1, np.array([3, 4]), np.array([0, 1, 1, 0]))
    0
    >>> out.reshape(2, 2).tolist()
    [[7, 4], [0, 3]]
    >>> accumulate_cells(out, np.array([1.0, np.nan]), np.array([0.5, 0.5]), 1, np.array([3]), np.array([7, 7]),
    ...                  offset=7)  # x = 1 and NaN are outside: nothing added
    2
    """
    return int(_binning.add_weights(out, np.ascontiguousarray(x, dtype=np.float64),
                                    np.ascontiguousarray(y, dtype=np.float64), int(ell), weights,
                                    np.ascontiguousarray(ids, dtype=np.int64), int(offset)))


def _id_kind(value: Any) -> str:
    """``"number"`` or ``"string"`` for one user id; missing or unsupported ids raise."""
    if isinstance(value, str | bytes):
        return "string"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if value != value:  # NaN: a missing id
            raise InvalidParameterError(_MISSING_IDS, parameter="users")
        return "number"
    if value is None or type(value).__name__ in _MISSING_TYPES:
        raise InvalidParameterError(_MISSING_IDS, parameter="users")
    raise InvalidParameterError(
        f"users must hold numbers or strings; found an id of type {type(value).__name__} ({value!r})", parameter="users"
    )


_MISSING_TYPES = ("NAType", "NaTType")
"""pandas' missing-value markers (``pandas.NA``, ``pandas.NaT``), recognised without importing pandas."""


_MISSING_IDS = (
    "users must not contain missing ids (None, NaN, NA): points without a user cannot be bounded per user; "
    "drop those points or give them the id of the user they belong to"
)


def check_user_ids(users: NDArray[Any]) -> str:
    """Validate a 1-D array of user ids and return its kind, ``"number"`` or ``"string"``.

    The rule (one per release, so that one person is never counted as two users):

    * ids are all numbers (compared by value: ``1``, ``1.0`` and ``np.int64(1)`` are the same user)
      or all strings (compared as text); a mix of both, such as ``1`` and ``"1"``, is refused, since
      whether they are one person or two cannot be decided from the data;
    * a missing id (``None``, NaN, ``pandas.NA``) is refused: a point without a user would escape
      per-user bounding (each such point would otherwise count as a separate user of mass 1);
    * booleans and other objects are refused.

    Examples
    --------
    >>> import numpy as np
    >>> check_user_ids(np.array([1, 2, 2])), check_user_ids(np.array(["a", "b"]))
    ('number', 'string')
    >>> check_user_ids(np.array([1, "1"], dtype=object))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: users must be all numbers or all strings, got a mix ...
    """
    if users.dtype.kind in "iu":
        return "number"
    if users.dtype.kind == "f":
        if not np.all(np.isfinite(users)):
            raise InvalidParameterError(f"users must be finite ids; found NaN or infinite ids. {_MISSING_IDS}",
                                        parameter="users")
        return "number"
    if users.dtype.kind in "US":
        return "string"
    if users.dtype.kind != "O":
        raise InvalidParameterError(f"users must hold numbers or strings, got an array of dtype {users.dtype}",
                                    parameter="users")
    kinds = {_id_kind(v) for v in users.tolist()}
    if len(kinds) > 1:
        first_num = next(v for v in users.tolist() if _id_kind(v) == "number")
        first_str = next(v for v in users.tolist() if _id_kind(v) == "string")
        raise InvalidParameterError(
            "users must be all numbers or all strings, got a mix (for example "
            f"{first_num!r} and {first_str!r}); convert the id column to one type", parameter="users"
        )
    return kinds.pop() if kinds else "number"


def _id_bounds(arr: NDArray[Any]) -> tuple[int, int]:
    """(min, max) of non-empty integer ids: one compiled pass for int64, numpy's two otherwise."""
    if arr.dtype == np.int64:
        lo, hi = _binning.id_range(arr)
        return int(lo), int(hi)
    return int(arr.min()), int(arr.max())


def _compact_ids(lo: int, hi: int, n_points: int) -> bool:
    """Whether integer ids in [``lo``, ``hi``] are counted in a dense table: its length is O(points)."""
    return hi - lo < 4 * n_points + 1024 and hi < 1 << 63


def compact_counts(arr: NDArray[Any], n_points: int) -> tuple[NDArray[np.int64], int, NDArray[np.int64]] | None:
    """(ids, offset, counts) for integer ids in a compact range (``max − min < 4·n_points + 1024``), else ``None``.

    ``ids`` is ``arr`` as contiguous int64 and ``counts[i]`` the number of ids equal to ``offset + i``
    (``offset`` = the minimum id, both ends of ``counts`` non-zero). int64 ids are counted in one compiled
    pass with no range pass before it (:func:`dpcloak.heatmaps._binning.count_compact`); other integer
    dtypes, and int64 ids whose table would have to move at its largest size, take a range pass first.

    Examples
    --------
    >>> import numpy as np
    >>> ids, offset, counts = compact_counts(np.array([12, 10, 12]), 3)
    >>> offset, counts.tolist()
    (10, [1, 0, 2])
    >>> compact_counts(np.array([0, 10**9]), 2) is None  # a range of 10^9 ids for 2 points
    True
    """
    ids = np.ascontiguousarray(arr, dtype=np.int64) if arr.dtype == np.int64 else None
    if ids is not None:
        status, base, table = _binning.count_compact(ids, 4 * n_points + 1024)
        if status == 0:
            used = np.flatnonzero(table)
            return ids, int(base) + int(used[0]), table[used[0] : used[-1] + 1]
        if status == 1:
            return None
    lo, hi = _id_bounds(arr)
    if not _compact_ids(lo, hi, n_points):
        return None
    ids = np.ascontiguousarray(arr, dtype=np.int64)
    counts = np.zeros(hi - lo + 1, dtype=np.int64)
    _binning.count_ids(ids, lo, counts)
    return ids, lo, counts


def _user_table(users: ArrayLike, n: int) -> tuple[NDArray[np.int64], int, NDArray[np.int64]]:
    """(ids, offset, counts): ``ids[k] − offset`` is point k's user code and ``counts`` the points per code.

    Integer ids in a compact range (:func:`compact_counts`) are used as they are, with ``offset`` their
    minimum (no copy for int64); anything else gets codes from :func:`numpy.unique` and ``offset = 0``.
    """
    arr = np.asarray(users)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise InvalidParameterError(f"users must be a 1-D array with one id per point ({n}), got shape {arr.shape}",
                                    parameter="users")
    kind = check_user_ids(arr)
    if arr.dtype.kind in "iu" and n:
        compact = compact_counts(arr, n)
        if compact is not None:
            return compact
    if arr.dtype.kind == "O" and kind == "string":
        arr = arr.astype(str)
    _, inverse = np.unique(arr, return_inverse=True)
    codes = inverse.astype(np.int64, copy=False).reshape(-1)
    return codes, 0, np.bincount(codes)


def user_codes(users: ArrayLike, n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Integer codes for user ids and the number of points of each code.

    Ids follow :func:`check_user_ids` (missing ids and mixed numbers/strings are refused).
    Non-negative integer ids in a compact range are used directly (O(N)); anything else goes through
    :func:`numpy.unique`. Codes with no points have count 0.

    Examples
    --------
    >>> codes, counts = user_codes(["bob", "ann", "bob"], 3)
    >>> codes.tolist(), counts.tolist()
    ([1, 0, 1], [1, 2])
    >>> codes, counts = user_codes([12, 10, 12], 3)  # compact integer ids: codes are id − min
    >>> codes.tolist(), counts.tolist()
    ([2, 0, 2], [1, 0, 2])
    """
    ids, offset, counts = _user_table(users, n)
    return ids - offset if offset else ids, counts


def fixed_point_weights(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """⌊2^K / c⌋ for each user's point count c (0 where c = 0): each user's total weight is ≤ 2^K.

    Examples
    --------
    Three users with 1, 3 and no points: each user's weights sum to at most 2^36:

    >>> import numpy as np
    >>> w = fixed_point_weights(np.array([1, 3, 0]))
    >>> (w == [2**36, 2**36 // 3, 0]).tolist(), bool(3 * w[1] <= 2**36)
    ([True, True, True], True)
    """
    safe = np.maximum(counts, 1)
    return np.where(counts > 0, _ONE // safe, 0).astype(np.int64)


@dataclass(frozen=True)
class UserAggregate:
    """s = Σ_i p_i on the Δ × Δ grid, where each user's p_i has ‖p_i‖₁ ≤ 1 (Ghazi et al., §2.3, §3).

    Built only by :func:`bound_users`, :func:`bound_distributions` or the Dask path; constructing it
    directly raises, which keeps per-user bounding the only path into the mechanisms.

    Attributes
    ----------
    fixed : ndarray of int64, shape (Δ, Δ)
        s in units of 2^-K (:data:`FIXED_POINT_BITS`), exact.
    resolution : int
        Δ.
    n_users : int
        Number of users n (distinct ids with at least one point).
    n_points : int
        Number of input points (n for distribution input).

    Examples
    --------
    Built by :func:`bound_users`: user 0's two points share one cell, user 2's three points get ⅓ each:

    >>> agg = bound_users([0, 0, 1, 2, 2, 2], [0.1, 0.1, 0.6, 0.9, 0.9, 0.2], [0.1, 0.2, 0.6, 0.9, 0.8, 0.2],
    ...                   resolution=4)
    >>> isinstance(agg, UserAggregate), agg.n_users, agg.n_points, agg.depth
    (True, 3, 6, 2)
    >>> agg.sums.round(4).tolist()
    [[1.3333, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.6667]]
    >>> round(float(agg.normalized.sum()), 12)
    1.0
    """

    fixed: NDArray[np.int64]
    resolution: int
    n_users: int
    n_points: int
    _token: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._token is not _BOUNDED:
            raise InvalidParameterError(
                "UserAggregate is produced by bound_users / bound_distributions (per-user bounding is the only "
                "path into the mechanisms); do not construct it directly",
                parameter="UserAggregate"
            )

    @property
    def depth(self) -> int:
        """ℓ = log₂ Δ."""
        return self.resolution.bit_length() - 1

    @property
    def sums(self) -> NDArray[np.float64]:
        """s as floats (each user contributes total mass ≤ 1)."""
        return self.fixed.astype(np.float64) / _ONE

    @property
    def normalized(self) -> NDArray[np.float64]:
        """a = s / ‖s‖₁, the true (non-private) normalised aggregate."""
        return self.fixed.astype(np.float64) / float(self.fixed.sum(dtype=np.int64))


def _make_aggregate(fixed: NDArray[np.int64], resolution: int, n_users: int, n_points: int) -> UserAggregate:
    """Internal constructor shared by the in-memory and Dask paths."""
    return UserAggregate(fixed=fixed, resolution=resolution, n_users=n_users, n_points=n_points, _token=_BOUNDED)


def _check_user_count(n_users: int) -> None:
    if n_users > MAX_USERS:
        raise InvalidParameterError(f"at most {MAX_USERS} users are supported by the exact int64 sums, got {n_users}",
                                    parameter="users", allowed=f"at most {MAX_USERS} users", got=n_users)


def bound_users(users: ArrayLike, x: ArrayLike, y: ArrayLike, *, resolution: int) -> UserAggregate:
    """Snap points to the grid and bound each user to one distribution (1/c per point).

    Parameters
    ----------
    users : array_like, shape (N,)
        User id of each point: all numbers or all strings (:func:`check_user_ids`); missing ids
        (``None``, NaN, ``pandas.NA``) and a mix of numbers and strings are refused.
    x, y : array_like, shape (N,)
        Coordinates in [0, 1).
    resolution : int
        Δ = 2^ℓ.

    Returns
    -------
    UserAggregate
        s = Σ_i p_i with p_i = (1/c_i) Σ_{points of i} 1_{cell}, in exact fixed point.

    Notes
    -----
    Ghazi et al., §2.3: each user holds a distribution p_i over G_Δ. A user with c points is mapped
    to the empirical distribution of its points, so adding or removing the user changes every
    level of the pyramid by at most ‖p_i‖₁ ≤ 1 in ℓ1: this is the sensitivity used by Algorithm 1.

    Examples
    --------
    Each user contributes total mass 1, however many points they have:

    >>> agg = bound_users(["ann", "ann", "bob"], [0.1, 0.9, 0.6], [0.1, 0.9, 0.6], resolution=2)
    >>> agg.sums.tolist()
    [[0.5, 0.0], [0.0, 1.5]]
    """
    ell = check_resolution(resolution)
    check_memory(f"resolution={resolution} (a {resolution}x{resolution} grid, held about 4 times)",
                 4 * 8 * 4**ell, hint="use a smaller resolution")
    xa, ya = _coordinate_arrays(x, y, finite=False)  # NaN and the range are checked in the accumulating pass
    ids, offset, counts = _user_table(users, xa.size)
    n_users = int(np.count_nonzero(counts))
    _check_user_count(n_users)
    delta = 1 << ell
    fixed = np.zeros(delta * delta, dtype=np.int64)
    if accumulate_cells(fixed, xa, ya, ell, fixed_point_weights(counts), ids, offset=offset):
        refuse_outside(xa, ya)
    return _make_aggregate(fixed.reshape(delta, delta), delta, n_users, int(xa.size))


def bound_distributions(distributions: ArrayLike) -> UserAggregate:
    """Aggregate per-user distributions p_i given as an (n, Δ, Δ) array.

    Each p_i must be non-negative with ‖p_i‖₁ ≤ 1 (+1e-9); it is rounded down to multiples of 2^-K so
    the bound still holds after rounding.

    Examples
    --------
    >>> agg = bound_distributions(np.array([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.5], [0.0, 0.5]]]))
    >>> agg.sums.tolist(), agg.n_users
    ([[1.0, 0.5], [0.0, 0.5]], 2)
    >>> bound_distributions(np.array([[[1.0, 1.0], [0.0, 0.0]]]))
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: each user's distribution must have total mass <= 1; user 0 has 2
    """
    arr = check_array("distributions", distributions, ndim=3, nonnegative=True)
    n, rows, cols = arr.shape
    if rows != cols:
        raise InvalidParameterError(f"distributions must be (n, Δ, Δ) with a square grid, got {arr.shape}",
                                    parameter="distributions")
    check_resolution(rows)
    totals = arr.reshape(n, -1).sum(axis=1)
    if np.any(totals > 1.0 + 1e-9):
        worst = int(np.argmax(totals))
        raise InvalidParameterError(
            f"each user's distribution must have total mass <= 1; user {worst} has {totals[worst]:.6g}",
            parameter="distributions", allowed="total mass <= 1 per user", got=float(totals[worst])
        )
    _check_user_count(n)
    scaled = arr / np.maximum(totals, 1.0)[:, None, None]
    fixed_users = np.floor(scaled * _ONE).astype(np.int64)
    return _make_aggregate(fixed_users.sum(axis=0), rows, n, n)

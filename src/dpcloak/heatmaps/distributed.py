"""Per-user bounding on a Dask cluster (``dask`` extra): from a Dask DataFrame or Parquet to one UserAggregate.

The steps of :func:`~dpcloak.heatmaps.data.bound_users` run on the workers in two streaming passes:
the per-user point counts c_u with validation of the user ids (the rule of
:func:`~dpcloak.heatmaps.data.check_user_ids`, checked across partitions too), then, per partition,
snapping and the int64 sums of the weights ⌊2^K / c_u⌋, combined by a tree of additions. Integer
addition is exact and associative, so the result is bit-identical to the in-memory path whatever the
partitioning, and only the Δ × Δ aggregate (plus the numbers of users and points) reaches the
client. The pyramid levels are computed from it exactly as in memory (their sums are integer too).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak.errors import InvalidParameterError, MissingExtraError
from dpcloak.heatmaps.data import (
    UserAggregate,
    _check_user_count,
    _make_aggregate,
    accumulate_cells,
    check_resolution,
    check_user_ids,
    fixed_point_weights,
)
from dpcloak.heatmaps.extent import Extent

__all__ = ["bound_users_dask", "bound_users_parquet"]

Partial = tuple[int, NDArray[np.int64]]


def _dask() -> tuple[Any, Any]:
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise MissingExtraError("the Dask aggregation path needs dask: pip install 'dpcloak[dask]'") from None
    return dask, dd


def _partition_counts(part: Any, user: str) -> tuple[frozenset[str], Any]:
    """Pass 1 on a worker: the kind of the partition's user ids and each user's number of points."""
    ids = part[user]
    if len(ids) == 0:
        return frozenset(), ids.value_counts()
    kind = check_user_ids(ids.to_numpy())
    return frozenset({kind}), ids.value_counts(sort=False)


def _add_counts(partials: Sequence[tuple[frozenset[str], Any]]) -> tuple[frozenset[str], Any]:
    import pandas as pd

    kinds = frozenset().union(*(k for k, _ in partials))
    if len(kinds) > 1:
        raise InvalidParameterError(
            "users must be all numbers or all strings, got a mix across partitions; convert the id column to one type",
            parameter="users"
        )
    merged = pd.concat([c for _, c in partials])
    codes, ids = pd.factorize(merged.index)
    # counts are integers < 2^53, so the float64 sums of bincount are exact
    total = np.bincount(codes, weights=merged.to_numpy(dtype=float), minlength=len(ids)).astype(np.int64)
    return kinds, pd.Series(total, index=ids)


def _user_weights(counts: tuple[frozenset[str], Any]) -> tuple[Any, NDArray[np.int64]]:
    """After pass 1: the user index and each user's fixed-point weight ⌊2^K / c_u⌋ (computed once)."""
    per_user = counts[1]
    return per_user.index, fixed_point_weights(per_user.to_numpy(dtype=np.int64))


def _partition_sums(part: Any, users: tuple[Any, NDArray[np.int64]], user: str, x: str, y: str, ell: int,
                    extent: Extent | None) -> Partial:
    """Pass 2 on a worker: one partition's number of points and fixed-point cell sums."""
    delta = 1 << ell
    out = np.zeros(delta * delta, dtype=np.int64)
    if len(part) == 0:
        return 0, out
    xa = part[x].to_numpy(dtype=float)
    ya = part[y].to_numpy(dtype=float)
    if extent is not None:
        xa, ya, _ = extent.to_unit(xa, ya)
    for name, arr in ((x, xa), (y, ya)):
        if not np.all(np.isfinite(arr)):
            raise InvalidParameterError(f"{name} must be finite; found NaN or infinite coordinates", parameter=name)
        outside = int(np.count_nonzero((arr < 0.0) | (arr >= 1.0)))
        if outside:
            raise InvalidParameterError(f"{name} must lie in [0, 1); {outside} points of a partition are outside",
                                        parameter=name)
    index, weights = users
    where = index.get_indexer(part[user])
    if np.any(where < 0):
        raise InvalidParameterError("the data changed between the two passes over the frame (a user was not counted)",
                                    parameter="frame")
    accumulate_cells(out, xa, ya, ell, weights, where)
    return len(part), out


def _add(partials: Sequence[Partial]) -> Partial:
    total = np.zeros_like(partials[0][1])
    for _, a in partials:
        total += a
    return sum(n for n, _ in partials), total


def _n_users(users: tuple[Any, NDArray[np.int64]]) -> int:
    return len(users[0])


def _tree(dask: Any, parts: list[Any], combine: Any) -> Any:
    while len(parts) > 1:  # tree reduction on the workers, 8 partials at a time
        parts = [dask.delayed(combine)(parts[i : i + 8]) for i in range(0, len(parts), 8)]
    return parts[0]


def bound_users_dask(
    frame: Any, *, resolution: int, user: str = "user", x: str = "x", y: str = "y", extent: Extent | None = None,
    client: Any = None,
) -> UserAggregate:
    """:func:`~dpcloak.heatmaps.data.bound_users` on a Dask DataFrame, computed on its cluster, streaming.

    Two passes over the partitions, each a tree reduction, so that no step holds more than a few
    partitions and the small results: pass 1 counts each user's points (``value_counts`` per
    partition, merged; the only object that grows with the data is this one count per user, kept on
    the cluster); pass 2 reads the partitions again and sums the fixed-point weights ⌊2^K / c_u⌋ per
    cell. Only the Δ × Δ aggregate and two numbers reach the client. Reading the data twice is what
    keeps the memory bounded: one graph with both passes would keep every partition in memory until
    the counts are complete.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        One row per point with columns ``user``, ``x``, ``y`` (x, y in [0, 1), or as ``extent`` says).
    resolution : int
        Δ = 2^ℓ.
    user, x, y : str
        Column names.
    extent : Extent or None
        Public extent mapping (lon, lat) or metres to [0, 1)² on the workers (points outside are refused).
    client : dask.distributed.Client or None
        Where to compute (default: the current Dask scheduler, e.g. an active Client).

    Returns
    -------
    UserAggregate
        Bit-identical to the in-memory result on the same points.

    Examples
    --------
    Same result as :func:`~dpcloak.heatmaps.data.bound_users` on the same points:

    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> from dpcloak.heatmaps import bound_users
    >>> points = pd.DataFrame({"user": ["ann", "ann", "bob"], "x": [0.1, 0.9, 0.6], "y": [0.1, 0.9, 0.6]})
    >>> agg = bound_users_dask(dd.from_pandas(points, npartitions=2), resolution=2)
    >>> agg.sums.tolist()
    [[0.5, 0.0], [0.0, 1.5]]
    >>> agg.sums.tolist() == bound_users(points.user, points.x, points.y, resolution=2).sums.tolist()
    True
    """
    dask, dd = _dask()
    ell = check_resolution(resolution)
    if not isinstance(frame, dd.DataFrame):
        raise InvalidParameterError(f"frame must be a dask.dataframe.DataFrame, got {type(frame).__name__}",
                                    parameter="frame")
    missing = [c for c in (user, x, y) if c not in frame.columns]
    if missing:
        raise InvalidParameterError(f"frame must have columns {user!r}, {x!r}, {y!r}; missing {missing}",
                                    parameter="frame")
    ids = frame[[user]].to_delayed()
    counts = _tree(dask, [dask.delayed(_partition_counts)(p, user) for p in ids], _add_counts)
    users = dask.delayed(_user_weights)(counts)
    (users,) = client.persist([users]) if client is not None else dask.persist(users)  # pass 1, kept on the cluster
    n_users = dask.delayed(_n_users)(users)
    pts = frame[[user, x, y]].to_delayed()
    total = _tree(dask, [dask.delayed(_partition_sums)(p, users, user, x, y, ell, extent) for p in pts], _add)
    if client is not None:
        (n_p, fixed), n_u = client.compute([total, n_users], sync=True)
    else:
        (n_p, fixed), n_u = dask.compute(total, n_users)
    if int(n_p) == 0:
        raise InvalidParameterError("x must not be empty", parameter="x")
    _check_user_count(int(n_u))
    delta = 1 << ell
    return _make_aggregate(np.asarray(fixed, dtype=np.int64).reshape(delta, delta), delta, int(n_u), int(n_p))


def bound_users_parquet(
    path: str | Path, *, resolution: int, user: str = "user", x: str = "x", y: str = "y", extent: Extent | None = None,
    client: Any = None,
) -> UserAggregate:
    """Read a Parquet file or directory lazily with Dask and bound per user on the cluster (as bound_users_dask).

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> points = pd.DataFrame({"user": ["ann", "ann", "bob"], "x": [0.1, 0.9, 0.6], "y": [0.1, 0.9, 0.6]})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     points.to_parquet(os.path.join(d, "points.parquet"))
    ...     agg = bound_users_parquet(os.path.join(d, "points.parquet"), resolution=2)
    >>> agg.sums.tolist(), agg.n_users
    ([[0.5, 0.0], [0.0, 1.5]], 2)
    """
    _, dd = _dask()
    frame = dd.read_parquet(str(path), columns=[user, x, y])
    return bound_users_dask(frame, resolution=resolution, user=user, x=x, y=y, extent=extent, client=client)

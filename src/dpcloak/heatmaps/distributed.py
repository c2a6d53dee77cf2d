"""Per-user bounding on a Dask cluster (``dask`` extra): from a Dask DataFrame or Parquet to one UserAggregate.

The steps of :func:`~dpcloak.heatmaps.data.bound_users` run on the workers: the per-user point
counts c_u (a groupby), then, per partition, validation (user ids by the rule of
:func:`~dpcloak.heatmaps.data.check_user_ids`, checked across partitions too), snapping and the int64
sums of the weights ⌊2^K / c_u⌋, combined by a tree of additions. Integer addition is exact and associative, so the
result is bit-identical to the in-memory path whatever the partitioning, and only the Δ × Δ
aggregate (plus the number of users) reaches the client. The pyramid levels are computed from it
exactly as in memory (their sums are integer too).
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
    _snap_unchecked,
    check_resolution,
    check_user_ids,
    fixed_point_weights,
)
from dpcloak.heatmaps.extent import Extent

__all__ = ["bound_users_dask", "bound_users_parquet"]

_COUNT = "__dpcloak_count__"


def _dask() -> tuple[Any, Any]:
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise MissingExtraError("the Dask aggregation path needs dask: pip install 'dpcloak[dask]'") from None
    return dask, dd


Partial = tuple[frozenset[str], NDArray[np.int64]]


def _partition_sums(part: Any, user: str, x: str, y: str, ell: int, extent: Extent | None) -> Partial:
    """One partition's kinds of user id and fixed-point cell sums (runs on a worker)."""
    delta = 1 << ell
    out = np.zeros(delta * delta, dtype=np.int64)
    if len(part) == 0:
        return frozenset(), out
    kind = check_user_ids(part[user].to_numpy())
    xa = part[x].to_numpy(dtype=float)
    ya = part[y].to_numpy(dtype=float)
    if extent is not None:
        xa, ya, _ = extent.to_unit(xa, ya)
    for name, arr in ((x, xa), (y, ya)):
        if not np.all(np.isfinite(arr)):
            raise InvalidParameterError(f"{name} must be finite; found NaN or infinite coordinates")
        outside = int(np.count_nonzero((arr < 0.0) | (arr >= 1.0)))
        if outside:
            raise InvalidParameterError(f"{name} must lie in [0, 1); {outside} points of a partition are outside")
    counts = part[_COUNT].to_numpy(dtype=np.int64)
    np.add.at(out, _snap_unchecked(xa, ya, ell), fixed_point_weights(counts))
    return frozenset({kind}), out


def _add(partials: Sequence[Partial]) -> Partial:
    total = np.zeros_like(partials[0][1])
    for _, a in partials:
        total += a
    return frozenset().union(*(k for k, _ in partials)), total


def bound_users_dask(
    frame: Any, *, resolution: int, user: str = "user", x: str = "x", y: str = "y", extent: Extent | None = None,
    client: Any = None,
) -> UserAggregate:
    """:func:`~dpcloak.heatmaps.data.bound_users` on a Dask DataFrame, computed on its cluster.

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
        raise InvalidParameterError(f"frame must be a dask.dataframe.DataFrame, got {type(frame).__name__}")
    missing = [c for c in (user, x, y) if c not in frame.columns]
    if missing:
        raise InvalidParameterError(f"frame must have columns {user!r}, {x!r}, {y!r}; missing {missing}")
    pts = frame[[user, x, y]]
    counts = pts.groupby(user).size().rename(_COUNT).to_frame()
    joined = pts.merge(counts, left_on=user, right_index=True, how="left")
    parts = [dask.delayed(_partition_sums)(p, user, x, y, ell, extent) for p in joined.to_delayed()]
    while len(parts) > 1:  # tree reduction on the workers
        parts = [dask.delayed(_add)(parts[i : i + 8]) for i in range(0, len(parts), 8)]
    n_users = counts.shape[0]
    n_points = pts.shape[0]
    if client is not None:
        (kinds, fixed), n_u, n_p = client.compute([parts[0], n_users, n_points], sync=True)
    else:
        (kinds, fixed), n_u, n_p = dask.compute(parts[0], n_users, n_points)
    if int(n_p) == 0:
        raise InvalidParameterError("x must not be empty")
    if len(kinds) > 1:
        raise InvalidParameterError(
            "users must be all numbers or all strings, got a mix across partitions; convert the id column to one type"
        )
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

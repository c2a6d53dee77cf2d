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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak.errors import InvalidParameterError, MissingExtraError
from dpcloak.heatmaps._binning import count_ids
from dpcloak.heatmaps.data import (
    UserAggregate,
    _check_user_count,
    _compact_ids,
    _id_bounds,
    _make_aggregate,
    accumulate_cells,
    check_resolution,
    check_user_ids,
    compact_counts,
    fixed_point_weights,
    refuse_outside,
)
from dpcloak.heatmaps.extent import Extent

__all__ = ["bound_users_dask", "bound_users_parquet"]

Partial = tuple[int, NDArray[np.int64]]


@dataclass(frozen=True)
class _Counts:
    """Points per user over some partitions: dense over the integer ids ``offset .. offset + len(dense) − 1``
    when they are compact, else a pandas Series indexed by id (``sparse``)."""

    kinds: frozenset[str]
    n_points: int
    offset: int = 0
    dense: NDArray[np.int64] | None = None
    sparse: Any = None

    def as_series(self) -> Any:
        import pandas as pd

        if self.dense is None:
            return self.sparse
        present = np.flatnonzero(self.dense)
        return pd.Series(self.dense[present], index=present + self.offset)


def _dask() -> tuple[Any, Any]:
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise MissingExtraError("the Dask aggregation path needs dask: pip install 'dpcloak[dask]'") from None
    return dask, dd


def _counts_of(ids: Any) -> _Counts:
    """The kind of a block's user ids (a numpy array or pandas Series) and each user's number of points."""
    import pandas as pd

    arr = ids.to_numpy() if isinstance(ids, pd.Series) else np.asarray(ids)
    if len(arr) == 0:
        return _Counts(kinds=frozenset(), n_points=0)
    kind = check_user_ids(arr)
    compact = compact_counts(arr, len(arr)) if arr.dtype.kind in "iu" else None
    if compact is not None:
        _, lo, counts = compact
        return _Counts(kinds=frozenset({kind}), n_points=len(arr), offset=lo, dense=counts)
    series = ids if isinstance(ids, pd.Series) else pd.Series(arr)
    return _Counts(kinds=frozenset({kind}), n_points=len(arr), sparse=series.value_counts(sort=False))


def _partition_counts(part: Any, user: str) -> _Counts:
    """Pass 1 on a worker: one partition's :func:`_counts_of`."""
    return _counts_of(part[user])


def _add_counts(partials: Sequence[_Counts]) -> _Counts:
    """Merge partial counts: dense tables added over the union of their ranges while that stays compact, else
    (some ids not compact integers) the per-id counts of every partial summed by id."""
    import pandas as pd

    kinds = frozenset().union(*(c.kinds for c in partials))
    if len(kinds) > 1:
        raise InvalidParameterError(
            "users must be all numbers or all strings, got a mix across partitions; convert the id column to one type",
            parameter="users"
        )
    full = [c for c in partials if c.n_points]
    n_points = sum(c.n_points for c in full)
    if not full:
        return _Counts(kinds=kinds, n_points=0)
    tables = [(c.offset, c.dense) for c in full if c.dense is not None]
    if len(tables) == len(full):
        lo = min(o for o, _ in tables)
        hi = max(o + t.size - 1 for o, t in tables)
        if _compact_ids(lo, hi, n_points):
            total = np.zeros(hi - lo + 1, dtype=np.int64)
            for o, t in tables:
                total[o - lo : o - lo + t.size] += t
            return _Counts(kinds=kinds, n_points=n_points, offset=lo, dense=total)
    merged = pd.concat([c.as_series() for c in full])
    codes, ids = pd.factorize(merged.index)
    # counts are integers < 2^53, so the float64 sums of bincount are exact
    total = np.bincount(codes, weights=merged.to_numpy(dtype=float), minlength=len(ids)).astype(np.int64)
    return _Counts(kinds=kinds, n_points=n_points, sparse=pd.Series(total, index=ids))


@dataclass(frozen=True)
class _Weights:
    """After pass 1: each user's fixed-point weight ⌊2^K / c_u⌋ (computed once), indexed like :class:`_Counts`:
    ``weights[id − offset]`` (dense) or ``weights[index.get_indexer(ids)]``."""

    n_users: int
    weights: NDArray[np.int64]
    offset: int = 0
    index: Any = None


def _user_weights(counts: _Counts) -> _Weights:
    if counts.sparse is not None:
        per_user = counts.sparse.to_numpy(dtype=np.int64)
        return _Weights(n_users=len(per_user), weights=fixed_point_weights(per_user), index=counts.sparse.index)
    dense = np.zeros(0, dtype=np.int64) if counts.dense is None else counts.dense
    return _Weights(n_users=int(np.count_nonzero(dense)), weights=fixed_point_weights(dense), offset=counts.offset)


def _changed() -> InvalidParameterError:
    return InvalidParameterError("the data changed between the two passes over the frame (a user was not counted)",
                                 parameter="frame")


def _add_sums(out: NDArray[np.int64], ids: Any, x: Any, y: Any, users: _Weights, ell: int,
              extent: Extent | None) -> None:
    """Pass 2 on one block of points: add their fixed-point weights to ``out`` (one compiled pass)."""
    if len(ids) == 0:
        return
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if extent is not None:
        xa, ya, _ = extent.to_unit(xa, ya)
    if users.index is None:
        arr = np.asarray(ids)
        if arr.dtype.kind not in "iu":
            raise _changed()
        lo, hi = _id_bounds(arr)
        if lo < users.offset or hi >= users.offset + users.weights.size:
            raise _changed()
        where, offset = arr, users.offset
    else:
        where, offset = users.index.get_indexer(ids), 0
        if np.any(where < 0):
            raise _changed()
    if accumulate_cells(out, xa, ya, ell, users.weights, where, offset=offset):
        refuse_outside(xa, ya)


def _partition_sums(part: Any, users: _Weights, user: str, x: str, y: str, ell: int,
                    extent: Extent | None) -> Partial:
    """Pass 2 on a worker: one partition's number of points and fixed-point cell sums."""
    out = np.zeros(1 << (2 * ell), dtype=np.int64)
    _add_sums(out, part[user].to_numpy(), part[x].to_numpy(dtype=float), part[y].to_numpy(dtype=float), users, ell,
              extent)
    return len(part), out


def _add(partials: Sequence[Partial]) -> Partial:
    total = np.zeros_like(partials[0][1])
    for _, a in partials:
        total += a
    return sum(n for n, _ in partials), total


def _n_users(users: _Weights) -> int:
    return users.n_users


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
    pts = frame[[user, x, y]].to_delayed()
    return _two_passes(dask, client, ell, [dask.delayed(_partition_counts)(p, user) for p in ids],
                       lambda users: [dask.delayed(_partition_sums)(p, users, user, x, y, ell, extent) for p in pts])


def _two_passes(dask: Any, client: Any, ell: int, counts: list[Any], sums: Any) -> UserAggregate:
    """Pass 1 (the count tasks, merged in a tree, turned into weights kept on the cluster), then pass 2 (the sum
    tasks ``sums(users)``, added in a tree); only the Δ × Δ sums and two numbers reach the client."""
    users = dask.delayed(_user_weights)(_tree(dask, counts, _add_counts))
    (users,) = client.persist([users]) if client is not None else dask.persist(users)  # pass 1, kept on the cluster
    n_users = dask.delayed(_n_users)(users)
    total = _tree(dask, sums(users), _add)
    if client is not None:
        (n_p, fixed), n_u = client.compute([total, n_users], sync=True)
    else:
        (n_p, fixed), n_u = dask.compute(total, n_users)
    if int(n_p) == 0:
        raise InvalidParameterError("x must not be empty", parameter="x")
    _check_user_count(int(n_u))
    delta = 1 << ell
    return _make_aggregate(np.asarray(fixed, dtype=np.int64).reshape(delta, delta), delta, int(n_u), int(n_p))


_BATCH = 1 << 20
"""Points per record batch read from Parquet: a task holds one batch (24 MiB for three 8-byte columns)."""

_TASK_ROWS = 1 << 22
"""Each task reads consecutive row groups (of one or more files) until it holds at least this many rows."""

Task = tuple[tuple[str, tuple[int, ...]], ...]
"""One task's share of the files: (file, its row groups) segments."""


def _tasks(files: Sequence[str], columns: tuple[str, ...]) -> list[Task]:
    """The files' row groups, in order, cut into tasks of at least :data:`_TASK_ROWS` rows (the last one fewer)."""
    import pyarrow.parquet as pq

    tasks: list[Task] = []
    segments: list[tuple[str, tuple[int, ...]]] = []
    rows = 0
    for path in files:
        meta = pq.ParquetFile(path).metadata
        missing = [c for c in columns if c not in meta.schema.names]
        if missing:
            raise InvalidParameterError(f"{path} must have columns {', '.join(map(repr, columns))}; missing "
                                        f"{missing}", parameter="path")
        groups: list[int] = []
        for i in range(meta.num_row_groups):
            groups.append(i)
            rows += meta.row_group(i).num_rows
            if rows >= _TASK_ROWS:
                tasks.append((*segments, (path, tuple(groups))))
                segments, groups, rows = [], [], 0
        if groups:
            segments.append((path, tuple(groups)))
    if segments:
        tasks.append(tuple(segments))
    return tasks


def _batches(task: Task, columns: list[str]) -> Iterator[Any]:
    import pyarrow.parquet as pq

    for path, groups in task:
        yield from pq.ParquetFile(path).iter_batches(batch_size=_BATCH, row_groups=list(groups), columns=columns,
                                                     use_threads=False)


def _column(batch: Any, i: int) -> Any:
    return batch.column(i).to_numpy(zero_copy_only=False)


def _task_counts(task: Task, user: str) -> _Counts:
    """Pass 1 on a worker: the counts of one task's row groups, batch by batch."""
    total = _Counts(kinds=frozenset(), n_points=0)
    for batch in _batches(task, [user]):
        ids = _column(batch, 0)
        table = total.dense
        lo, hi = _id_bounds(ids) if ids.dtype.kind in "iu" and len(ids) else (0, -1)
        if table is not None and total.n_points and hi >= lo >= total.offset and hi < total.offset + table.size:
            count_ids(np.ascontiguousarray(ids, dtype=np.int64), total.offset, table)  # this task's own table
            total = replace(total, n_points=total.n_points + len(ids))
        else:
            total = _add_counts([total, _counts_of(ids)])
    return total


def _task_sums(task: Task, users: _Weights, user: str, x: str, y: str, ell: int,
               extent: Extent | None) -> Partial:
    """Pass 2 on a worker: one task's number of points and fixed-point cell sums, batch by batch."""
    out = np.zeros(1 << (2 * ell), dtype=np.int64)
    n = 0
    for batch in _batches(task, [user, x, y]):
        _add_sums(out, _column(batch, 0), _column(batch, 1), _column(batch, 2), users, ell, extent)
        n += batch.num_rows
    return n, out


def bound_users_parquet(
    path: str | Path, *, resolution: int, user: str = "user", x: str = "x", y: str = "y", extent: Extent | None = None,
    client: Any = None,
) -> UserAggregate:
    """Bound per user on the cluster straight from a Parquet file or a directory of ``*.parquet`` files.

    The two passes of :func:`bound_users_dask`, with the workers reading the files themselves: one
    task per run of consecutive row groups (of one or more files, at least 2^22 rows but for the last),
    read with PyArrow one record batch of 2^20 rows at a time (one thread per task, only the needed
    columns, no pandas), so a task holds one batch and its Δ × Δ sums whatever the file sizes.
    Bit-identical to :func:`~dpcloak.heatmaps.data.bound_users` on the same points.

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
    dask, _ = _dask()
    ell = check_resolution(resolution)
    root = Path(path)
    files = [root] if root.is_file() else sorted(f for f in root.rglob("*.parquet") if f.is_file())
    if not files:
        raise InvalidParameterError(f"path must be a Parquet file or a directory holding *.parquet files, got {path}",
                                    parameter="path", got=str(path))
    tasks = _tasks([str(f) for f in files], (user, x, y))
    return _two_passes(dask, client, ell, [dask.delayed(_task_counts)(t, user) for t in tasks],
                       lambda users: [dask.delayed(_task_sums)(t, users, user, x, y, ell, extent) for t in tasks])

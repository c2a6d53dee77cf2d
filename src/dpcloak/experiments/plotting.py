"""Helpers shared by experiments: select rows, mean with 95 % confidence intervals, panels, slopes.

Figures are built on :class:`matplotlib.figure.Figure` directly (no ``pyplot`` state), so they are
safe in worker processes and need no display.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dpcloak.experiments.registry import Row

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["Summary", "errorbar", "loglog_slope", "mean_ci", "new_figure", "select", "summarise"]


def ok_rows(rows: Sequence[Row]) -> list[Row]:
    """Rows whose trial did not fail (empty ``error``)."""
    return [r for r in rows if not r.get("error")]


def select(rows: Sequence[Row], **where: Any) -> list[Row]:
    """Successful rows whose parameters equal every ``name=value`` given.

    Examples
    --------
    >>> rows = [{"n": 10, "error": ""}, {"n": 20, "error": ""}, {"n": 10, "error": "diverged"}]
    >>> select(rows, n=10)  # the failed trial is left out
    [{'n': 10, 'error': ''}]
    """
    return [r for r in ok_rows(rows) if all(r.get(k) == v for k, v in where.items())]


def mean_ci(values: Sequence[float] | NDArray[np.float64], *, level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of its Student-t confidence interval (0 with fewer than two values).

    Examples
    --------
    >>> mean, half = mean_ci([1.0, 2.0, 3.0])  # t(0.975, 2) = 4.303, s = 1, n = 3
    >>> mean, round(half, 4), round(4.302653 / 3**0.5, 4)
    (2.0, 2.4841, 2.4841)
    >>> mean_ci([5.0])
    (5.0, 0.0)
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan
    if x.size == 1:
        return float(x[0]), 0.0
    half = stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half)


@dataclass(frozen=True)
class Summary:
    """Per-``x`` mean of ``y`` with the 95 % CI half-width and the number of finite values.

    Examples
    --------
    Returned by :func:`summarise`:

    >>> rows = [{"n": 10, "emd": 0.2}, {"n": 10, "emd": 0.4}, {"n": 20, "emd": 0.1}]
    >>> s = summarise(rows, "n", "emd")
    >>> isinstance(s, Summary), s.x.tolist(), s.mean.round(6).tolist(), s.count.tolist()
    (True, [10.0, 20.0], [0.3, 0.1], [2, 1])
    >>> float(s.half[1])  # one value: no interval
    0.0
    """

    x: NDArray[np.float64]
    mean: NDArray[np.float64]
    half: NDArray[np.float64]
    count: NDArray[np.int64]


def summarise(rows: Sequence[Row], x: str, y: str, **where: Any) -> Summary:
    """Group the selected rows by ``x`` and summarise ``y`` (failed trials and NaNs excluded).

    Examples
    --------
    >>> rows = [{"n": 10, "emd": 0.2}, {"n": 10, "emd": float("nan")}, {"n": 20, "emd": 0.1}]
    >>> s = summarise(rows, "n", "emd")
    >>> s.x.tolist(), s.mean.tolist(), s.count.tolist()  # the NaN is excluded
    ([10.0, 20.0], [0.2, 0.1], [1, 1])
    """
    chosen = select(rows, **where)
    xs = sorted({r[x] for r in chosen})
    stats_ = [mean_ci([r[y] for r in chosen if r[x] == v]) for v in xs]
    counts = [sum(1 for r in chosen if r[x] == v and np.isfinite(r[y])) for v in xs]
    return Summary(np.asarray(xs, dtype=float), np.asarray([s[0] for s in stats_]), np.asarray([s[1] for s in stats_]),
                   np.asarray(counts, dtype=np.int64))


def errorbar(ax: Axes, rows: Sequence[Row], x: str, y: str, *, label: str | None = None, **where: Any) -> Summary:
    """Plot the mean of ``y`` against ``x`` with 95 % CI bars; return the summary plotted.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rows = [{"n": 10, "emd": 0.2}, {"n": 10, "emd": 0.4}, {"n": 20, "emd": 0.1}, {"n": 20, "emd": 0.3}]
    >>> fig, (ax,) = new_figure(1)
    >>> s = errorbar(ax, rows, "n", "emd", label="EMD")
    >>> s.mean.round(6).tolist(), len(ax.containers)  # one errorbar container
    ([0.3, 0.2], 1)
    """
    s = summarise(rows, x, y, **where)
    ax.errorbar(s.x, s.mean, yerr=s.half, marker="o", markersize=3, capsize=3, label=label)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    return s


def log_axes(ax: Axes, *, x: bool = True, y: bool = True) -> None:
    """Logarithmic axes without crowded minor tick labels."""
    from matplotlib.ticker import NullFormatter

    if x:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    if y:
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())


def loglog_slope(x: Sequence[float] | NDArray[np.float64], y: Sequence[float] | NDArray[np.float64]) -> float:
    """Least-squares slope of ``log y`` against ``log x`` over positive finite pairs (NaN if fewer than two).

    Examples
    --------
    >>> round(loglog_slope([1.0, 10.0, 100.0], [3.0, 0.3, 0.03]), 12)  # y ∝ 1/x
    -1.0
    >>> loglog_slope([1.0], [1.0])
    nan
    """
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(xa) & np.isfinite(ya) & (xa > 0) & (ya > 0)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(xa[keep]), np.log(ya[keep]), 1)[0])


def new_figure(panels: int, *, ncols: int = 3, size: tuple[float, float] = (4.0, 3.2),
               titles: Mapping[int, str] | Sequence[str] | None = None) -> tuple[Figure, list[Axes]]:
    """A figure with ``panels`` axes on a grid of at most ``ncols`` columns.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig, axes = new_figure(4, ncols=3, titles=["a", "b", "c", "d"])
    >>> len(axes), [ax.get_title() for ax in axes]
    (4, ['a', 'b', 'c', 'd'])
    """
    from matplotlib.figure import Figure

    ncols = max(1, min(ncols, panels))
    nrows = math.ceil(panels / ncols)
    fig = Figure(figsize=(size[0] * ncols, size[1] * nrows), layout="constrained")
    axes = [fig.add_subplot(nrows, ncols, k + 1) for k in range(panels)]
    if titles is not None:
        for k, title in enumerate(titles if not isinstance(titles, Mapping) else [titles[i] for i in range(panels)]):
            axes[k].set_title(title, fontsize=10)
    return fig, axes

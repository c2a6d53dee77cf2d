"""Helpers shared by experiments: select rows, mean with 95 % confidence intervals, panels, slopes.

Figures are built on :class:`matplotlib.figure.Figure` directly (no ``pyplot`` state), so they are
safe in worker processes and need no display.

Presentation rules every experiment figure follows (checked by :func:`figure_problems`): both axes
of every panel labelled, with units where the quantity has one; legends outside the data (one
figure legend below the panels when they share their series); a colour bar for every colour-mapped
image, shared by panels that are compared; tick labels on every axis. Error bars are the Student-t
95 % interval of the mean **clipped to the metric's range** (:data:`RANGES`: e.g. EMD and KL are
never negative, SIM lies in [0, 1]): a bar that stops at 0 means that the interval reaches 0. On a
logarithmic axis a mean of exactly 0 cannot be drawn; it is marked by a ▼ on the bottom edge.
"""

from __future__ import annotations

import itertools
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

__all__ = [
    "LABELS", "RANGES", "Summary", "clipped_interval", "errorbar", "figure_legend", "figure_problems", "label_of",
    "legend_below", "log_axes", "loglog_slope", "mean_ci", "new_figure", "ok_rows", "select", "summarise",
]

#: Axis labels (with units) of the parameters and measured quantities the experiments share.
LABELS: dict[str, str] = {
    "n": "n (grid points)",
    "m": "m (sensors)",
    "k": "k (sources)",
    "T": "T = μt (diffusion time)",
    "t": "t (diffusion time)",
    "sigma": "σ (noise std. dev., reading units)",
    "epsilon": "ε (privacy budget)",
    "delta": "δ (privacy failure probability)",
    "delta2": "Δ2 (reading units)",
    "emd": "EMD (units of the interval [0, 1])",
    "separation": "separation of the sources (units of [0, 1])",
    "resolution": "Δ (grid cells per side)",
    "theta": "ϑ = Q (noise variance)",
    "n_points": "N (grid points)",
    "B": "B (scaling factor)",
}

#: Range of each metric (lower, upper; None for unbounded), used to clip confidence intervals.
#: A column ``<metric>_<suffix>`` (e.g. ``emd_ours``) has the range of ``<metric>``.
RANGES: dict[str, tuple[float | None, float | None]] = {
    "emd": (0.0, None), "kl": (0.0, None), "sim": (0.0, 1.0), "cc": (-1.0, 1.0), "delta2": (0.0, None),
    "sigma": (0.0, None), "mass": (0.0, None), "fisher": (0.0, None), "error": (0.0, None),
    "l1": (0.0, 2.0), "l2": (0.0, None), "bits": (0.0, None), "relative": (0.0, None), "max": (0.0, None),
}


def label_of(name: str) -> str:
    """The axis label of a column (:data:`LABELS`), else the column name itself.

    Examples
    --------
    >>> label_of("epsilon"), label_of("wall_time")
    ('ε (privacy budget)', 'wall_time')
    """
    return LABELS.get(name, name)


def _range_of(name: str) -> tuple[float | None, float | None]:
    return RANGES.get(name, RANGES.get(name.split("_")[0], (None, None)))


def ok_rows(rows: Sequence[Row]) -> list[Row]:
    """Rows whose trial did not fail (empty ``error``).

    Examples
    --------
    >>> rows = [{"n": 10, "error": ""}, {"n": 20, "error": "diverged"}, {"n": 30}]
    >>> [r["n"] for r in ok_rows(rows)]  # a missing ``error`` counts as no failure
    [10, 30]
    """
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


def clipped_interval(s: Summary, bounds: tuple[float | None, float | None] = (None, None)) -> NDArray[np.float64]:
    """Asymmetric error-bar lengths ``[[below], [above]]`` of the mean ± half-width, clipped to ``bounds``.

    Examples
    --------
    >>> s = Summary(np.array([1.0]), np.array([0.25]), np.array([0.5]), np.array([2]))
    >>> clipped_interval(s, (0.0, 1.0)).tolist()  # 0.25 − 0.5 < 0 is clipped at 0
    [[0.25], [0.5]]
    """
    low, high = s.mean - s.half, s.mean + s.half
    if bounds[0] is not None:
        low = np.maximum(low, bounds[0])
    if bounds[1] is not None:
        high = np.minimum(high, bounds[1])
    return np.vstack([np.maximum(s.mean - low, 0.0), np.maximum(high - s.mean, 0.0)])


def errorbar(ax: Axes, rows: Sequence[Row], x: str, y: str, *, label: str | None = None,
             bounds: tuple[float | None, float | None] | None = None, **where: Any) -> Summary:
    """Plot the mean of ``y`` against ``x`` with 95 % CI bars clipped to the metric's range; return the summary.

    ``bounds`` defaults to the range of ``y`` in :data:`RANGES`. The axis labels are set from
    :data:`LABELS` (callers with a more specific label override them).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rows = [{"n": 10, "emd": 0.2}, {"n": 10, "emd": 0.4}, {"n": 20, "emd": 0.1}, {"n": 20, "emd": 0.3}]
    >>> fig, (ax,) = new_figure(1)
    >>> s = errorbar(ax, rows, "n", "emd", label="EMD")
    >>> s.mean.round(6).tolist(), len(ax.containers), ax.get_xlabel()  # one errorbar container, labelled axes
    ([0.3, 0.2], 1, 'n (grid points)')
    """
    s = summarise(rows, x, y, **where)
    yerr = clipped_interval(s, _range_of(y) if bounds is None else bounds)
    ax.errorbar(s.x, s.mean, yerr=yerr, marker="o", markersize=3, capsize=3, label=label)
    ax.set_xlabel(label_of(x))
    ax.set_ylabel(label_of(y))
    return s


def _plotted_x(ax: Axes) -> NDArray[np.float64]:
    values = [np.asarray(line.get_xdata(), dtype=float) for line in ax.lines]
    xs = np.concatenate(values) if values else np.zeros(0)
    return np.unique(xs[np.isfinite(xs)])


def log_axes(ax: Axes, *, x: bool = True, y: bool = True) -> None:
    """Logarithmic axes, called after plotting: readable ticks, and zero means marked instead of lost.

    x: major ticks at the plotted x values when they are few (≤ 8) and round (three significant digits),
    labelled ``:g``; otherwise the decades.
    y: decades labelled, and 2× and 5× too when fewer than two decades are shown. A
    plotted y ≤ 0 cannot sit on a log axis: it is removed from its line (which is broken there
    instead of plunging off the axis) and marked by a ▼ on the bottom edge, labelled in the legend.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> fig, (ax,) = new_figure(1)
    >>> line, = ax.plot([10, 100, 1000], [1.0, 0.0, 0.01], "o-", label="EMD")
    >>> log_axes(ax)
    >>> ax.get_xscale(), ax.get_yscale(), ax.get_xticks().tolist()  # ticks at the three round x values
    ('log', 'log', [10.0, 100.0, 1000.0])
    >>> line.get_ydata().tolist()  # the zero is cut out of the line ...
    [1.0, nan, 0.01]
    >>> [l.get_label() for l in ax.lines]  # ... and marked on the bottom edge
    ['EMD', 'mean = 0 (not on a log axis)']
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter, NullLocator

    def plain(v: float, _: Any) -> str:
        return f"{v:g}"

    def minor(coefficients: Sequence[float]) -> FuncFormatter:
        def fmt(v: float, _: Any) -> str:
            mantissa = v / 10 ** math.floor(math.log10(v)) if v > 0 else 0.0
            return f"{v:g}" if any(abs(mantissa - c) < 1e-6 for c in coefficients) else ""
        return FuncFormatter(fmt)

    def label(axis: Any, limits: tuple[float, float]) -> None:
        """Decades labelled; with fewer than two decades inside the limits, 2× and 5× as well (plain
        numbers), every minor tick when the limits span less than a factor of 3, evenly spaced plain
        ticks when they span less than a factor of 2."""
        lo, hi = sorted(limits)
        if lo > 0 and hi / lo < 2:
            axis.set_major_locator(MaxNLocator(nbins=4))
            axis.set_major_formatter(FuncFormatter(plain))
            axis.set_minor_locator(NullLocator())
        elif lo > 0 and math.floor(math.log10(hi)) - math.ceil(math.log10(lo)) + 1 < 2:
            axis.set_major_formatter(FuncFormatter(plain))
            axis.set_minor_formatter(minor(range(2, 10) if hi / lo < 3 else (2.0, 5.0)))
        else:
            axis.set_minor_formatter(NullFormatter())

    if x:
        values = _plotted_x(ax)
        ax.set_xscale("log")
        positive = values[values > 0]
        round_values = all(float(f"{v:.3g}") == v for v in positive)
        if 2 <= positive.size <= 8 and round_values:
            ax.xaxis.set_major_locator(FixedLocator(positive.tolist()))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_locator(NullLocator())
        else:
            label(ax.xaxis, ax.get_xlim())
    if y:
        ax.set_yscale("log")
        label(ax.yaxis, ax.get_ylim())
        from matplotlib.container import ErrorbarContainer

        caps = {id(cap) for c in ax.containers if isinstance(c, ErrorbarContainer) for cap in c.lines[1]}
        marked = False
        for line in [line for line in ax.lines if id(line) not in caps]:
            xd, yd = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
            zero = np.isfinite(yd) & (yd <= 0)
            if not zero.any() or line.get_label() == "_zero_marker":
                continue
            line.set_ydata(np.where(zero, np.nan, yd))
            ax.plot(xd[zero], np.full(int(zero.sum()), 0.0), marker="v", markersize=7, linestyle="none",
                    color=line.get_color(), transform=ax.get_xaxis_transform(), clip_on=False,
                    label="mean = 0 (not on a log axis)" if not marked else "_zero_marker")
            marked = True


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


def figure_legend(fig: Figure, axes: Sequence[Axes] | None = None, *, ncols: int | None = None,
                  title: str | None = None) -> None:
    """One legend below the panels with every distinct labelled series of ``axes`` (default: all axes).

    Examples
    --------
    >>> fig, axes = new_figure(2)
    >>> for ax in axes:
    ...     _ = ax.plot([1, 2], [1, 2], label="ours")
    >>> figure_legend(fig)
    >>> [t.get_text() for t in fig.legends[0].get_texts()]
    ['ours']
    """
    handles, labels = [], []
    for ax in fig.axes if axes is None else axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if labels:
        fig.legend(handles, labels, loc="outside lower center", ncols=ncols or min(len(labels), 3), fontsize=8,
                   title=title, title_fontsize=8)


def legend_below(ax: Axes, *, ncols: int = 1) -> None:
    """The panel's own legend under its x label (for panels whose series differ from their neighbours').

    Examples
    --------
    >>> fig, axes = new_figure(1)
    >>> _ = axes[0].plot([1, 2], [1, 2], label="Laplace")
    >>> legend_below(axes[0])
    >>> axes[0].get_legend().get_texts()[0].get_text()
    'Laplace'
    """
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize=7, ncols=ncols, frameon=False)


def _is_colorbar(ax: Axes) -> bool:
    return hasattr(ax, "_colorbar")


def _has_data(ax: Axes) -> bool:
    for line in ax.lines:
        if np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any():
            return True
    return bool(ax.collections or ax.images or ax.patches or ax.containers)


def _numeric(text: str) -> bool:
    try:
        float(text.replace("−", "-").replace("$", "").replace("\\mathdefault{", "").replace("}", ""))
    except ValueError:
        return "10^" in text
    return True


def _densify(pts: NDArray[np.float64], *, joined: bool, step: int = 16) -> NDArray[np.float64]:
    """Display points of a line: its vertices, plus points along its segments when they are drawn."""
    if not joined or len(pts) < 2:
        return pts
    frac = np.linspace(0.0, 1.0, step, endpoint=False)[:, None, None]
    along = pts[:-1][None] + frac * (pts[1:] - pts[:-1])[None]
    return np.vstack([along.reshape(-1, 2), pts[-1:]])


def figure_problems(fig: Figure) -> list[str]:
    """Presentation problems of a figure: what the module docstring's rules forbid, one line each.

    Checked on every panel that is not a colour bar: an empty panel; a missing x or y label; an
    axis with fewer than two tick labels (a degenerate or unlabelled scale) or with overlapping
    tick labels; a legend drawn over a
    plotted point; a colour-mapped image (``imshow``/``pcolormesh``) whose colour scale has no colour
    bar (a bar on another image with the same norm counts: that is a shared scale).

    Examples
    --------
    >>> fig, axes = new_figure(1)
    >>> _ = axes[0].plot([1, 2, 3], [1, 4, 9])
    >>> figure_problems(fig)
    ['panel 0 (untitled): no x label', 'panel 0 (untitled): no y label']
    >>> _ = axes[0].set_xlabel("n (users)"), axes[0].set_ylabel("EMD (unit square)")
    >>> figure_problems(fig)
    []
    """
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

    fig.canvas.draw()
    problems = []
    panels = [ax for ax in fig.axes if not _is_colorbar(ax) and ax.get_visible()]
    bars = [ax._colorbar for ax in fig.axes if _is_colorbar(ax)]  # type: ignore[attr-defined]
    for k, ax in enumerate(panels):
        name = f"panel {k} ({ax.get_title() or 'untitled'})"
        if not _has_data(ax):
            problems.append(f"{name}: empty")
            continue
        for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
            if not label.strip():
                problems.append(f"{name}: no {axis} label")
            ticks = ax.get_xticklabels(which="both") if axis == "x" else ax.get_yticklabels(which="both")
            shown = [t for t in ticks if t.get_text().strip() and t.get_visible()]
            lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
            shown = [t for t in shown if min(lo, hi) <= (t.get_position()[0 if axis == "x" else 1]) <= max(lo, hi)]
            categorical = len(shown) == 1 and not _numeric(shown[0].get_text())
            if len(shown) < 2 and not categorical:
                problems.append(f"{name}: {axis} axis has {len(shown)} tick label(s)")
            boxes = sorted((t.get_window_extent() for t in shown), key=lambda b: (b.x0, b.y0))
            if any(a.overlaps(b) for a, b in itertools.pairwise(boxes)):
                problems.append(f"{name}: {axis} tick labels overlap")
        legend = ax.get_legend()
        if legend is not None:
            box = legend.get_window_extent()
            for line in ax.lines:
                xy = np.column_stack([np.asarray(line.get_xdata(), dtype=float),
                                      np.asarray(line.get_ydata(), dtype=float)])
                xy = xy[np.isfinite(xy).all(axis=1)]
                if xy.size and line.get_visible() and line.get_label() != "_zero_marker":
                    pts = _densify(line.get_transform().transform(xy), joined=line.get_linestyle() not in ("None", ""))
                    inside = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
                    if inside.any():
                        problems.append(f"{name}: legend covers data of {line.get_label()!r}")
                        break
        for mappable in [*ax.images, *(c for c in ax.collections if isinstance(c, QuadMesh))]:
            if isinstance(mappable, AxesImage | QuadMesh) and not any(b.mappable.norm is mappable.norm for b in bars):
                problems.append(f"{name}: colour-mapped image without a colour bar")
    return problems


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

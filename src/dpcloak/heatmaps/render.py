"""Gaussian-filtered heatmaps H^σ (Ghazi et al., §2.3), block-free rendering and a plotting helper.

    H^σ_p(x, y) = Σ_{(x',y') ∈ G_Δ} e^{-((x−x')² + (y−y')²)/(2σ²)} p(x', y') / Z(x', y'),
    Z(x', y') = Σ_{(x, y) ∈ G_Δ} e^{-((x−x')² + (y−y')²)/(2σ²)}.

The paper prints Z with the sum over (x', y') — the same letters as its argument, a typo; the only
reading under which Z depends on (x', y') is the sum over the output points (x, y) written above,
which also makes H^σ mass-preserving (each source's kernel is normalised over the truncated grid), in
line with the constant Z of the untruncated version in Appendix B.

The kernel is separable: with the 1-D Gram matrix K[a, b] = e^{-((a−b)/Δ)²/(2σ²)} and z = K 1,
Z(x', y') = z(y') z(x') and H^σ_p = K (p ⊘ z zᵀ) Kᵀ, two dense Δ × Δ matrix products (BLAS; a few
ms at Δ = 256, ~0.1 s at Δ = 1024). The kernel is not truncated, so the result equals the definition
up to floating-point rounding (tails below e^{-745} underflow to 0, as in the definition itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_choice, check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.extent import Extent

__all__ = ["render", "render_layers", "plot_heatmaps"]


def _gram(delta: int, sigma: float) -> NDArray[np.float64]:
    d = np.arange(delta) / delta
    return np.exp(-((d[:, None] - d[None, :]) ** 2) / (2.0 * sigma * sigma))


def render(p: ArrayLike, *, sigma: float) -> NDArray[np.float64]:
    """The heatmap H^σ_p of a (Δ × Δ) non-negative array p.

    Parameters
    ----------
    p : array_like, shape (Δ, Δ)
        Masses on G_Δ (any square size).
    sigma : float
        Filter standard deviation σ ≥ 0 in the units of [0, 1)² (σΔ pixels); σ = 0 returns p.

    Returns
    -------
    ndarray, shape (Δ, Δ)
        H^σ_p, with the same total mass as p.

    Examples
    --------
    >>> p = np.zeros((8, 8)); p[4, 4] = 1.0
    >>> h = render(p, sigma=0.1)
    >>> round(float(h.sum()), 12), bool(h[4, 4] == h.max()), bool(h[4, 4] < 1.0)  # mass kept, spread out
    (1.0, True, True)
    >>> bool(np.array_equal(render(p, sigma=0.0), p))
    True
    """
    arr = check_array("p", p, ndim=2, nonnegative=True)
    if arr.shape[0] != arr.shape[1]:
        raise InvalidParameterError(f"p must be a square Δ × Δ array, got shape {arr.shape}", parameter="p")
    sig = check_real("sigma", sigma, low=0.0, low_inclusive=True)
    if sig * arr.shape[0] < 1e-3:  # neighbour weights exp(-1/(2 (σΔ)²)) underflow to 0: H^σ is p itself
        return arr.copy()
    k = _gram(arr.shape[0], sig)
    z = k.sum(axis=0)
    return np.asarray(k @ (arr / np.outer(z, z)) @ k.T, dtype=np.float64)


def render_layers(layers: Sequence[tuple[int, ArrayLike]], *, sigma: float) -> NDArray[np.float64]:
    """Render an aggregate given as layers of uniform blocks without showing the blocks.

    RECONSTRUCT (and the dense method) estimate the mass of whole blocks of b × b cells and spread it
    uniformly, which H^σ draws as visible squares when b/Δ ≫ σ. Here each layer (block side b_j cells,
    masses spread uniformly over the blocks) is rendered at its own scale, H^{σ_j} with
    σ_j = max(σ, b_j / (2Δ)): a block of side L becomes a smooth bump of standard deviation L/2 centred
    on it, and single cells get H^σ as in §2.3. The result keeps the total mass (each H^σ does) and,
    being computed from the released aggregate only, is post-processing. This is a rendering choice
    (documented here), not the paper's: its H^σ is the special case of one layer with b = 1.

    Parameters
    ----------
    layers : sequence of (int, (Δ, Δ) array)
        (block side in cells, masses spread uniformly over the blocks), e.g. ``HeatmapResult.layers``.
    sigma : float
        σ ≥ 0 of the finest cells, units of [0, 1)².

    Examples
    --------
    A block of 4 × 4 cells estimated as a whole is drawn as a smooth bump, not a flat square:

    >>> block = np.zeros((8, 8)); block[:4, :4] = 1 / 16
    >>> h = render_layers([(4, block)], sigma=0.01)
    >>> round(float(h.sum()), 12), bool(h[0, 0] < h[1, 1])
    (1.0, True)
    """
    if not layers:
        raise InvalidParameterError("layers must contain at least one (block, array) pair", parameter="layers")
    sig = check_real("sigma", sigma, low=0.0, low_inclusive=True)
    rendered = []
    for block, arr in layers:
        a = check_array("layer", arr, ndim=2, nonnegative=True)
        b = check_int("block", block, minimum=1, maximum=a.shape[0])
        rendered.append(render(a, sigma=max(sig, b / (2.0 * a.shape[0]))))
    return np.asarray(np.sum(rendered, axis=0), dtype=np.float64)


def plot_heatmaps(
    panels: Mapping[str, ArrayLike],
    *,
    extent: Extent | None = None,
    units: str = "m",
    colour_scale: str = "sqrt",
    cmap: str = "inferno",
    size: float = 3.6,
) -> Figure:
    """Draw rendered heatmaps side by side on one shared colour scale, with axes and a colour bar.

    Parameters
    ----------
    panels : mapping of str to (Δ, Δ) arrays
        Title → rendered map (mass per cell, rows are y; e.g. ``result.render(sigma=...)``), drawn with
        the origin at the lower left. All panels share one colour scale (0 to the largest value).
    extent : Extent or None
        The public extent: axes in kilometres east/north of the projection centre (``units="m"``) or
        in longitude/latitude (``units="lonlat"``, a lon/lat extent), and the colour bar in share of
        the total per km². ``None``: axes in units of the unit square, colour bar in share per cell.
    units : {"m", "lonlat"}
        Axis units with an extent.
    colour_scale : {"sqrt", "linear"}
        Colour of a value v ∝ √v (default: diffuse areas stay visible next to hot spots; the colour
        bar shows the true values) or ∝ v.
    cmap : str
        Matplotlib colour map.
    size : float
        Inches per panel.

    Returns
    -------
    matplotlib.figure.Figure
        Save it with ``fig.savefig(path)``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> p = np.zeros((8, 8)); p[4, 4] = 1.0
    >>> q = np.zeros((8, 8)); q[4, 5] = 1.0
    >>> fig = plot_heatmaps({"true": render(p, sigma=0.05), "released": render(q, sigma=0.05)})
    >>> [ax.get_title() for ax in fig.axes[:2]], fig.axes[0].get_xlabel()
    (['true', 'released'], 'x (unit square)')
    >>> fig.axes[-1].get_ylabel()  # the shared colour bar
    'share of the total per cell'
    >>> plt.close(fig)
    """
    if not panels:
        raise InvalidParameterError("panels must contain at least one heatmap", parameter="panels")
    unit = check_choice("units", units, ("m", "lonlat"))
    power = {"sqrt": 0.5, "linear": 1.0}[check_choice("colour_scale", colour_scale, ("sqrt", "linear"))]
    if unit == "lonlat" and (extent is None or extent.projection is None):
        raise InvalidParameterError("units='lonlat' needs a lon/lat extent (Extent.lonlat_box or Extent.around)",
                                    parameter="units")
    maps = {title: check_array(title, arr, ndim=2, nonnegative=True) for title, arr in panels.items()}
    delta = next(iter(maps.values())).shape[0]
    if extent is None:
        box, scale, bar = (0.0, 1.0, 0.0, 1.0), 1.0, "share of the total per cell"
    else:
        km = 1e-3
        box = (extent.x_min * km, (extent.x_min + extent.size) * km, extent.y_min * km,
               (extent.y_min + extent.size) * km)
        scale, bar = 1.0 / (extent.cell_size(delta) * km) ** 2, "share of the total per km²"
    vmax = max(float(a.max()) for a in maps.values()) * scale or 1.0
    fig = Figure(figsize=(size * len(maps) + 1.2, size + 0.5), layout="constrained")
    axes = fig.subplots(1, len(maps), squeeze=False)[0]
    images = []
    for ax, (title, arr) in zip(axes, maps.items(), strict=True):
        image = ax.imshow(arr * scale, origin="lower", cmap=cmap, extent=box, norm=PowerNorm(power, 0.0, vmax),
                          interpolation="bilinear")
        images.append(image)
        ax.set_title(title, fontsize=9)
        _label_axes(ax, extent, unit, box)
    fig.colorbar(images[0], ax=list(axes), label=bar, shrink=0.85)
    return fig


def _label_axes(ax: Any, extent: Extent | None, unit: str, box: tuple[float, float, float, float]) -> None:
    if extent is None:
        ax.set_xlabel("x (unit square)")
        ax.set_ylabel("y (unit square)")
        return
    if unit == "m":
        ax.set_xlabel("east (km)")
        ax.set_ylabel("north (km)")
        return
    # Round lon/lat ticks placed along the square's centre lines (the projected graticule is nearly straight
    # over a city; the exact lon/lat of each cell is in the CSV and GeoJSON outputs).
    if extent.projection is None:
        raise InvalidParameterError("lon/lat axes need a lon/lat extent (Extent.lonlat_box or Extent.around)",
                                    parameter="extent", allowed="a lon/lat extent")
    cx, cy = 0.5 * (box[0] + box[1]) * 1e3, 0.5 * (box[2] + box[3]) * 1e3
    lon_edges, lat_mid = extent.to_lonlat(np.array(box[:2]) * 1e3, np.full(2, cy))
    lon_mid, lat_edges = extent.to_lonlat(np.full(2, cx), np.array(box[2:]) * 1e3)
    lons = np.asarray(MaxNLocator(5).tick_values(*lon_edges), dtype=float)
    lats = np.asarray(MaxNLocator(5).tick_values(*lat_edges), dtype=float)
    xt = extent.projection.forward(lons, np.full(lons.shape, lat_mid[0]))[0] / 1e3
    yt = extent.projection.forward(np.full(lats.shape, lon_mid[0]), lats)[1] / 1e3
    keep_x, keep_y = (xt >= box[0]) & (xt <= box[1]), (yt >= box[2]) & (yt <= box[3])
    ax.set_xticks(xt[keep_x], [f"{v:.6g}" for v in lons[keep_x]])
    ax.set_yticks(yt[keep_y], [f"{v:.6g}" for v in lats[keep_y]])
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("longitude (°)")
    ax.set_ylabel("latitude (°)")

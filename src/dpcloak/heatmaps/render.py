"""Gaussian-filtered heatmaps H^σ (Ghazi et al., §2.3) and a side-by-side plotting helper.

    H^σ_p(x, y) = Σ_{(x',y') ∈ G_Δ} e^{-((x−x')² + (y−y')²)/(2σ²)} p(x', y') / Z(x', y'),
    Z(x', y') = Σ_{(x, y) ∈ G_Δ} e^{-((x−x')² + (y−y')²)/(2σ²)}.

The paper prints Z with the sum over (x', y') — the same letters as its argument, a typo; the only
reading under which Z depends on (x', y') is the sum over the output points (x, y) written above,
which also makes H^σ mass-preserving (each source's kernel is normalised over the truncated grid), in
line with the constant Z of the untruncated version in Appendix B.

The kernel is separable and Z(x', y') = Z_x(x') Z_y(y'), so H^σ = G ∗ (p / Z) with Z = G ∗ 1, where
G is a zero-padded 1-D Gaussian filter applied along each axis (:func:`scipy.ndimage.gaussian_filter1d`,
truncated at 6σ: relative error below e^{-18}). Cost O(Δ² σΔ) instead of O(Δ⁴).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage

from dpcloak._validation import check_array, check_real
from dpcloak.errors import InvalidParameterError

__all__ = ["render", "plot_heatmaps"]

_TRUNCATE = 6.0


def _gauss(arr: NDArray[np.float64], sigma_px: float) -> NDArray[np.float64]:
    out = ndimage.gaussian_filter1d(arr, sigma_px, axis=0, mode="constant", cval=0.0, truncate=_TRUNCATE)
    return ndimage.gaussian_filter1d(out, sigma_px, axis=1, mode="constant", cval=0.0, truncate=_TRUNCATE)


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
    """
    arr = check_array("p", p, ndim=2, nonnegative=True)
    if arr.shape[0] != arr.shape[1]:
        raise InvalidParameterError(f"p must be a square Δ × Δ array, got shape {arr.shape}")
    sig = check_real("sigma", sigma, low=0.0, low_inclusive=True)
    sigma_px = sig * arr.shape[0]
    if sigma_px == 0.0:
        return arr.copy()
    z = _gauss(np.ones_like(arr), sigma_px)
    return _gauss(arr / z, sigma_px)


def plot_heatmaps(
    panels: Mapping[str, ArrayLike], *, sigma: float = 0.0, cmap: str = "inferno", size: float = 3.2
) -> Figure:
    """Draw heatmaps side by side (e.g. true vs baseline vs private), each rendered with H^σ.

    Parameters
    ----------
    panels : mapping of str to (Δ, Δ) arrays
        Title → aggregate (rows are y, drawn with the origin at the lower left).
    sigma : float
        Rendering σ (units of [0, 1)²).
    cmap : str
        Matplotlib colour map.
    size : float
        Inches per panel.

    Returns
    -------
    matplotlib.figure.Figure
        Save it with ``fig.savefig(path)``.
    """
    if not panels:
        raise InvalidParameterError("panels must contain at least one heatmap")
    fig = Figure(figsize=(size * len(panels), size + 0.4), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, arr) in zip(axes, panels.items(), strict=True):
        ax.imshow(render(arr, sigma=sigma), origin="lower", cmap=cmap, extent=(0.0, 1.0, 0.0, 1.0))
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
    return fig

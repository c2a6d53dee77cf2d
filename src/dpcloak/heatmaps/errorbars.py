"""EMD error bars of a released pyramid heatmap: a parametric bootstrap from the release itself.

How far is the released map â from the true normalised aggregate a, in EMD? The bar answers with an
upper value U such that EMD(a, â) ≤ U with nominal probability ``level`` (90 % by default):

1. a **world** is built from the release alone: each block of â (a layer of ``HeatmapResult.layers``:
   mass spread uniformly over b × b pixels) gets its mass on **one pixel drawn uniformly inside the
   block** (the release cannot say where inside a block its mass sits; putting it on one pixel makes
   the world as concentrated as a point set can be at that scale, so that the error of spreading it
   again is in the bar), scaled to n̂ users: the public ``population`` when the release had one, else
   the total of RECONSTRUCT's estimate (itself a DP output);
2. the **same mechanism** (same w, levels, finest level L, per-level ε_i; float Laplace from a
   Generator: this is a simulation of public numbers) is run on the world B times, each output
   normalised like the release;
3. U is the ⌈level (B + 1)⌉-th smallest of the B EMDs between the world and its re-releases: were
   the true error exchangeable with them, it would be at most U with probability
   ⌈level (B + 1)⌉ / (B + 1) ≥ level (the split-conformal order statistic; the plain 90th percentile of
   19 values would cover only 85.5 %).

Exchangeability holds only as far as the world resembles the truth; the coverage is therefore
**measured**, not proved: ``benchmarks/bench_heatmap_errorbars.py`` prints it on the experiments'
synthetic mixtures and AIS draws over ε, and ``docs/heatmaps.md`` gives the numbers. Re-releasing the
map as it is (no concentration) covers far less (about a third of the time there): a map spread over
blocks loses nothing more when it is spread again, while the truth does.

Privacy: the bar is computed from the released map, its public parameters and public randomness only
(post-processing): it spends no privacy budget, and the release's guarantee covers it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.aggregate import coarsen_aggregate, hierarchical_laplace
from dpcloak.heatmaps.data import FIXED_POINT_BITS, _make_aggregate
from dpcloak.heatmaps.reconstruct import reconstruct
from dpcloak.metrics import heatmap as hm

if TYPE_CHECKING:
    from dpcloak.heatmaps.api import HeatmapResult

__all__ = ["EmdErrorBar", "emd_error_bar", "concentrated_world", "DEFAULT_DRAWS"]

DEFAULT_DRAWS = 19
"""B: the 18th smallest of 19 draws is the 90 % value (⌈0.9 · 20⌉ = 18, covering exactly 18/20)."""


@dataclass(frozen=True)
class EmdErrorBar:
    """Upper EMD value of a release at a nominal level, from a parametric bootstrap (module docstring).

    Attributes
    ----------
    level : float
        Nominal probability that the true EMD is at most ``bound``.
    bound : float
        U, in units of the grid's side (EMD on the unit square, ℓ1 ground metric).
    median : float
        Median of the bootstrap EMDs (a typical error).
    draws : int
        B.
    rank : int
        ⌈level (B + 1)⌉: U is the rank-th smallest bootstrap EMD.
    users : float
        n̂, the world's number of users (public population or RECONSTRUCT's total).
    metres : float or None
        ``bound`` times the extent's side, when the release has an extent.

    Examples
    --------
    >>> from dpcloak.heatmaps import gaussian_mixture_points, private_heatmap
    >>> pts = gaussian_mixture_points(n_users=300, n_components=3, points_per_user=2, rng=0)
    >>> result = private_heatmap(pts.users, pts.x, pts.y, epsilon=2.0, resolution=16, population=300,
    ...                          error_bar_draws=19)
    >>> bar = result.error_bar
    >>> bar.level, bar.draws, bar.rank, 0.0 < bar.median <= bar.bound < 2.0
    (0.9, 19, 18, True)
    >>> sorted(bar.summary())
    ['emd_90_draws', 'emd_90_m', 'emd_90_method', 'emd_90_unit_square']
    """

    level: float
    bound: float
    median: float
    draws: int
    rank: int
    users: float
    metres: float | None = None

    def summary(self) -> dict[str, Any]:
        """Public, JSON-ready fields for a release's summary (GeoJSON / GeoTIFF metadata, ``--json``)."""
        tag = f"emd_{round(100 * self.level):d}"
        return {
            f"{tag}_unit_square": self.bound, f"{tag}_m": self.metres, f"{tag}_draws": self.draws,
            f"{tag}_method": (f"parametric bootstrap from the release ({self.rank}-th smallest of {self.draws} "
                              "EMDs; post-processing, no privacy budget spent)"),
        }

    def describe(self) -> str:
        """One line for the command's output and the picture's caption."""
        where = f"{self.bound:.3g} of the side" + ("" if self.metres is None else f" ({self.metres:.4g} m)")
        return (f"EMD ≤ {where} with nominal {100 * self.level:g} % (bootstrap of {self.draws} re-releases "
                f"of the released map; no privacy budget spent)")


def concentrated_world(layers: tuple[tuple[int, NDArray[np.float64]], ...], *, resolution: int,
                       rng: np.random.Generator) -> NDArray[np.float64]:
    """Each block's mass on one pixel drawn uniformly inside the block (step 1 of the module docstring).

    Examples
    --------
    A 2 × 2 block of mass 0.8 and a single pixel of mass 0.2 keep their masses, the block's on one of its
    four pixels:

    >>> layers = ((2, np.kron([[0.8, 0.0], [0.0, 0.0]], np.full((2, 2), 0.25))),
    ...           (1, np.pad([[0.2]], ((3, 0), (3, 0)))))
    >>> world = concentrated_world(layers, resolution=4, rng=np.random.default_rng(0))
    >>> float(world[:2, :2].max()), float(world[3, 3]), int(np.count_nonzero(world))
    (0.8, 0.2, 2)
    """
    world = np.zeros((resolution, resolution))
    for block, layer in layers:
        m = resolution // block
        mass = layer.reshape(m, block, m, block).sum(axis=(1, 3))
        rows = np.arange(m)[:, None] * block + rng.integers(0, block, (m, m))
        cols = np.arange(m)[None, :] * block + rng.integers(0, block, (m, m))
        np.add.at(world, (rows.ravel(), cols.ravel()), mass.ravel())
    return world


def _rerelease(world: NDArray[np.float64], users: float, params: Mapping[str, Any], epsilon: float,
               gen: np.random.Generator) -> NDArray[np.float64]:
    """The release's mechanism (same w, levels, L, ε_i) on ``users`` × ``world``, normalised like the release."""
    from dpcloak.heatmaps.api import normalize

    delta = world.shape[0]
    fixed = np.round(world * (users * 2.0**FIXED_POINT_BITS)).astype(np.int64)
    agg = _make_aggregate(fixed, delta, max(1, round(users)), max(1, round(users)))
    depth = int(params["depth"])
    coarse = agg if depth == agg.depth else coarsen_aggregate(agg, depth=depth)
    noisy = hierarchical_laplace(coarse, epsilon=epsilon, w=int(params["w"]), gamma=float(params["gamma"]),
                                 start_level=int(params["levels"][0]), rng=gen, noise="float")
    f = delta >> depth
    estimate = np.asarray(np.kron(reconstruct(noisy, w=int(params["w"])).estimate, np.full((f, f), 1.0 / (f * f))),
                          dtype=np.float64)
    return normalize(estimate)[0]


def emd_error_bar(result: HeatmapResult, *, draws: int = DEFAULT_DRAWS, level: float = 0.9,
                  rng: RngLike = None) -> EmdErrorBar:
    """The EMD error bar of a pyramid release (module docstring): U with EMD(a, â) ≤ U at nominal ``level``.

    Parameters
    ----------
    result : HeatmapResult
        A ``method="pyramid"`` release (:func:`~dpcloak.heatmaps.api.private_heatmap`).
    draws : int
        B ≥ ⌈level / (1 − level)⌉ re-releases (19 by default: about 20 mechanism runs and EMDs).
    level : float
        Nominal coverage in (0, 1).
    rng : Generator, int or None
        Randomness of the simulation (``None``: fresh OS entropy). Public: it only simulates.

    Returns
    -------
    EmdErrorBar

    Privacy guarantee
    -----------------
    Post-processing of the release: a function of the released layers, its public parameters (w, levels,
    ε_i, the public ``population``), RECONSTRUCT's total (part of the DP output) and independent
    randomness. No privacy budget is spent.

    Examples
    --------
    >>> from dpcloak.heatmaps import gaussian_mixture_points, private_heatmap
    >>> pts = gaussian_mixture_points(n_users=300, n_components=3, points_per_user=2, rng=0)
    >>> result = private_heatmap(pts.users, pts.x, pts.y, epsilon=2.0, resolution=16, w=20)
    >>> bar = emd_error_bar(result, draws=9, rng=0)  # the largest of 9 (⌈0.9 · 10⌉ = 9)
    >>> bar.rank, bar.bound >= bar.median > 0.0
    (9, True)
    >>> emd_error_bar(result, draws=5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: draws must be at least 9 for level 0.9 ...
    """
    if getattr(result, "method", None) != "pyramid":
        raise InvalidParameterError(
            "error bars are implemented for the pyramid method (private_heatmap), got "
            f"{getattr(result, 'method', type(result).__name__)!r}", parameter="result", allowed="a pyramid release")
    lev = check_real("level", level, low=0.0, high=1.0)
    need = math.ceil(lev / (1.0 - lev) - 1e-9)
    b = check_int("draws", draws, minimum=1)
    if b < need:
        raise InvalidParameterError(f"draws must be at least {need} for level {lev:g} (⌈level (B + 1)⌉ ≤ B), got {b}",
                                    parameter="draws", allowed=f">= {need}", got=b)
    rank = math.ceil(lev * (b + 1) - 1e-9)
    params = result.parameters
    users = params.get("population") or result.details["estimated_users"]
    users = max(float(users), 1.0)
    epsilon = result.epsilon - float(params.get("count_epsilon") or 0.0)
    gen = as_generator(rng)
    delta = result.resolution
    spread = []
    for _ in range(b):
        world = concentrated_world(result.layers or ((1, result.aggregate),), resolution=delta, rng=gen)
        again = _rerelease(world, users, params, epsilon, gen)
        spread.append(hm.emd(world, again, extent=(1.0, 1.0)))
    values = np.sort(np.asarray(spread))
    bound = float(values[rank - 1])
    metres = None if result.extent is None else bound * result.extent.size
    return EmdErrorBar(level=lev, bound=bound, median=float(np.median(values)), draws=b, rank=rank, users=users,
                       metres=metres)

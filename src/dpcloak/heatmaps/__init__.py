"""Differentially private heatmaps (Ghazi et al.): pyramid, hierarchical Laplace, RECONSTRUCT.

points (user, x, y) ─bound_users─▶ UserAggregate s = Σ p_i ─hierarchical_laplace─▶ NoisyPyramid
    ─reconstruct─▶ ŝ ─normalize─▶ â ─render─▶ H^σ_â.   ``private_heatmap`` runs the whole chain.

Also: the [LXD+19] baseline (``laplace_cells``), Appendix D (``dense_aggregate``), Appendix A
(``private_kmedian``), Appendix F (``shuffle_pyramid``), and the Dask path
(:mod:`dpcloak.heatmaps.distributed`, imported lazily: it needs the ``dask`` extra).

Releases: the front ends (``private_heatmap``, ``laplace_baseline``, ``heatmap_from_frame``) default to
exact discrete Laplace noise from the OS CSPRNG (:mod:`dpcloak.heatmaps.release`), take points in
lon/lat or metres with a public :class:`Extent`, and return the DP map with public parameters; exact
counts are kept apart as :class:`CuratorDiagnostics` (not private). Output: ``HeatmapResult.render``
(block-free), ``plot_heatmaps``, ``write_cells_csv``, ``write_geojson``.
"""

from dpcloak.heatmaps.aggregate import LevelBudget, NoisyPyramid, hierarchical_laplace, level_budget
from dpcloak.heatmaps.api import (
    HeatmapResult,
    heatmap_from_aggregate,
    heatmap_from_frame,
    laplace_baseline,
    private_heatmap,
)
from dpcloak.heatmaps.baselines import BaselineRelease, laplace_cells
from dpcloak.heatmaps.data import UserAggregate, bound_distributions, bound_users, snap
from dpcloak.heatmaps.dense import DenseRelease, dense_aggregate
from dpcloak.heatmaps.evaluate import HeatmapScores, score_heatmap
from dpcloak.heatmaps.export import write_cells_csv, write_geojson
from dpcloak.heatmaps.extent import Extent
from dpcloak.heatmaps.kmedian import Coreset, KMedianResult, kmedian, kmedian_cost, private_coreset, private_kmedian
from dpcloak.heatmaps.loaders import bounding_box, load_ais, load_points, lonlat_to_unit, pixels_to_unit
from dpcloak.heatmaps.pyramid import pyramid_adjoint, pyramid_levels, pyramid_transform
from dpcloak.heatmaps.reconstruct import Reconstruction, reconstruct
from dpcloak.heatmaps.release import CuratorDiagnostics
from dpcloak.heatmaps.render import plot_heatmaps, render, render_layers
from dpcloak.heatmaps.shuffle import ShuffleRelease, shuffle_pyramid
from dpcloak.heatmaps.synthetic import PointSet, gaussian_mixture_points

__all__ = [
    "BaselineRelease",
    "Coreset",
    "CuratorDiagnostics",
    "Extent",
    "HeatmapScores",
    "KMedianResult",
    "ShuffleRelease",
    "kmedian",
    "kmedian_cost",
    "private_coreset",
    "private_kmedian",
    "score_heatmap",
    "shuffle_pyramid",
    "DenseRelease",
    "HeatmapResult",
    "LevelBudget",
    "NoisyPyramid",
    "PointSet",
    "Reconstruction",
    "UserAggregate",
    "bound_distributions",
    "bound_users",
    "bounding_box",
    "dense_aggregate",
    "gaussian_mixture_points",
    "heatmap_from_aggregate",
    "heatmap_from_frame",
    "hierarchical_laplace",
    "laplace_baseline",
    "laplace_cells",
    "level_budget",
    "load_ais",
    "load_points",
    "lonlat_to_unit",
    "pixels_to_unit",
    "plot_heatmaps",
    "private_heatmap",
    "pyramid_adjoint",
    "pyramid_levels",
    "pyramid_transform",
    "reconstruct",
    "render",
    "render_layers",
    "snap",
    "write_cells_csv",
    "write_geojson",
]

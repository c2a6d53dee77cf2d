"""
Private heatmaps from a DataFrame: extent, projection, parameters, and reading the result
=========================================================================================

*For the location-data analyst* who holds one table of points — ``user, lon, lat``, many rows per
person — and must hand a decision-maker a map of where people are, without the map revealing whether
any one person is in the table. :func:`~dpcloak.heatmaps.heatmap_from_frame` releases that map with
ε-differential privacy under adding or removing **one person with all their points** (Ghazi et al.,
"Differentially Private Heatmaps": each person's points become one distribution of mass 1, the
pyramid of their sum gets Laplace noise level by level, and a linear program rebuilds the map).

This tutorial goes through the four decisions an analyst makes: the **extent** (which square of the
world the map covers, and in which projection), the **parameters** (ε, the resolution, the public
population estimate that sets w), the **release** itself, and **reading** the result (what the
colour bar means, how far from the truth it is, what to export). The data are synthetic, so the true
map can be shown next to the private one.
"""

# %%
# The data: one row per point, several points per person
# ------------------------------------------------------
# 3,000 people around lower Manhattan, 30 points each: a home near one of a few residential
# clusters, a workplace in one of three office districts, and some points along the way. In a real
# deployment this is the table you already have (a pandas or Dask DataFrame); the columns can have
# any names.
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpcloak.heatmaps import Extent, bound_users, heatmap_from_frame, plot_heatmaps, render, score_heatmap
from dpcloak.heatmaps.parameters import pyramid_parameters


def show(fig):
    """Display a figure from ``plot_heatmaps`` on this page (it returns a Figure that pyplot does not manage).

    In a script, ``fig.savefig("map.png")`` is all you need.
    """
    manager = plt.figure().canvas.manager
    manager.canvas.figure = fig
    fig.set_canvas(manager.canvas)
    plt.show()


rng = np.random.default_rng(2026)
n_people, per_person = 3000, 30
homes = np.array([[-74.000, 40.690], [-73.985, 40.715], [-73.950, 40.705], [-74.020, 40.730]])
offices = np.array([[-74.011, 40.707], [-73.990, 40.750], [-73.975, 40.758]])
home = homes[rng.integers(0, len(homes), n_people)] + rng.normal(0, 0.006, (n_people, 2))
work = offices[rng.integers(0, len(offices), n_people)] + rng.normal(0, 0.002, (n_people, 2))
t = rng.random((n_people, per_person))  # where along home → work each point lies (mostly at the ends)
t = np.where(t < 0.45, 0.0, np.where(t > 0.55, 1.0, (t - 0.45) * 10))
lon = home[:, :1] + t * (work[:, :1] - home[:, :1]) + rng.normal(0, 0.0008, t.shape)
lat = home[:, 1:] + t * (work[:, 1:] - home[:, 1:]) + rng.normal(0, 0.0008, t.shape)
frame = pd.DataFrame({"person": np.repeat(np.arange(n_people), per_person),
                      "lon": lon.ravel(), "lat": lat.ravel()})
print(frame.head(3))
print(f"{len(frame):,} points")

# %%
# The extent: public, in metres
# -----------------------------
# The extent is the square of the world the map covers. It must be **public**: chosen from the
# question ("lower Manhattan"), never from the data — the bounding box of the points is a function of
# the points (the person at the far corner moves it), so dpcloak has no way to derive one. Three
# constructors: a lon/lat box, a centre and a size in metres, or a box in metres for data that are
# already projected.
#
# Lon/lat points are projected to metres (a transverse Mercator centred on the box, on the WGS84
# ellipsoid), so cells are squares on the ground and distances are metres — at 40.7° N a degree of
# longitude is only 0.76 of a degree of latitude, so a degree-based grid would be squashed. A box
# that is not square is padded to the smallest square around it.
extent = Extent.lonlat_box(-74.04, 40.67, -73.93, 40.78)
resolution = 256
print(extent.summary())
print(f"side {extent.size / 1000:.2f} km, cell {extent.cell_size(resolution):.1f} m at Δ = {resolution}")

# Points outside the public extent are refused, not silently clipped; keeping only the points inside
# a public box is itself fine (a per-point filter on a public predicate).
x_unit, y_unit, inside = extent.to_unit(frame.lon, frame.lat, drop_outside=True)
frame = frame[inside]
print(f"{(~inside).sum()} points outside the extent dropped")

# %%
# Choosing the parameters
# -----------------------
# * **ε** is the privacy budget for this map: smaller is more private and noisier. Every release
#   spends it again — a second map of the same data costs another ε.
# * **Resolution** Δ (a power of two) sets the cell size: pick the finest cell the decision needs,
#   not finer; the error in metres of the method does not improve with cells much smaller than it.
# * **population**: a *public* estimate of the number of people (a census figure, the number of
#   subscribers; never the table's own count). The pyramid's width w (how many cells per level the
#   reconstruction keeps) and its finest level follow a rule
#   (:func:`~dpcloak.heatmaps.parameters.pyramid_parameters`) of s = ε n̂: w grows like (ε n̂)^0.6
#   from 50 cells per level, and the map is released on a 2^L grid with 4^L ≈ ε n̂ cells, so at low
#   signal it coarsens (down to the uniform map) instead of spreading noise over fine cells. With a
#   public ``population`` the rule costs no privacy; without it, 1/10 of ε buys a noisy count of the
#   users, and ``result.parameters["w_rule"]`` says what was chosen.
population = 3000  # public: e.g. the operator's number of subscribers in the area
for eps in (0.5, 1.0, 5.0):
    print(f"ε = {eps}: {pyramid_parameters(epsilon=eps, resolution=resolution, population=population)}")

# %%
# The release
# -----------
# One call. The noise is exact discrete Laplace from the operating system's CSPRNG (a seed is refused:
# whoever knows it could subtract the noise). What may be published is ``result.aggregate`` (each
# cell's share of the total, summing to 1) and ``result.public_summary()``.
result = heatmap_from_frame(frame, epsilon=1.0, resolution=resolution, user="person", x="lon", y="lat",
                            extent=extent, population=population)
print(result.guarantee())
summary = result.public_summary()
print({k: summary[k] for k in ("method", "noise", "epsilon", "w", "cell_size_m")})

# %%
# ``result.curator`` holds what the curator learned while computing it — the exact number of people
# and points, the timings. It is **not private** and is not part of the release.
print(result.curator.label)

# %%
# Reading the result
# ------------------
# ``result.render(sigma=...)`` draws the map without the pyramid's square blocks: mass the
# reconstruction kept for a whole block is spread smoothly over it (post-processing, no privacy cost).
# ``plot_heatmaps`` draws maps side by side on **one** colour scale with axes in km and a colour bar
# in share of the total per km² — read it as "this fraction of all people's time is spent per km²
# here". Below, ε = 0.5, 1 and 5 next to the true map (curator-side, for this tutorial only).
sigma = 0.01  # rendering blur in units of the extent's side (≈ 120 m here, 2.5 cells)
releases = {eps: heatmap_from_frame(frame, epsilon=eps, resolution=resolution, user="person", x="lon", y="lat",
                                    extent=extent, population=population) for eps in (0.5, 5.0)}
releases[1.0] = result
truth = bound_users(frame.person.to_numpy(), x_unit, y_unit, resolution=resolution)  # curator-side
panels = {f"private, ε = {eps:g} (w = {releases[eps].parameters['w']})": releases[eps].render(sigma=sigma)
          for eps in (0.5, 1.0, 5.0)}
panels["true map (NOT private)"] = render(truth.normalized, sigma=sigma)
show(plot_heatmaps(panels, extent=extent, size=3.2))

# %%
# The same maps with longitude and latitude on the axes (``units="lonlat"``), here the private ε = 1
# map only, for a reader who wants to place the hot spots on a street map.
show(plot_heatmaps({"private, ε = 1": result.render(sigma=sigma)}, extent=extent, units="lonlat", size=4.0))

# %%
# How far from the truth? The earth mover's distance (EMD) is the average distance, in metres, that
# the private map's mass must move to become the true map. It needs the true data, so only the
# curator can compute it (``dpcloak heatmap --evaluate`` does the same); it is a check of the
# parameters, not something to publish.
for eps in (0.5, 1.0, 5.0):
    s = score_heatmap(truth.normalized, releases[eps].aggregate, scale=extent.size)
    print(f"ε = {eps:g}: EMD {s.emd:.0f} m (cell {extent.cell_size(resolution):.0f} m), "
          f"similarity {s.sim:.2f}, correlation {s.cc:.2f}")

# %%
# Exporting for GIS tools
# -----------------------
# ``write_cells_csv`` writes one row per cell with its centre in metres and lon/lat and its share;
# ``write_geojson`` writes the cells with a positive share as WGS84 polygons carrying the release's
# public summary. Both hold the DP output and public geometry only.
from dpcloak.heatmaps import write_cells_csv, write_geojson  # noqa: E402

out = Path(tempfile.mkdtemp())
write_cells_csv(out / "cells.csv", result.aggregate, extent=extent)
write_geojson(out / "cells.geojson", result.aggregate, extent=extent, properties=result.public_summary())
print(pd.read_csv(out / "cells.csv").sort_values("share", ascending=False).head(3))

# %%
# The same call on a cluster
# --------------------------
# For tables that do not fit in memory, pass a Dask DataFrame (for example ``dd.read_parquet``): the
# per-person bounding runs on the workers in two streaming passes, and only the Δ × Δ aggregate comes
# back. The result is bit-identical to the in-memory one for the same points (the sums are exact
# integers), so the choice of engine changes nothing about the guarantee.
import dask.dataframe as dd  # noqa: E402

big = dd.from_pandas(frame, npartitions=4)
on_dask = heatmap_from_frame(big, epsilon=1.0, resolution=resolution, user="person", x="lon", y="lat",
                             extent=extent, population=population)
print(on_dask.public_summary()["w"], on_dask.aggregate.shape)

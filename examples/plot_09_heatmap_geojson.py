"""
Export a heatmap to GeoJSON
===========================

A heatmap release is a grid of shares over a **public** square of the world: here 4 km × 4 km
around a public landmark in Auckland (:meth:`~dpcloak.heatmaps.Extent.around`; an extent must come
from the question, never from the data). :func:`~dpcloak.heatmaps.write_geojson` writes every cell
with a positive share as a WGS84 polygon, with the release's public summary as the collection's
properties — what a GIS tool (QGIS, a web map) opens directly. The points are simulated here: 500
people, 20 pings each, around three spots given in metres from the landmark.
"""

import json
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from dpcloak.heatmaps import Extent, private_heatmap, write_geojson

extent = Extent.around(lon=174.7633, lat=-36.8485, size=4000.0)  # public: a 4 km square around a landmark
rng = np.random.default_rng(5)  # simulated input data (the release itself draws from the OS CSPRNG)
spots = np.array([[-900.0, 600.0], [300.0, -200.0], [1100.0, 900.0]])  # metres east, north of the centre
people = np.repeat(np.arange(500), 20)
where = spots[rng.integers(0, 3, 500)][people] + rng.normal(0.0, 150.0, (people.size, 2))
lon, lat = extent.to_lonlat(extent.x_min + extent.size / 2 + where[:, 0], extent.y_min + extent.size / 2 + where[:, 1])

result = private_heatmap(people, lon, lat, epsilon=1.0, resolution=32, extent=extent, population=500)
guarantee = result.guarantee()
print(f"{guarantee.kind}, ε = {guarantee.epsilon}, neighbours: {guarantee.neighbouring}")
print(f"cells of {extent.cell_size(32):.0f} m; cells with a positive share: {int((result.aggregate > 0).sum())}")

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "cells.geojson"
    write_geojson(path, result.aggregate, extent=extent, properties=result.public_summary())
    collection = json.loads(path.read_text())
    print(f"{path.name}: {path.stat().st_size:,} bytes")

features = collection["features"]
first = features[0]
print(f"{collection['type']} of {len(features)} {first['geometry']['type']}s; published with it: "
      f"{sorted(collection['properties'])}")
print(f"first feature: {first['properties']}, corners (lon, lat) {first['geometry']['coordinates'][0][:2]}")
print(f"shares of all features sum to {sum(f['properties']['share'] for f in features):.6f}")

# %%
# The polygons drawn in longitude/latitude, shaded by share (what a GIS shows).
fig, ax = plt.subplots(figsize=(5, 5), constrained_layout=True)
top = max(f["properties"]["share"] for f in features)
for feature in features:
    ring = np.array(feature["geometry"]["coordinates"][0])
    ax.fill(ring[:, 0], ring[:, 1], color=plt.cm.magma(feature["properties"]["share"] / top), lw=0)
ax.set(xlabel="longitude", ylabel="latitude", title=f"{len(features)} GeoJSON cells, ε = 1")
ax.set_aspect(1 / np.cos(np.radians(-36.8485)))  # a degree of longitude is shorter than one of latitude here
plt.show()

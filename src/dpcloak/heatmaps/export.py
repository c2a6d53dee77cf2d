"""Writing a released heatmap for GIS tools: a CSV of cells with their centres, GeoJSON cell polygons.

Both files hold the DP output (each cell's share of the total) and public geometry only (the extent,
cell centres and corners): nothing computed from the exact data. Cells are indexed ``row`` (south to
north) and ``col`` (west to east) like the aggregate. Coordinates: metres in the extent's plane
(``x_m``, ``y_m``: east and north of the projection centre), plus longitude/latitude for a lon/lat
extent. GeoJSON (RFC 7946) is always WGS84 lon/lat, so it needs a lon/lat extent; each cell is the
polygon through its four projected corners, and cells with zero share are left out (their absence
means 0).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpcloak._validation import check_array
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.extent import Extent

__all__ = ["write_cells_csv", "write_geojson"]


def _square(aggregate: ArrayLike) -> Any:
    arr = check_array("aggregate", aggregate, ndim=2, nonnegative=True)
    if arr.shape[0] != arr.shape[1]:
        raise InvalidParameterError(f"aggregate must be a square Δ × Δ array, got shape {arr.shape}",
                                    parameter="aggregate")
    return arr


def write_cells_csv(path: str | Path, aggregate: ArrayLike, *, extent: Extent | None) -> None:
    """One row per cell: row, col, centre (x_m, y_m[, lon, lat]) or (x, y) in [0, 1)², and its share.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> share = np.array([[0.75, 0.0], [0.0, 0.25]])
    >>> path = Path(tmp.name) / "cells.csv"
    >>> write_cells_csv(path, share, extent=Extent.metres_box(0.0, 0.0, 1000.0, 1000.0))
    >>> print(path.read_text().strip())
    row,col,x_m,y_m,share
    0,0,250,250,0.75
    0,1,750,250,0
    1,0,250,750,0
    1,1,750,750,0.25
    >>> tmp.cleanup()
    """
    arr = _square(aggregate)
    delta = arr.shape[0]
    rows, cols = np.divmod(np.arange(delta * delta), delta)
    if extent is None:
        c = (np.arange(delta) + 0.5) / delta
        header, coords = ["x", "y"], [c[cols], c[rows]]
    else:
        xx, yy = extent.cell_centres(delta)
        header, coords = ["x_m", "y_m"], [xx.ravel(), yy.ravel()]
        if extent.projection is not None:
            lon, lat = extent.to_lonlat(xx.ravel(), yy.ravel())
            header, coords = [*header, "lon", "lat"], [*coords, lon, lat]
    with Path(path).open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["row", "col", *header, "share"])
        for k in range(delta * delta):
            out.writerow([int(rows[k]), int(cols[k]), *(f"{v[k]:.10g}" for v in coords), f"{arr.flat[k]:.10g}"])


def write_geojson(path: str | Path, aggregate: ArrayLike, *, extent: Extent, properties: dict[str, Any]) -> None:
    """A FeatureCollection of the cells with a positive share, as WGS84 lon/lat polygons.

    ``properties`` (public parameters of the release, e.g. ``HeatmapResult.public_summary()``) are
    stored on the collection.

    Examples
    --------
    Only cells with a positive share become polygons:

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> share = np.array([[0.75, 0.0], [0.0, 0.25]])
    >>> path = Path(tmp.name) / "cells.geojson"
    >>> write_geojson(path, share, extent=Extent.around(lon=174.762, lat=-36.848, size=2000.0),
    ...               properties={"epsilon": 1.0})
    >>> collection = json.loads(path.read_text())
    >>> collection["type"], collection["properties"], len(collection["features"])
    ('FeatureCollection', {'epsilon': 1.0}, 2)
    >>> collection["features"][0]["properties"], collection["features"][0]["geometry"]["type"]
    ({'row': 0, 'col': 0, 'share': 0.75}, 'Polygon')
    >>> tmp.cleanup()
    """
    arr = _square(aggregate)
    if extent.projection is None:
        raise InvalidParameterError(
            "GeoJSON is WGS84 longitude/latitude: it needs a lon/lat extent (Extent.lonlat_box or Extent.around), "
            "not a metres box",
            parameter="extent", allowed="a lon/lat extent"
        )
    delta = arr.shape[0]
    step = extent.cell_size(delta)
    rows, cols = np.nonzero(arr > 0.0)
    corners = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], dtype=float)
    x = extent.x_min + (cols[:, None] + corners[None, :, 0]) * step
    y = extent.y_min + (rows[:, None] + corners[None, :, 1]) * step
    lon, lat = extent.to_lonlat(x.ravel(), y.ravel())
    lon, lat = lon.reshape(x.shape), lat.reshape(y.shape)
    features = [
        {"type": "Feature",
         "geometry": {"type": "Polygon", "coordinates": [[[round(float(a), 8), round(float(b), 8)]
                                                          for a, b in zip(lon[k], lat[k], strict=True)]]},
         "properties": {"row": int(rows[k]), "col": int(cols[k]), "share": float(arr[rows[k], cols[k]])}}
        for k in range(rows.size)
    ]
    doc = {"type": "FeatureCollection", "properties": properties, "features": features}
    Path(path).write_text(json.dumps(doc))

"""CSV of cells and GeoJSON polygons of a release (issue 16). Oracles: PROJ (pyproj) for the geometry, the
aggregate itself for the values."""

import csv
import json

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.export import write_cells_csv, write_geojson
from dpcloak.heatmaps.extent import Extent

pyproj = pytest.importorskip("pyproj")


def _aggregate(delta=8, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((delta, delta)) * (rng.random((delta, delta)) < 0.3)
    return a / a.sum()


def test_csv_has_every_cell_with_its_centre(tmp_path):
    ext = Extent.around(lon=2.35, lat=48.85, size=8000.0)
    agg = _aggregate()
    path = tmp_path / "cells.csv"
    write_cells_csv(path, agg, extent=ext)
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 64 and list(rows[0]) == ["row", "col", "x_m", "y_m", "lon", "lat", "share"]
    to_lonlat = pyproj.Transformer.from_crs(
        "+proj=tmerc +lat_0=48.85 +lon_0=2.35 +k=1 +x_0=0 +y_0=0 +ellps=WGS84 +units=m", "EPSG:4326", always_xy=True)
    for r in rows:
        i, j = int(r["row"]), int(r["col"])
        # Hand oracle for the centres: cells of 1000 m from (−4000, −4000).
        assert float(r["x_m"]) == -3500.0 + 1000.0 * j and float(r["y_m"]) == -3500.0 + 1000.0 * i
        lon, lat = to_lonlat.transform(float(r["x_m"]), float(r["y_m"]))
        assert float(r["lon"]) == pytest.approx(lon, abs=1e-8) and float(r["lat"]) == pytest.approx(lat, abs=1e-8)
        assert float(r["share"]) == pytest.approx(agg[i, j], rel=1e-9)
    unit = tmp_path / "unit.csv"
    write_cells_csv(unit, agg, extent=None)
    assert next(csv.reader(unit.open())) == ["row", "col", "x", "y", "share"]


def test_geojson_polygons_are_the_cells(tmp_path):
    ext = Extent.lonlat_box(-0.2, 51.45, 0.0, 51.55)
    agg = _aggregate(seed=1)
    path = tmp_path / "cells.geojson"
    write_geojson(path, agg, extent=ext, properties={"epsilon": 1.0})
    doc = json.loads(path.read_text())
    assert doc["type"] == "FeatureCollection" and doc["properties"] == {"epsilon": 1.0}
    assert len(doc["features"]) == np.count_nonzero(agg)  # zero cells are left out
    forward = pyproj.Transformer.from_crs(
        "EPSG:4326", f"+proj=tmerc +lat_0={ext.projection.lat0} +lon_0={ext.projection.lon0} +k=1 +x_0=0 +y_0=0 "
        "+ellps=WGS84 +units=m", always_xy=True)
    step = ext.cell_size(8)
    for feature in doc["features"]:
        ring = np.array(feature["geometry"]["coordinates"][0])
        assert ring.shape == (5, 2) and np.array_equal(ring[0], ring[-1])
        x, y = forward.transform(ring[:4, 0], ring[:4, 1])
        i, j = feature["properties"]["row"], feature["properties"]["col"]
        # Oracle: the corners are the cell's corners in metres (to the 1e-8° rounding, about 1 mm).
        want_x = ext.x_min + (j + np.array([0, 1, 1, 0])) * step
        want_y = ext.y_min + (i + np.array([0, 0, 1, 1])) * step
        np.testing.assert_allclose(x, want_x, atol=2e-3)
        np.testing.assert_allclose(y, want_y, atol=2e-3)
        assert feature["properties"]["share"] == agg[i, j]
    with pytest.raises(InvalidParameterError, match="lon/lat extent"):
        write_geojson(path, agg, extent=Extent.metres_box(0, 0, 1, 1), properties={})

"""CSV of cells, GeoJSON polygons, XYZ/quadkey tiles, H3 cells and GeoTIFF (issues 16, 32). Oracles: PROJ (pyproj) for
the geometry, the aggregate itself for the values, the reference readers (h3, rasterio/GDAL) for the formats."""

import csv
import json
import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.export import (
    h3_masses,
    quadkey,
    tile_masses,
    write_cells_csv,
    write_geojson,
    write_geotiff,
    write_masses_csv,
)
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


def _quadkey_to_tile(key):
    """Oracle: decode a Bing quadkey digit by digit (the inverse of the spec's encoding)."""
    x = y = 0
    for digit in key:
        d = int(digit)
        x, y = 2 * x + (d & 1), 2 * y + (d >> 1)
    return len(key), x, y


def test_quadkey_matches_the_bing_spec():
    assert quadkey(3, 3, 5) == "213"  # the worked example of the Bing Maps tile system documentation
    rng = np.random.default_rng(7)
    for _ in range(200):
        z = int(rng.integers(0, 31))
        x, y = (int(v) for v in rng.integers(0, 1 << z, 2)) if z else (0, 0)
        assert _quadkey_to_tile(quadkey(z, x, y)) == (z, x, y)


def test_tiles_match_proj_web_mercator_and_sum_exactly_across_zooms(tmp_path):
    ext = Extent.around(lon=-0.1276, lat=51.5072, size=20000.0)
    rng = np.random.default_rng(8)
    share = rng.random((16, 16)) * (rng.random((16, 16)) < 0.6)
    share /= share.sum()
    tiles = tile_masses(share, extent=ext, min_zoom=5)
    # Default finest zoom: tiles at least one 1250 m cell wide at 51.5° (hand formula), one more zoom would not be.
    side = 2 * math.pi * 6378137.0 * math.cos(math.radians(51.5072)) / 2**tiles.max_zoom
    assert side >= 1250.0 > side / 2
    # Oracle: PROJ's EPSG:3857 coordinates of every cell centre → tile indices; Python-int sums per tile.
    lon, lat = ext.to_lonlat(*(c.ravel() for c in ext.cell_centres(16)))
    mx, my = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform(lon, lat)
    half, n = math.pi * 6378137.0, 2**tiles.max_zoom
    want: dict = {}
    for u, a, b in zip(np.rint(share.ravel() * 2**40).astype(int), mx, my, strict=True):
        if u:
            key = (math.floor((a + half) / (2 * half) * n), math.floor((half - b) / (2 * half) * n))
            want[key] = want.get(key, 0) + int(u)
    assert tiles.units[tiles.max_zoom] == want
    # Zoom consistency, exact: every coarser tile is the integer sum of its children; the total never changes.
    for z in tiles.zooms[:-1]:
        children: dict = {}
        for (x, y), u in tiles.units[z + 1].items():
            children[(x // 2, y // 2)] = children.get((x // 2, y // 2), 0) + u
        assert tiles.units[z] == children
        assert sum(tiles.units[z].values()) == sum(want.values())
    # Read back with the csv module: shares are exact multiples of 2^-40, so parents equal their children's
    # float sums exactly as well; quadkeys decode to their tiles.
    write_masses_csv(tmp_path / "tiles.csv", tiles)
    with (tmp_path / "tiles.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    shares = {(int(r["z"]), int(r["x"]), int(r["y"])): float(r["share"]) for r in rows}
    assert all(_quadkey_to_tile(r["quadkey"]) == (int(r["z"]), int(r["x"]), int(r["y"])) for r in rows)
    assert all(float(r["share"]) == int(r["units"]) * 2.0**-40 for r in rows)
    for (z, x, y), s in shares.items():
        if z < tiles.max_zoom:
            kids = [shares.get((z + 1, 2 * x + dx, 2 * y + dy), 0.0) for dy in (0, 1) for dx in (0, 1)]
            assert s == sum(kids)


def test_tiles_refuse_extents_without_lonlat_and_bad_zooms():
    share = np.full((2, 2), 0.25)
    with pytest.raises(InvalidParameterError, match="extent"):
        tile_masses(share, extent=Extent.metres_box(0.0, 0.0, 1.0, 1.0))
    ext = Extent.around(lon=0.0, lat=0.0, size=1000.0)
    with pytest.raises(InvalidParameterError, match="max_zoom"):
        tile_masses(share, extent=ext, max_zoom=31)
    with pytest.raises(InvalidParameterError, match="min_zoom"):
        tile_masses(share, extent=ext, max_zoom=3, min_zoom=4)


def test_h3_cells_match_the_h3_library_and_sum_exactly_across_resolutions(tmp_path):
    h3 = pytest.importorskip("h3")
    ext = Extent.around(lon=-73.98, lat=40.75, size=20000.0)
    rng = np.random.default_rng(9)
    share = rng.random((16, 16)) * (rng.random((16, 16)) < 0.6)
    share /= share.sum()
    cells = h3_masses(share, extent=ext, min_resolution=3)
    top = cells.max_resolution
    # Default finest resolution: the finest whose average hexagon is at least one (1250 m)² cell (h3's table).
    assert h3.average_hexagon_area(top, unit="m^2") >= 1250.0**2 > h3.average_hexagon_area(top + 1, unit="m^2")
    # Oracle: cell centres to lon/lat by PROJ's inverse transverse Mercator (not dpcloak's series), then h3's
    # latlng_to_cell and Python-int sums.
    tm = "+proj=tmerc +lat_0=40.75 +lon_0=-73.98 +k=1 +x_0=0 +y_0=0 +ellps=WGS84 +units=m"
    xx, yy = ext.cell_centres(16)
    lon, lat = pyproj.Transformer.from_crs(tm, "EPSG:4326", always_xy=True).transform(xx.ravel(), yy.ravel())
    want: dict = {}
    for u, a, b in zip(np.rint(share.ravel() * 2**40).astype(int), lat, lon, strict=True):
        if u:
            key = h3.latlng_to_cell(a, b, top)
            want[key] = want.get(key, 0) + int(u)
    assert cells.units[top] == want
    # Exact across resolutions, in h3's own hierarchy: each cell is the integer sum of its children present.
    for r in range(cells.min_resolution, top):
        for cell, u in cells.units[r].items():
            assert h3.is_valid_cell(cell) and h3.get_resolution(cell) == r
            assert u == sum(cells.units[r + 1].get(c, 0) for c in h3.cell_to_children(cell, r + 1))
        assert sum(cells.units[r].values()) == sum(want.values())
    write_masses_csv(tmp_path / "h3.csv", cells)
    with (tmp_path / "h3.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(int(r["resolution"]), r["h3"]): int(r["units"]) for r in rows} == {
        (r, c): u for r in range(cells.min_resolution, top + 1) for c, u in cells.units[r].items()}
    assert all(float(r["share"]) == int(r["units"]) * 2.0**-40 for r in rows)
    with pytest.raises(InvalidParameterError, match="max_resolution"):
        h3_masses(share, extent=ext, max_resolution=16)


def test_geotiff_opens_in_rasterio_with_its_crs_transform_values_and_exact_overviews(tmp_path):
    rasterio = pytest.importorskip("rasterio")
    ext = Extent.lonlat_box(-0.2, 51.45, 0.0, 51.55)
    rng = np.random.default_rng(10)
    share = rng.random((256, 256)) * (rng.random((256, 256)) < 0.4)
    share /= share.sum()
    path = tmp_path / "map.tif"
    write_geotiff(path, share, extent=ext, properties={"epsilon": 1.0, "method": "pyramid"}, blocksize=128)
    with rasterio.open(path) as tif:
        assert (tif.driver, tif.count, tif.dtypes, tif.block_shapes) == ("GTiff", 1, ("float64",), [(128, 128)])
        assert tif.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"  # GDAL's own reading of the layout
        assert json.loads(tif.tags()["DPCLOAK_RELEASE"]) == {"epsilon": 1.0, "method": "pyramid"}
        # Transform: 256 square cells of size/256 m from the north-west corner (hand formula).
        step = ext.size / 256
        assert tuple(tif.transform)[:6] == (step, 0.0, ext.x_min, 0.0, -step, ext.y_min + ext.size)
        # CRS: the file's CRS, read by PROJ, takes pixel centres to the lon/lat that PROJ's own transverse Mercator
        # at the extent's centre gives for the cell centres (written by hand here, not taken from dpcloak).
        rows, cols = np.divmod(np.arange(0, 65536, 97), 256)
        px, py = ext.x_min + (cols + 0.5) * step, ext.y_min + ext.size - (rows + 0.5) * step
        got = pyproj.Transformer.from_crs(tif.crs.to_wkt(), "EPSG:4326", always_xy=True).transform(px, py)
        tm = (f"+proj=tmerc +lat_0={ext.projection.lat0} +lon_0={ext.projection.lon0} +k=1 +x_0=0 +y_0=0 "
              "+ellps=WGS84 +units=m")
        want = pyproj.Transformer.from_crs(tm, "EPSG:4326", always_xy=True).transform(px, py)
        np.testing.assert_allclose(got, want, atol=1e-10)
        # Values: north row first, each share to the nearest 2^-40.
        base = tif.read(1)
        assert np.abs(base[::-1] - share).max() <= 2.0**-41
        units = base * 2.0**40
        assert np.array_equal(units, np.round(units))
        # Overviews: 128 x 128 down to 1 x 1, each pixel exactly the sum of its 2 x 2 children as read from the file
        # (Python integers, no floating point in the oracle); GDAL's default (the mean) would be a quarter of it.
        assert tif.overviews(1) == [2, 4, 8, 16, 32, 64, 128, 256]
    children = [[int(v) for v in row] for row in units]
    for level in range(8):
        with rasterio.open(path, overview_level=level) as overview:
            got = overview.read(1) * 2.0**40
        side = 128 >> level
        assert got.shape == (side, side)
        want = [[children[2 * i][2 * j] + children[2 * i][2 * j + 1] + children[2 * i + 1][2 * j]
                 + children[2 * i + 1][2 * j + 1] for j in range(side)] for i in range(side)]
        assert got.tolist() == want
        children = want
    assert children[0][0] == int(np.rint(share * 2.0**40).astype(np.int64).sum())


def test_geotiff_of_a_metres_box_has_no_crs_and_bad_input_is_refused(tmp_path):
    rasterio = pytest.importorskip("rasterio")
    share = np.full((4, 4), 1 / 16)
    path = tmp_path / "plain.tif"
    write_geotiff(path, share, extent=Extent.metres_box(100.0, 200.0, 500.0, 600.0), properties={})
    with rasterio.open(path) as tif:
        assert tif.crs is None and tuple(tif.transform)[:6] == (100.0, 0.0, 100.0, 0.0, -100.0, 600.0)
        assert tif.read(1).tolist() == [[1 / 16] * 4] * 4 and tif.overviews(1) == [2, 4]
    for level, want in ((0, [[0.25, 0.25], [0.25, 0.25]]), (1, [[1.0]])):
        with rasterio.open(path, overview_level=level) as overview:
            assert overview.read(1).tolist() == want
    with pytest.raises(InvalidParameterError, match="multiple of 16"):
        write_geotiff(path, share, extent=Extent.metres_box(0, 0, 1, 1), properties={}, blocksize=136)
    with pytest.raises(InvalidParameterError, match="blocksize"):
        write_geotiff(path, share, extent=Extent.metres_box(0, 0, 1, 1), properties={}, blocksize=64)
    with pytest.raises(InvalidParameterError, match="blocksize"):
        write_geotiff(path, share, extent=Extent.metres_box(0, 0, 1, 1), properties={}, blocksize=8192)
    with pytest.raises(InvalidParameterError, match="square"):
        write_geotiff(path, np.ones((2, 4)) / 8, extent=Extent.metres_box(0, 0, 1, 1), properties={})
    with pytest.raises(InvalidParameterError, match="power of two"):
        write_geotiff(path, np.ones((6, 6)) / 36, extent=Extent.metres_box(0, 0, 1, 1), properties={})

"""Public extents (issue 16): lon/lat projected to metres, square cells, invalid coordinates refused.

Oracles: PROJ through pyproj (transverse Mercator and geodesics on WGS84), and boxes worked by hand."""

import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import bound_users, private_heatmap
from dpcloak.heatmaps.evaluate import score_heatmap
from dpcloak.heatmaps.extent import Extent

pyproj = pytest.importorskip("pyproj")


def _tmerc(lon0, lat0):
    crs = f"+proj=tmerc +lat_0={lat0} +lon_0={lon0} +k=1 +x_0=0 +y_0=0 +ellps=WGS84 +units=m"
    return pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)


def test_lonlat_box_is_the_square_around_the_projected_box():
    box = (-74.3, 40.5, -73.7, 40.9)
    ext = Extent.lonlat_box(*box)
    # Oracle: PROJ's transverse Mercator at the box centre, edges sampled densely, enclosing square.
    t = np.linspace(0, 1, 2001)
    lon = np.concatenate([box[0] + 0.6 * t, box[0] + 0.6 * t, np.full_like(t, box[0]), np.full_like(t, box[2])])
    lat = np.concatenate([np.full_like(t, box[1]), np.full_like(t, box[3]), box[1] + 0.4 * t, box[1] + 0.4 * t])
    x, y = _tmerc(-74.0, 40.7).transform(lon, lat)
    side = max(np.ptp(x), np.ptp(y))
    assert ext.size == pytest.approx(side, rel=3e-6)
    assert ext.x_min + ext.size / 2 == pytest.approx((x.min() + x.max()) / 2, abs=1e-3)
    assert ext.y_min + ext.size / 2 == pytest.approx((y.min() + y.max()) / 2, abs=1e-3)
    # Points map through the same projection: (X − x_min)/size.
    pts_lon, pts_lat = np.array([-74.25, -74.0, -73.71]), np.array([40.52, 40.7, 40.88])
    px, py = _tmerc(-74.0, 40.7).transform(pts_lon, pts_lat)
    ux, uy, keep = ext.to_unit(pts_lon, pts_lat)
    assert keep.all()
    np.testing.assert_allclose(ux * ext.size, px - ext.x_min, atol=1e-3)
    np.testing.assert_allclose(uy * ext.size, py - ext.y_min, atol=1e-3)


def test_metres_are_metres_in_both_directions_at_high_latitude():
    # Issue 16: degrees are not metres (cos φ = 0.5 at 60° N). Oracle: pyproj.Geod puts points exactly 1 km east
    # and 1 km north of the centre; both map to the same offset 1000/size in unit coordinates (1e-4 relative:
    # the projection's scale error is ~x²/2R² ≈ 1e-8 here).
    ext = Extent.around(lon=10.0, lat=60.0, size=4000.0)
    geod = pyproj.Geod(ellps="WGS84")
    east_lon, east_lat, _ = geod.fwd(10.0, 60.0, 90.0, 1000.0)
    north_lon, north_lat, _ = geod.fwd(10.0, 60.0, 0.0, 1000.0)
    ux, uy, _ = ext.to_unit([10.0, east_lon, north_lon], [60.0, east_lat, north_lat])
    assert (ux[0], uy[0]) == pytest.approx((0.5, 0.5), abs=1e-12)
    assert ux[1] - 0.5 == pytest.approx(0.25, rel=1e-4) and uy[1] == pytest.approx(0.5, abs=1e-6)
    assert uy[2] - 0.5 == pytest.approx(0.25, rel=1e-4) and ux[2] == pytest.approx(0.5, abs=1e-6)


def test_metres_box_is_padded_to_a_square_around_its_centre():
    ext = Extent.metres_box(0.0, 0.0, 100.0, 50.0)  # hand oracle: side 100, centred on (50, 25)
    assert (ext.x_min, ext.y_min, ext.size) == (0.0, -25.0, 100.0)
    assert ext.cell_size(4) == 25.0
    xx, yy = ext.cell_centres(4)
    assert xx[0].tolist() == [12.5, 37.5, 62.5, 87.5] and yy[:, 0].tolist() == [-12.5, 12.5, 37.5, 62.5]
    with pytest.raises(InvalidParameterError, match="x_min < x_max"):
        Extent.metres_box(10.0, 0.0, 0.0, 1.0)
    with pytest.raises(InvalidParameterError, match="lon/lat output"):
        ext.to_lonlat([0.0], [0.0])


@pytest.mark.parametrize(
    ("lon", "lat", "match"),
    [([200.0], [40.0], r"lon must lie in \[-180, 180\]"), ([-74.0], [95.0], r"lat must lie in \[-90, 90\]"),
     ([np.nan], [40.0], "finite"), ([-74.0], [40.0, 41.0], "same")],
)
def test_invalid_coordinates_are_refused(lon, lat, match):
    ext = Extent.around(lon=-74.0, lat=40.7, size=10_000.0)
    with pytest.raises(InvalidParameterError, match=match):
        ext.to_unit(lon, lat)


def test_invalid_boxes_are_refused():
    with pytest.raises(InvalidParameterError, match="lat"):
        Extent.lonlat_box(-74.0, 85.0, -73.0, 95.0)
    with pytest.raises(InvalidParameterError, match="size"):
        Extent.around(lon=0.0, lat=0.0, size=-1.0)


def test_emd_and_cells_in_metres_through_the_front_end():
    # Oracle: one user moved by exactly one cell east moves mass 1/n by size/Δ metres (ℓ1 ground metric), so the
    # EMD between the two true maps is (1/n)·size/Δ metres.
    ext = Extent.metres_box(0.0, 0.0, 6400.0, 6400.0)
    delta, n = 64, 10
    xs = np.full(n, 1050.0)
    ys = np.linspace(500.0, 5500.0, n)
    moved = xs.copy()
    moved[0] += 100.0
    a = bound_users(np.arange(n), *ext.to_unit(xs, ys)[:2], resolution=delta)
    b = bound_users(np.arange(n), *ext.to_unit(moved, ys)[:2], resolution=delta)
    emd = score_heatmap(a.normalized, b.normalized, scale=ext.size).emd
    assert emd == pytest.approx(ext.size / delta / n, rel=1e-9) and ext.cell_size(delta) == 100.0
    res = private_heatmap(np.arange(n), xs, ys, epsilon=1.0, resolution=delta, extent=ext)
    summary = res.public_summary()
    assert summary["cell_size_m"] == 100.0 and summary["size_m"] == 6400.0 and math.isclose(res.aggregate.sum(), 1)
    with pytest.raises(InvalidParameterError, match="outside the extent"):
        private_heatmap(np.arange(2), [10.0, 7000.0], [10.0, 10.0], epsilon=1.0, resolution=8, extent=ext)


def _merc_to_tmerc_oracle(x0, y0, x1, y1, crs="EPSG:3857"):
    """PROJ end to end: the box centre to lon/lat, then one pipeline crs → transverse Mercator at that centre."""
    clon, clat = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(0.5 * (x0 + x1),
                                                                                          0.5 * (y0 + y1))
    tm = f"+proj=tmerc +lat_0={clat!r} +lon_0={clon!r} +k=1 +x_0=0 +y_0=0 +ellps=WGS84 +units=m"
    return pyproj.Transformer.from_crs(crs, tm, always_xy=True)


@pytest.mark.parametrize(("crs", "box"), [
    ("EPSG:3857", (-20000.0, 6700000.0, 10000.0, 6720000.0)),  # Web Mercator, London
    ("EPSG:32630", (690000.0, 5700000.0, 720000.0, 5710000.0)),  # UTM zone 30N, around London
    ("EPSG:3857", (-8266000.0, 4960000.0, -8228000.0, 4990000.0)),  # Web Mercator, New York harbour
])
def test_crs_box_matches_proj_end_to_end(crs, box):
    ext = Extent.crs_box(*box, crs=crs)
    # Oracle: PROJ transforms the box's edges (densely) from the CRS straight to the transverse Mercator at the
    # box centre; the extent is their enclosing square, and points map by the same pipeline.
    to_tm = _merc_to_tmerc_oracle(*box, crs=crs)
    t = np.linspace(0, 1, 2001)
    x0, y0, x1, y1 = box
    ex = np.concatenate([x0 + (x1 - x0) * t, x0 + (x1 - x0) * t, np.full_like(t, x0), np.full_like(t, x1)])
    ey = np.concatenate([np.full_like(t, y0), np.full_like(t, y1), y0 + (y1 - y0) * t, y0 + (y1 - y0) * t])
    x, y = to_tm.transform(ex, ey)
    assert ext.size == pytest.approx(max(np.ptp(x), np.ptp(y)), rel=3e-6)
    assert ext.x_min + ext.size / 2 == pytest.approx((x.min() + x.max()) / 2, abs=1e-3)
    assert ext.crs == crs and ext.summary()["crs"] == crs and not ext.lonlat
    rng = np.random.default_rng(5)
    px, py = x0 + (x1 - x0) * rng.random(50), y0 + (y1 - y0) * rng.random(50)
    ox, oy = to_tm.transform(px, py)
    ux, uy, keep = ext.to_unit(px, py)
    assert keep.all()
    np.testing.assert_allclose(ux * ext.size, ox - ext.x_min, atol=1e-3)
    np.testing.assert_allclose(uy * ext.size, oy - ext.y_min, atol=1e-3)
    # lon/lat output (GeoJSON) is PROJ's inverse of the CRS coordinates.
    lon, lat = ext.to_lonlat(*ext.to_metres(px, py))
    olon, olat = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(px, py)
    np.testing.assert_allclose(lon, olon, atol=1e-9)
    np.testing.assert_allclose(lat, olat, atol=1e-9)


def test_web_mercator_units_are_not_taken_for_metres():
    # At 60° N a Web Mercator unit is about half a metre on the ground. Oracle: pyproj.Geod's geodesic distance
    # between two points 2000 Mercator units apart; the grid puts them that many true metres apart. Reading the
    # Mercator units as metres (the weakened version) would put them 2000 m apart, twice the truth.
    y60 = 8399737.9
    ext = Extent.crs_box(-5000.0, y60 - 5000.0, 5000.0, y60 + 5000.0, crs="EPSG:3857")
    pts_x, pts_y = np.array([-1000.0, 1000.0, 0.0, 0.0]), np.array([y60, y60, y60, y60 + 2000.0])
    ux, uy, _ = ext.to_unit(pts_x, pts_y)
    lon, lat = pyproj.Transformer.from_crs("EPSG:3857", "EPSG:4326", always_xy=True).transform(pts_x, pts_y)
    geod = pyproj.Geod(ellps="WGS84")
    east = geod.inv(lon[0], lat[0], lon[1], lat[1])[2]
    north = geod.inv(lon[2], lat[2], lon[3], lat[3])[2]
    assert (ux[1] - ux[0]) * ext.size == pytest.approx(east, rel=1e-4)
    assert (uy[3] - uy[2]) * ext.size == pytest.approx(north, rel=1e-4)
    assert 990.0 < east < 1010.0 and abs((ux[1] - ux[0]) * ext.size - 2000.0) > 900.0


def test_crs_box_refuses_what_proj_does_not_know_and_points_off_the_globe():
    with pytest.raises(InvalidParameterError, match="crs") as err:
        Extent.crs_box(0.0, 0.0, 1.0, 1.0, crs="EPSG:999999")
    assert err.value.parameter == "crs"
    with pytest.raises(InvalidParameterError, match="crs"):
        Extent.crs_box(0.0, 0.0, 1.0, 1.0, crs=3857)
    ext = Extent.crs_box(-1000.0, -1000.0, 1000.0, 1000.0, crs="EPSG:3857")
    with pytest.raises(InvalidParameterError):
        ext.to_unit([0.0, np.nan], [0.0, 0.0])
    with pytest.raises(InvalidParameterError, match="outside"):
        ext.to_unit([0.0, 5000.0], [0.0, 0.0])


def test_release_and_geojson_with_a_web_mercator_extent(tmp_path):
    import json

    from dpcloak.heatmaps.export import write_geojson

    ext = Extent.crs_box(-20000.0, 6700000.0, 10000.0, 6720000.0, crs="EPSG:3857")
    rng = np.random.default_rng(6)
    x, y = -20000.0 + 30000.0 * rng.random(300), 6700000.0 + 20000.0 * rng.random(300)
    res = private_heatmap(np.arange(300), x, y, epsilon=1.0, resolution=16, extent=ext, w=20)
    summary = res.public_summary()
    assert summary["crs"] == "EPSG:3857" and summary["cell_size_m"] == pytest.approx(ext.size / 16)
    write_geojson(tmp_path / "m.geojson", res.aggregate, extent=ext, properties=summary)
    doc = json.loads((tmp_path / "m.geojson").read_text())
    lon, lat = np.array(doc["features"][0]["geometry"]["coordinates"][0]).T
    assert np.all((lon > -0.2) & (lon < 0.1) & (lat > 51.3) & (lat < 51.5))  # London, in WGS84 degrees

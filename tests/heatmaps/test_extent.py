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

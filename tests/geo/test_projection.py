"""dpcloak.geo against PROJ (pyproj, an independent implementation) and against geodesic facts."""

import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.geo import LocalProjection, projection_for

pyproj = pytest.importorskip("pyproj")


def _proj_oracle(lon0, lat0):
    crs = f"+proj=tmerc +lat_0={lat0!r} +lon_0={lon0!r} +k=1 +x_0=0 +y_0=0 +ellps=WGS84 +units=m"
    return pyproj.Transformer.from_crs("EPSG:4326", crs, always_xy=True)


@pytest.mark.parametrize("lon0, lat0", [(174.765, -36.848), (10.0, 45.0), (-179.5, 0.0), (0.0, 78.0)])
def test_forward_matches_proj_to_a_micrometre(lon0, lat0):
    rng = np.random.default_rng(1)
    lon = (lon0 + rng.uniform(-15, 15, 5000) + 180) % 360 - 180
    lat = np.clip(lat0 + rng.uniform(-30, 30, 5000), -89.0, 89.0)
    x, y = LocalProjection(lon0=lon0, lat0=lat0).forward(lon, lat)
    X, Y = _proj_oracle(lon0, lat0).transform(lon, lat)
    assert np.max(np.abs(x - X)) < 1e-6 and np.max(np.abs(y - Y)) < 1e-6


def test_inverse_round_trips_and_matches_proj():
    proj = LocalProjection(lon0=174.765, lat0=-36.848)
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-5e5, 5e5, (2, 2000))
    lon, lat = proj.inverse(x, y)
    back = _proj_oracle(174.765, -36.848).transform(lon, lat)
    np.testing.assert_allclose(back, (x, y), atol=1e-6)
    x2, y2 = proj.forward(lon, lat)
    np.testing.assert_allclose((x2, y2), (x, y), atol=1e-7)


def test_local_distances_are_geodesic_distances():
    """Over a city the projected Euclidean distance equals the WGS84 geodesic (pyproj.Geod) to 10 ppm."""
    proj = projection_for(174.765, -36.848)
    rng = np.random.default_rng(3)
    lon = 174.765 + rng.uniform(-0.05, 0.05, 200)
    lat = -36.848 + rng.uniform(-0.05, 0.05, 200)
    x, y = proj.forward(lon, lat)
    _, _, geodesic = pyproj.Geod(ellps="WGS84").inv(lon[:-1], lat[:-1], lon[1:], lat[1:])
    planar = np.hypot(np.diff(x), np.diff(y))
    assert np.max(np.abs(planar / geodesic - 1)) < 1e-5
    # the "linear degrees" shortcut is wrong by cos(lat) east-west: 20 % at 36.8 degrees south
    assert abs(math.cos(math.radians(36.848)) - 1) > 0.19


def test_pyproj_backend_agrees_with_builtin():
    a = LocalProjection(lon0=2.35, lat0=48.85)
    b = LocalProjection(lon0=2.35, lat0=48.85, backend="pyproj")
    pts = (np.array([2.30, 2.40, 2.35]), np.array([48.80, 48.90, 48.85]))
    np.testing.assert_allclose(a.forward(*pts), b.forward(*pts), atol=1e-6)
    np.testing.assert_allclose(a.inverse([100.0], [-50.0]), b.inverse([100.0], [-50.0]), atol=1e-11)


def test_centre_maps_to_origin_and_east_is_positive_x():
    proj = LocalProjection(lon0=-73.98, lat0=40.75)
    x, y = proj.forward(-73.98, 40.75)
    assert abs(float(x)) < 1e-9 and abs(float(y)) < 1e-9
    x, y = proj.forward(-73.97, 40.76)
    assert x > 0 and y > 0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: LocalProjection(lon0=0.0, lat0=91.0), r"lat must lie in \[-90, 90\].*91"),
        (lambda: LocalProjection(lon0=181.0, lat0=0.0), r"lon must lie in \[-180, 180\].*181"),
        (lambda: LocalProjection(lon0=float("nan"), lat0=0.0), "lon0 must be a finite"),
        (lambda: LocalProjection(lon0=0.0, lat0=90.0), r"lat0 must lie in \(-90, 90\)"),
        (lambda: LocalProjection(lon0=0.0, lat0=0.0, backend="gdal"), "backend must be one of"),
        (lambda: projection_for(0.0, 0.0).forward([1.0, np.nan], [0.0, 0.0]), "lon must be finite; it has 1 NaN"),
        (lambda: projection_for(0.0, 0.0).forward([174.77], [-36.85]), "within 60 degrees"),
        (lambda: projection_for(0.0, 0.0).forward([-36.85], [174.77]), "swapped"),
        (lambda: projection_for(0.0, 0.0).forward([1.0, 2.0], [0.0]), "same shape"),
        (lambda: projection_for(0.0, 0.0).inverse([np.inf], [0.0]), "x must be finite"),
        (lambda: projection_for(0.0, 0.0).inverse([0.0], [2e7]), "within"),
    ],
)
def test_invalid_input_is_refused_clearly(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()

"""Coordinate mapping, CSV/Parquet loading and the AIS data (``data`` extra; skipped when absent)."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.loaders import bounding_box, load_ais, load_points, lonlat_to_unit, pixels_to_unit


def test_lonlat_and_pixel_mapping():
    x, y, keep = lonlat_to_unit([-74.0, -73.5, -73.0], [40.0, 40.25, 40.5], bbox=(-74.0, 40.0, -72.0, 41.0))
    np.testing.assert_allclose(x, [0.0, 0.25, 0.5])
    np.testing.assert_allclose(y, [0.0, 0.25, 0.5])
    assert keep.all()
    with pytest.raises(InvalidParameterError, match="outside"):
        lonlat_to_unit([-72.0], [40.5], bbox=(-74.0, 40.0, -72.0, 41.0))  # right edge is excluded
    x, y, keep = lonlat_to_unit([-72.0, -73.0], [40.5, 40.5], bbox=(-74.0, 40.0, -72.0, 41.0), drop_outside=True)
    assert keep.tolist() == [False, True] and x.tolist() == [0.5]
    px, py, _ = pixels_to_unit([0, 320, 639], [0, 240, 479], width=640, height=480)
    np.testing.assert_allclose(px, [0.0, 0.5, 639 / 640])
    np.testing.assert_allclose(py, [0.0, 0.5, 479 / 480])
    with pytest.raises(InvalidParameterError):
        lonlat_to_unit([0.0], [0.0], bbox=(1.0, 0.0, 0.0, 1.0))


def test_bounding_box_contains_all_points():
    lon = np.array([-74.2, -73.7, -74.0])
    lat = np.array([40.4, 40.9, 40.6])
    box = bounding_box(lon, lat)
    x, y, keep = lonlat_to_unit(lon, lat, bbox=box)
    assert keep.all() and x.max() < 1.0 and y.max() < 1.0


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_load_points_roundtrip(tmp_path, suffix):
    pd = pytest.importorskip("pandas")
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"user": [1, 1, 2], "lat": [40.0, 40.5, 40.25], "lon": [-74.0, -73.5, -73.0],
                          "time": ["t0", "t1", "t2"]})
    path = tmp_path / f"p{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    pts, box = load_points(path, bbox=(-74.0, 40.0, -72.0, 41.0))
    np.testing.assert_allclose(pts.x, [0.0, 0.25, 0.5])
    assert pts.users.tolist() == [1, 1, 2] and box == (-74.0, 40.0, -72.0, 41.0)
    frame.assign(x=[0.1, 0.2, 0.3], y=[0.5, 0.5, 0.5]).to_csv(tmp_path / "u.csv", index=False)
    unit, nobox = load_points(tmp_path / "u.csv", unit_columns=("x", "y"))
    assert nobox is None and unit.x.tolist() == [0.1, 0.2, 0.3]
    with pytest.raises(InvalidParameterError, match="missing"):
        load_points(path, user="who")
    with pytest.raises(InvalidParameterError, match="does not exist"):
        load_points(tmp_path / "nope.csv")
    with pytest.raises(InvalidParameterError, match=r"bbox .* is required.*public"):
        load_points(path)  # never a box taken from the data (issue 12, defect 8)


def test_ais_data():
    pytest.importorskip("tracktable_data")
    pytest.importorskip("pandas")
    pts, box = load_ais()
    # Oracle: the shipped file (NY harbour, 2020-06-30 first hour) has 8689 reports of 295 vessels.
    assert pts.users.size == 8689 and pts.n_users == 295
    assert pts.x.min() >= 0 and pts.x.max() < 1 and pts.y.max() < 1
    assert box[0] < -74.0 < box[2] and box[1] < 40.7 < box[3]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("user,lat,lon\n1,40.7,-74.0\n2,40.8\n3,40.9,-73.9,extra,fields\n", "cannot read"),
        ("user,lat,lon\n1,40.7,-74.0\n2,north,-73.9\n", "column 'lat' must hold numbers; it has 'north'"),
        ("", "cannot read"),
    ],
)
def test_malformed_files_raise_clear_errors(tmp_path, content, message):
    path = tmp_path / "points.csv"
    path.write_text(content)
    with pytest.raises(InvalidParameterError) as info:
        load_points(path, bbox=(-75.0, 40.0, -73.0, 41.0))
    assert message in str(info.value)


def test_malformed_file_on_the_cli_exits_2_without_traceback(tmp_path):
    from typer.testing import CliRunner

    from dpcloak.cli import app

    path = tmp_path / "points.csv"
    path.write_text("user,lat,lon\n1,40.7,-74.0\n2,40.8\n3,40.9,-73.9,extra,fields\n")
    result = CliRunner().invoke(app, ["heatmap", str(path), "--epsilon", "1", "--bbox", "-75,40,-73,41"])
    assert result.exit_code == 2 and "cannot read" in result.stderr and "Traceback" not in result.output

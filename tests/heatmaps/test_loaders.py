"""Coordinate mapping, CSV/Parquet loading and the AIS data (``data`` extra; skipped when absent)."""

import numpy as np
import pytest

from dpcloak.errors import InvalidFileError, InvalidParameterError
from dpcloak.heatmaps.extent import Extent
from dpcloak.heatmaps.loaders import bounding_box, load_ais, load_points, lonlat_to_unit, pixels_to_unit


def test_lonlat_box_and_pixel_mapping():
    # lonlat_to_unit goes through Extent.lonlat_box (projected metres; the projection itself is tested against
    # pyproj in test_extent). Oracle here: the box centre maps to the square's centre, a point outside is refused.
    box = (-74.0, 40.0, -72.0, 41.0)
    x, y, keep = lonlat_to_unit([-73.0], [40.5], bbox=box)
    assert keep.all() and abs(x[0] - 0.5) < 1e-12 and abs(y[0] - 0.5) < 2e-3
    with pytest.raises(InvalidParameterError, match="outside"):
        lonlat_to_unit([-71.0], [40.5], bbox=box)
    x, y, keep = lonlat_to_unit([-71.0, -73.0], [40.5, 40.5], bbox=box, drop_outside=True)
    assert keep.tolist() == [False, True] and x.size == 1
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
    extent = Extent.lonlat_box(-74.0, 40.0, -72.0, 41.0)
    pts = load_points(path, extent=extent)
    ex, ey, _ = extent.to_unit(frame.lon, frame.lat)
    np.testing.assert_array_equal(pts.x, ex)
    np.testing.assert_array_equal(pts.y, ey)
    assert pts.users.tolist() == [1, 1, 2]
    frame.assign(x=[0.1, 0.2, 0.3], y=[0.5, 0.5, 0.5]).to_csv(tmp_path / "u.csv", index=False)
    unit = load_points(tmp_path / "u.csv", columns=("x", "y"))
    assert unit.x.tolist() == [0.1, 0.2, 0.3]
    with pytest.raises(InvalidFileError, match=r"no column 'who'|missing") as info:
        load_points(path, user="who", extent=extent)
    assert info.value.field == "who" and info.value.path == path
    with pytest.raises(InvalidFileError, match="no such file"):
        load_points(tmp_path / "nope.csv")
    with pytest.raises(InvalidFileError, match="no such file"):
        load_points(tmp_path / "nope.parquet")
    with pytest.raises(InvalidParameterError, match=r"outside the unit square.*public Extent"):
        load_points(path)  # lon/lat read as [0, 1) coordinates without an extent: refused, never a data-derived box


def test_ais_data():
    pytest.importorskip("tracktable_data")
    pytest.importorskip("pandas")
    pts, box = load_ais()
    # Oracle: the shipped file (NY harbour, 2020-06-30 first hour) has 8689 reports of 295 vessels.
    assert pts.users.size == 8689 and pts.n_users == 295
    assert pts.x.min() >= 0 and pts.x.max() < 1 and pts.y.max() < 1
    assert box[0] < -74.0 < box[2] and box[1] < 40.7 < box[3]


POINTS = "user,lat,lon,time\n1,40.7,-74.0,t0\n1,40.8,-73.9,t1\n2,40.9,-73.8,t2\n"


@pytest.mark.parametrize(
    ("content", "field", "line", "message"),
    [
        (POINTS.replace("40.8,", "north,"), "lat", 3, "lat = 'north' is not a finite number"),  # wrong type
        (POINTS.replace("40.8,", "nan,"), "lat", 3, "lat = 'nan' is not a finite number"),
        (POINTS.replace("-73.8", "inf"), "lon", 4, "lon = 'inf' is not a finite number"),
        (POINTS.replace("\n1,40.8", "\n,40.8"), "user", 3, "the user id ('user') is empty"),
        (POINTS.replace("user,lat", "who,lat"), "user", 1, "no column 'user' (the user id)"),  # missing column
        (POINTS.replace(",-73.9,", ",-73.9,t1,"), None, 3, "5 fields, but the header has 4"),  # extra field
        (POINTS.replace(",-73.9,", ","), None, 3, "3 fields, but the header has 4"),  # missing field
        (POINTS.replace("time", "lat"), "lat", 1, "column 'lat' appears twice"),  # duplicate column
        ("", None, None, "is empty; it needs a header row"),
        (POINTS.replace("t0", "Zürich").encode("latin-1"), None, 2, "not UTF-8 text (byte 0xfc)"),  # Latin-1
        (POINTS.encode("utf-16"), None, None, "UTF-16 (little-endian) text; save it as UTF-8"),  # UTF-16
        (b"\x00\x01binary", None, 1, "binary file"),
    ],
)
def test_points_csv_schema(tmp_path, content, field, line, message):
    """Each break of the points CSV's schema is one InvalidFileError naming the file, the column and the line
    (oracle: the one change made to a file that loads); never a traceback or a silently shifted column."""
    extent = Extent.lonlat_box(-75.0, 40.0, -73.0, 41.0)
    good = tmp_path / "good.csv"
    good.write_text(POINTS)
    assert load_points(good, extent=extent).users.tolist() == [1, 1, 2]
    path = tmp_path / "points.csv"
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    with pytest.raises(InvalidFileError) as info:
        load_points(path, extent=extent)
    err = info.value
    assert message in str(err) and str(err).startswith(f"{path}")
    assert (err.path, err.field, err.line) == (path, field, line)


def test_points_csv_gzip_and_text_user_ids(tmp_path):
    """A .csv.gz file is read like its text; user ids that are not all integers stay text; a corrupt gzip file
    is one error naming it."""
    import gzip

    extent = Extent.lonlat_box(-75.0, 40.0, -73.0, 41.0)
    path = tmp_path / "p.csv.gz"
    path.write_bytes(gzip.compress(POINTS.replace("\n2,", "\nb,").encode()))
    pts = load_points(path, extent=extent)
    assert pts.users.tolist() == ["1", "1", "b"] and pts.n_users == 2
    path.write_bytes(b"not gzip")
    with pytest.raises(InvalidFileError, match="not a valid gzip file"):
        load_points(path, extent=extent)


def test_points_parquet_schema(tmp_path):
    """A Parquet file without a column, or with text in a coordinate column, names the file and the column."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    extent = Extent.lonlat_box(-75.0, 40.0, -73.0, 41.0)
    path = tmp_path / "p.parquet"
    pd.DataFrame({"user": [1, 2], "lat": ["40.5", "north"], "lon": [-74.0, -73.5]}).to_parquet(path)
    with pytest.raises(InvalidFileError, match="row 1: column 'lat' must hold numbers; it has 'north'") as info:
        load_points(path, extent=extent)
    assert (info.value.path, info.value.field, info.value.got) == (path, "lat", "north")
    pd.DataFrame({"user": [1, 2], "lat": [40.5, 40.6]}).to_parquet(path)
    with pytest.raises(InvalidFileError) as info:
        load_points(path, extent=extent)
    assert (info.value.path, info.value.field) == (path, "lon")
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(InvalidFileError, match="cannot read it as Parquet"):
        load_points(path, extent=extent)


def test_malformed_file_on_the_cli_exits_2_without_traceback(tmp_path):
    from typer.testing import CliRunner

    from dpcloak.cli import app

    path = tmp_path / "points.csv"
    path.write_text("user,lat,lon\n1,40.7,-74.0\n2,40.8\n3,40.9,-73.9,extra,fields\n")
    result = CliRunner().invoke(app, ["heatmap", str(path), "--epsilon", "1", "--bbox", "-75,40,-73,41"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.splitlines() == [f"error: POINTS {path}:3: 2 fields, but the header has 3 (user, lat, lon); a "
                                          "missing or extra separator shifts every column after it"]

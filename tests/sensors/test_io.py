"""Sensors and counts CSV readers: column detection, projection, merging, missing cells, refusals."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.geo import projection_for
from dpcloak.sensors import read_counts_csv, read_sensors_csv


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_lonlat_columns_are_found_by_name_and_projected(tmp_path):
    f = _write(tmp_path / "s.csv", "Address,Latitude,Longitude\nA,-36.8430,174.7665\nB,-36.8450,174.7690\n")
    layout = read_sensors_csv(f)
    centre = ((174.7665 + 174.7690) / 2, (-36.8430 + -36.8450) / 2)
    x, y = projection_for(*centre).forward([174.7665, 174.7690], [-36.8430, -36.8450])
    np.testing.assert_allclose(layout.positions, np.column_stack([x, y]), atol=1e-9)
    assert layout.names == ("A", "B") and layout.input_names == ("A", "B")
    np.testing.assert_allclose(layout.lonlat, [[174.7665, -36.8430], [174.7690, -36.8450]])


def test_metre_columns_and_no_names(tmp_path):
    layout = read_sensors_csv(_write(tmp_path / "s.csv", "x,y\n0,0\n30,40\n"))
    np.testing.assert_array_equal(layout.positions, [[0, 0], [30, 40]])
    assert layout.projection is None and layout.names == ("sensor 0", "sensor 1")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a,b\n1,2\n", "must name lon and lat columns"),
        ("lon,lat\n", "at least one sensor"),
        ("lon,lat\n174.7,abc\n", "coordinates are not numbers"),
        ("lon,lat\n-36.8,174.7\n", "swapped"),
        ("x,y\n0,0\n0.5,0\n", r"sensors 'sensor 0' and 'sensor 1' are 0.5 m apart"),
    ],
)
def test_sensor_file_refusals(tmp_path, text, match):
    with pytest.raises(InvalidParameterError, match=match):
        read_sensors_csv(_write(tmp_path / "s.csv", text))
    with pytest.raises(InvalidParameterError, match="not found"):
        read_sensors_csv(tmp_path / "nope.csv")


def test_counts_are_matched_by_name_filtered_and_merged(tmp_path):
    layout = read_sensors_csv(_write(tmp_path / "s.csv", "name,x,y\nA,0,0\nB,100,0\nB2,100,0.2\n"),
                              colocated="merge")
    counts = _write(tmp_path / "c.csv", "B2,date,hour,A,B\n5,d1,0:00,1,2\n7,d2,0:00,3,\n9,d2,1:00,4,6\n")
    got = read_counts_csv(counts, layout, where={"date": "d2"})
    assert got.labels == ("d2 0:00", "d2 1:00")
    np.testing.assert_array_equal(got.raw[1], [4, 6, 9])
    assert got.values[1].tolist() == [4, 15] and got.values[0, 0] == 3 and np.isnan(got.values[0, 1])


@pytest.mark.parametrize(
    ("text", "where", "match"),
    [
        ("date,A\nd1,1\n", None, r"no column for counter\(s\) \['B'\]"),
        ("date,A,B\nd1,1,x\n", None, "count 'x' is not a number"),
        ("date,A,B\nd1,1,-2\n", None, "finite and >= 0"),
        ("date,A,B\nd1,1,2\n", {"day": "d1"}, "'day' is not a label column"),
        ("date,A,B\nd1,1,2\n", {"date": "d9"}, "no rows match"),
    ],
)
def test_counts_refusals(tmp_path, text, where, match):
    layout = read_sensors_csv(_write(tmp_path / "s.csv", "name,x,y\nA,0,0\nB,100,0\n"))
    with pytest.raises(InvalidParameterError, match=match):
        read_counts_csv(_write(tmp_path / "c.csv", text), layout, where=where)

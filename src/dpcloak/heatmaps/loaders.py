"""Coordinates → [0, 1)² and real point data: CSV/Parquet files and AIS vessel tracks (``data`` extra).

:func:`load_points` reads (user, coordinate, coordinate) rows and maps them to the unit square with a
**public** :class:`~dpcloak.heatmaps.extent.Extent` (lon/lat projected to metres, or metres); without
an extent the columns must already hold [0, 1) coordinates. :func:`lonlat_to_unit` is the same mapping
for arrays and a lon/lat box; :func:`pixels_to_unit` maps pixel coordinates of a width × height image
to x = px/width, y = py/height. All reject points outside unless ``drop_outside=True``. The AIS data
are the real vessel positions around New York harbour (2020-06-30, first hour: 8,689 AIS reports of
295 vessels, user = MMSI) shipped by the ``tracktable-data`` package.
"""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._textfiles import read_csv_table
from dpcloak._validation import check_array, check_real
from dpcloak.errors import InvalidFileError, InvalidParameterError, MissingExtraError
from dpcloak.heatmaps.extent import Extent
from dpcloak.heatmaps.synthetic import PointSet

__all__ = ["lonlat_to_unit", "pixels_to_unit", "bounding_box", "load_points", "load_ais", "ais_path", "AIS_FILE"]

AIS_FILE = "NYHarbor_2020_06_30_first_hour.csv"

BBox = tuple[float, float, float, float]


def _finish(x: NDArray[np.float64], y: NDArray[np.float64], drop_outside: bool, what: str) -> NDArray[np.bool_]:
    inside = (x >= 0.0) & (x < 1.0) & (y >= 0.0) & (y < 1.0)
    if not drop_outside and not np.all(inside):
        outside = int(inside.size - np.count_nonzero(inside))
        raise InvalidParameterError(f"{outside} points lie outside the {what}; enlarge it or pass drop_outside=True",
                                    parameter="drop_outside", allowed="True to drop the points outside",
                                    got=outside)
    return inside


def lonlat_to_unit(
    lon: ArrayLike, lat: ArrayLike, *, bbox: BBox, drop_outside: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Map (lon, lat) to [0, 1)² through ``Extent.lonlat_box(*bbox)`` (projected to metres, square cells).

    ``bbox = (lon_min, lat_min, lon_max, lat_max)`` must be public. Returns x, y of the kept points and
    the boolean mask of kept input points; invalid lon/lat are refused.

    Examples
    --------
    >>> x, y, kept = lonlat_to_unit([174.762, 174.77], [-36.848, -36.85], bbox=(174.75, -36.86, 174.78, -36.84))
    >>> bool(np.all((x >= 0) & (x < 1) & (y >= 0) & (y < 1))), kept.tolist()
    (True, [True, True])
    """
    lo = check_array("lon", lon, ndim=1)
    la = check_array("lat", lat, ndim=1)
    if lo.shape != la.shape:
        raise InvalidParameterError(f"lon and lat must have the same length, got {lo.size} and {la.size}",
                                    parameter="lon")
    return Extent.lonlat_box(*bbox).to_unit(lo, la, drop_outside=drop_outside)


def pixels_to_unit(
    px: ArrayLike, py: ArrayLike, *, width: float, height: float, drop_outside: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Map pixel coordinates of a width × height box to [0, 1)² (x = px/width, y = py/height).

    Examples
    --------
    >>> x, y, kept = pixels_to_unit([0, 320], [0, 240], width=640, height=480)
    >>> x.tolist(), y.tolist(), kept.tolist()
    ([0.0, 0.5], [0.0, 0.5], [True, True])
    """
    w = check_real("width", width, low=0.0)
    h = check_real("height", height, low=0.0)
    x = check_array("px", px, ndim=1) / w
    y = check_array("py", py, ndim=1) / h
    if x.shape != y.shape:
        raise InvalidParameterError(f"px and py must have the same length, got {x.size} and {y.size}", parameter="px")
    keep = _finish(x, y, drop_outside, "pixel box")
    return x[keep], y[keep], keep


def bounding_box(lon: ArrayLike, lat: ArrayLike, *, margin: float = 1e-6) -> BBox:
    """The data's (lon_min, lat_min, lon_max, lat_max), widened by ``margin`` × extent so every point is inside.

    A box derived from the data is itself a function of the data: **never use it for a release** (the
    loaders and the CLI refuse to derive one); it serves experiments and plots of public data.

    Examples
    --------
    For experiments on public data only (a box derived from private data leaks it):

    >>> box = bounding_box([174.75, 174.78], [-36.86, -36.84])
    >>> box[0] < 174.75 and box[2] > 174.78, [round(v, 6) for v in box]
    (True, [174.75, -36.86, 174.78, -36.84])
    """
    lo = check_array("lon", lon, ndim=1)
    la = check_array("lat", lat, ndim=1)
    m = check_real("margin", margin, low=0.0)
    box = []
    for a in (lo, la):
        ext = max(float(a.max() - a.min()), 1e-9)
        box.append((float(a.min()) - m * ext, float(a.max()) + m * ext))
    return box[0][0], box[1][0], box[0][1], box[1][1]


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise MissingExtraError("reading CSV/Parquet needs pandas: pip install 'dpcloak[data]'") from None
    return pd


def _numeric_column(frame: Any, name: str, path: Path | None = None) -> Any:
    """Column ``name`` as floats, or a clear error naming the column and a bad value (and the file, if any)."""
    try:
        return frame[name].to_numpy(dtype=float)
    except (TypeError, ValueError):
        row, bad = next(((k, v) for k, v in enumerate(frame[name]) if not _is_number(v)), (None, None))
        if path is not None:
            raise InvalidFileError(f"{path}: row {row}: column {name!r} must hold numbers; it has {bad!r}", path=path,
                                   field=name, got=bad, allowed="numbers") from None
        raise InvalidParameterError(f"column {name!r} must hold numbers; it has {bad!r}", parameter="column",
                                    allowed="numbers", got=bad) from None


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _columns(frame: Any, names: tuple[str, str, str],
             path: Path | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    missing = [c for c in names if c not in frame.columns]
    if missing:
        message = f"input must have columns {', '.join(map(repr, names))}; missing {missing}"
        if path is not None:
            raise InvalidFileError(f"{path}: {message}", path=path, field=missing[0], allowed=", ".join(names),
                                   got=list(map(str, frame.columns)))
        raise InvalidParameterError(message, parameter="columns", allowed=", ".join(names),
                                    got=list(map(str, frame.columns)))
    return _numeric_column(frame, names[1], path), _numeric_column(frame, names[2], path)


_INTEGER = re.compile(r"[+-]?\d+")


def _read_points_csv(path: Path, names: tuple[str, str, str]) -> tuple[NDArray[Any], NDArray[np.float64],
                                                                       NDArray[np.float64]]:
    """(users, first coordinate, second coordinate) of a points CSV, every cell checked against its column's type.

    The file must be UTF-8 text (gzip-compressed for ``.gz``) with a header of unique names that holds the
    user column and both coordinate columns (other columns are ignored), each row as many fields as the
    header, a non-empty user id and finite numbers for the coordinates: anything else is an
    :class:`~dpcloak.errors.InvalidFileError` naming the file, the column and the line. User ids that
    are all integers are read as integers, else as text.
    """
    table = read_csv_table(path, what="points CSV")
    for role, name in zip(("user id", "first coordinate", "second coordinate"), names, strict=True):
        if name not in table.header:
            raise InvalidFileError(
                f"{path}:{table.header_line}: the points CSV has no column {name!r} (the {role}); its columns: "
                f"{', '.join(table.header)}", path=path, field=name, line=table.header_line,
                allowed=", ".join(names), got=list(table.header))
    user_k, a_k, b_k = (table.column(name) for name in names)
    users: list[str] = []
    coords = np.empty((2, len(table.rows)))
    for i, (line, cells) in enumerate(table.rows):
        if not cells[user_k]:
            raise InvalidFileError(f"{path}:{line}: the user id ({names[0]!r}) is empty", path=path, field=names[0],
                                   line=line, allowed="a non-empty user id", got="")
        users.append(cells[user_k])
        for j, k in enumerate((a_k, b_k)):
            try:
                value = float(cells[k])
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise InvalidFileError(f"{path}:{line}: {names[1 + j]} = {cells[k]!r} is not a finite "
                                       "number", path=path, field=table.header[k], line=line,
                                       allowed="a finite number", got=cells[k])
            coords[j, i] = value
    ids: NDArray[Any] = (np.array([int(u) for u in users], dtype=np.int64)
                         if users and all(_INTEGER.fullmatch(u) for u in users) else np.array(users, dtype=object))
    return ids, coords[0], coords[1]


def _to_points(users: NDArray[Any], a: NDArray[np.float64], b: NDArray[np.float64], extent: Extent | None,
               drop_outside: bool) -> PointSet:
    if extent is None:
        a, b = check_array("x", a, ndim=1), check_array("y", b, ndim=1)
        keep = _finish(a, b, drop_outside, "unit square [0, 1)² (without an extent the columns must hold [0, 1) "
                       "coordinates; lon/lat or metres need a public Extent)")
        x, y = a[keep], b[keep]
    else:
        x, y, keep = extent.to_unit(a, b, drop_outside=drop_outside)
    return PointSet(users=users[keep], x=x, y=y)


def load_points(
    path: str | Path,
    *,
    user: str = "user",
    columns: tuple[str, str] = ("lon", "lat"),
    extent: Extent | None = None,
    drop_outside: bool = False,
) -> PointSet:
    """Read (user, coordinate, coordinate[, time, ...]) records from a CSV or Parquet file, mapped to [0, 1)².

    Parameters
    ----------
    path : str or Path
        ``.csv`` (or ``.csv.gz``) or ``.parquet`` file.
    user : str
        User-id column.
    columns : (str, str)
        The two coordinate columns, east first: (lon, lat) degrees for a lon/lat extent, (x, y) metres
        for a metres extent, or [0, 1) coordinates without an extent. Other columns are ignored.
    extent : Extent or None
        The **public** extent (:mod:`dpcloak.heatmaps.extent`): never derived from the data, since a box
        taken from the points is a function of the data. ``None``: the columns hold [0, 1) coordinates.
    drop_outside : bool
        Drop points outside the extent instead of raising.

    Returns
    -------
    PointSet

    Raises
    ------
    InvalidFileError
        The file breaks its schema: not UTF-8 text (Latin-1, UTF-16, binary), a duplicated or unnamed
        header column, a missing user or coordinate column, a row with more or fewer fields than the
        header, an empty user id, a coordinate that is not a finite number. The error names the file, the
        column (``field``) and the line.

    Examples
    --------
    Longitude/latitude records inside a public extent (2 km around a landmark), mapped to [0, 1)²:

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "points.csv"
    >>> _ = path.write_text("user,lon,lat\\na,174.762,-36.848\\na,174.763,-36.848\\nb,174.770,-36.850\\n")
    >>> points = load_points(path, extent=Extent.around(lon=174.762, lat=-36.848, size=2000.0))
    >>> points.n_users, points.x.round(3).tolist()
    (2, [0.5, 0.545, 0.857])

    A cell of the wrong type is refused with its file, column and line:

    >>> _ = path.write_text("user,lon,lat\\na,174.762,-36.848\\nb,east,-36.850\\n")
    >>> load_points(path, extent=Extent.around(lon=174.762, lat=-36.848, size=2000.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidFileError: .../points.csv:3: lon = 'east' is not a finite number
    >>> tmp.cleanup()
    """
    p = Path(path)
    names = (user, *columns)
    if p.suffix != ".parquet":
        users, a, b = _read_points_csv(p, (names[0], names[1], names[2]))
        return _to_points(users, a, b, extent, drop_outside)
    pd = _pandas()
    if not p.is_file():
        raise InvalidFileError(f"{p}: no such file (the points file)" if not p.exists() else
                               f"{p}: is a directory, expected the points file", path=p)
    try:
        frame = pd.read_parquet(p)
    except (ValueError, OSError) as exc:  # pandas/pyarrow parse errors derive from ValueError
        raise InvalidFileError(f"{p}: cannot read it as Parquet: {exc}", path=p) from None
    a, b = _columns(frame, (names[0], names[1], names[2]), p)
    return _to_points(frame[user].to_numpy(), a, b, extent, drop_outside)


def ais_path() -> Path:
    """The AIS CSV file shipped by ``tracktable-data`` (columns MMSI, BaseDateTime, LON, LAT, …).

    Raises :class:`~dpcloak.errors.MissingExtraError` without the ``data`` extra.

    Examples
    --------
    >>> ais_path().name
    'NYHarbor_2020_06_30_first_hour.csv'
    """
    # tracktable_data.data reconfigures logging and sys.tracebacklimit on import: locate the file instead.
    spec = importlib.util.find_spec("tracktable_data")
    if spec is None or spec.origin is None:
        raise MissingExtraError("the AIS data set needs tracktable-data: pip install 'dpcloak[data]'")
    return Path(spec.origin).parent / "python_example_data" / AIS_FILE


def load_ais(*, bbox: BBox | None = None, drop_outside: bool = False) -> tuple[PointSet, BBox]:
    """Real AIS vessel reports around New York harbour from ``tracktable-data`` (user = vessel MMSI).

    For experiments: with ``bbox=None`` the data's own bounding box is used (:func:`bounding_box`), which
    is not private; a release needs a public box. Needs the ``data`` extra (``pip install 'dpcloak[data]'``).

    Examples
    --------
    Needs the ``data`` extra; a public box around New York harbour, points outside it dropped:

    >>> points, box = load_ais(bbox=(-74.3, 40.4, -73.7, 40.9), drop_outside=True)
    >>> box, bool(points.n_users > 100)
    ((-74.3, 40.4, -73.7, 40.9), True)
    >>> bool(np.all((points.x >= 0) & (points.x < 1) & (points.y >= 0) & (points.y < 1)))
    True
    """
    pd = _pandas()
    frame = pd.read_csv(ais_path())
    lo, la = _columns(frame, ("MMSI", "LON", "LAT"))
    box = bounding_box(lo, la) if bbox is None else bbox
    return _to_points(frame["MMSI"].to_numpy(), lo, la, Extent.lonlat_box(*box), drop_outside), box

"""Coordinates → [0, 1)² and real point data: CSV/Parquet files and AIS vessel tracks (``data`` extra).

:func:`lonlat_to_unit` maps longitude/latitude inside a bounding box (lon_min, lat_min, lon_max,
lat_max) linearly to x = (lon − lon_min)/(lon_max − lon_min), y = (lat − lat_min)/(lat_max − lat_min);
:func:`pixels_to_unit` maps pixel coordinates of a width × height image to x = px/width, y = py/height.
Both reject points outside the box unless ``drop_outside=True``. The AIS data are the real vessel
positions around New York harbour (2020-06-30, first hour: 8,689 AIS reports of 295 vessels, user = MMSI)
shipped by the ``tracktable-data`` package.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_real
from dpcloak.errors import InvalidParameterError, MissingExtraError
from dpcloak.heatmaps.synthetic import PointSet

__all__ = ["lonlat_to_unit", "pixels_to_unit", "bounding_box", "load_points", "load_ais", "AIS_FILE"]

AIS_FILE = "NYHarbor_2020_06_30_first_hour.csv"

BBox = tuple[float, float, float, float]


def _to_unit(a: NDArray[np.float64], lo: float, hi: float) -> NDArray[np.float64]:
    return (a - lo) / (hi - lo)


def _finish(x: NDArray[np.float64], y: NDArray[np.float64], drop_outside: bool, what: str) -> NDArray[np.bool_]:
    inside = (x >= 0.0) & (x < 1.0) & (y >= 0.0) & (y < 1.0)
    if not drop_outside and not np.all(inside):
        raise InvalidParameterError(
            f"{int(inside.size - np.count_nonzero(inside))} points lie outside the {what}; "
            "enlarge it or pass drop_outside=True"
        )
    return inside


def lonlat_to_unit(
    lon: ArrayLike, lat: ArrayLike, *, bbox: BBox, drop_outside: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Map (lon, lat) in ``bbox = (lon_min, lat_min, lon_max, lat_max)`` (half-open) to [0, 1)².

    Returns x, y of the kept points and the boolean mask of kept input points.
    """
    lo = check_array("lon", lon, ndim=1)
    la = check_array("lat", lat, ndim=1)
    if lo.shape != la.shape:
        raise InvalidParameterError(f"lon and lat must have the same length, got {lo.size} and {la.size}")
    lon0, lat0, lon1, lat1 = (check_real(f"bbox[{i}]", v) for i, v in enumerate(bbox))
    if not (lon0 < lon1 and lat0 < lat1):
        raise InvalidParameterError(f"bbox must be (lon_min, lat_min, lon_max, lat_max) with min < max, got {bbox}")
    x, y = _to_unit(lo, lon0, lon1), _to_unit(la, lat0, lat1)
    keep = _finish(x, y, drop_outside, "bounding box")
    return x[keep], y[keep], keep


def pixels_to_unit(
    px: ArrayLike, py: ArrayLike, *, width: float, height: float, drop_outside: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Map pixel coordinates of a width × height box to [0, 1)² (x = px/width, y = py/height)."""
    w = check_real("width", width, low=0.0)
    h = check_real("height", height, low=0.0)
    x = check_array("px", px, ndim=1) / w
    y = check_array("py", py, ndim=1) / h
    if x.shape != y.shape:
        raise InvalidParameterError(f"px and py must have the same length, got {x.size} and {y.size}")
    keep = _finish(x, y, drop_outside, "pixel box")
    return x[keep], y[keep], keep


def bounding_box(lon: ArrayLike, lat: ArrayLike, *, margin: float = 1e-6) -> BBox:
    """The data's (lon_min, lat_min, lon_max, lat_max), widened by ``margin`` × extent so every point is inside.

    A box derived from the data is itself a function of the data: **never use it for a release** (the
    loaders and the CLI refuse to derive one); it serves experiments and plots of public data.
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


def _numeric_column(frame: Any, name: str) -> Any:
    """Column ``name`` as floats, or a clear error naming the column and a bad value."""
    try:
        return frame[name].to_numpy(dtype=float)
    except (TypeError, ValueError):
        bad = next((v for v in frame[name] if not _is_number(v)), None)
        raise InvalidParameterError(f"column {name!r} must hold numbers; it has {bad!r}") from None


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _lonlat_columns(frame: Any, user: str, lat: str, lon: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    missing = [c for c in (user, lat, lon) if c not in frame.columns]
    if missing:
        raise InvalidParameterError(f"input must have columns {user!r}, {lat!r}, {lon!r}; missing {missing}")
    return _numeric_column(frame, lon), _numeric_column(frame, lat)


def _frame_to_points(frame: Any, user: str, lo: NDArray[np.float64], la: NDArray[np.float64], box: BBox,
                     drop_outside: bool) -> tuple[PointSet, BBox]:
    x, y, keep = lonlat_to_unit(lo, la, bbox=box, drop_outside=drop_outside)
    users = frame[user].to_numpy()[keep]
    return PointSet(users=users, x=x, y=y), box


def load_points(
    path: str | Path,
    *,
    user: str = "user",
    lat: str = "lat",
    lon: str = "lon",
    bbox: BBox | None = None,
    drop_outside: bool = False,
    unit_columns: tuple[str, str] | None = None,
) -> tuple[PointSet, BBox | None]:
    """Read (user, lat, lon[, time, ...]) records from a CSV or Parquet file and map them to [0, 1)².

    Parameters
    ----------
    path : str or Path
        ``.csv`` (or ``.csv.gz``) or ``.parquet`` file.
    user, lat, lon : str
        Column names (other columns such as a time stamp are ignored).
    bbox : (lon_min, lat_min, lon_max, lat_max) or None
        **Public** box mapped to [0, 1)², required with lon/lat columns: a box derived from the data
        is a function of the data and is refused here (a release's extent must be public input).
    drop_outside : bool
        Drop points outside ``bbox`` instead of raising.
    unit_columns : (str, str) or None
        Names of columns already holding x, y in [0, 1) (then ``lat``, ``lon`` and ``bbox`` are unused
        and the returned box is ``None``).

    Returns
    -------
    (PointSet, bbox)
    """
    pd = _pandas()
    p = Path(path)
    if not p.exists():
        raise InvalidParameterError(f"path does not exist: {p}")
    try:
        frame = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except (ValueError, OSError) as exc:  # pandas/pyarrow parse errors derive from ValueError
        kind = "Parquet" if p.suffix == ".parquet" else "CSV"
        raise InvalidParameterError(f"cannot read {p} as {kind}: {exc}") from None
    if unit_columns is None:
        lo, la = _lonlat_columns(frame, user, lat, lon)
        if bbox is None:
            raise InvalidParameterError(
                "bbox (lon_min, lat_min, lon_max, lat_max) is required: the extent of a release must be public "
                "input, fixed without looking at the data (a bounding box taken from the points is not private)"
            )
        return _frame_to_points(frame, user, lo, la, bbox, drop_outside)
    cx, cy = unit_columns
    missing = [c for c in (user, cx, cy) if c not in frame.columns]
    if missing:
        raise InvalidParameterError(f"input must have columns {user!r}, {cx!r}, {cy!r}; missing {missing}")
    x = check_array(cx, _numeric_column(frame, cx), ndim=1)
    y = check_array(cy, _numeric_column(frame, cy), ndim=1)
    keep = _finish(x, y, drop_outside, "unit square [0, 1)²")
    return PointSet(users=frame[user].to_numpy()[keep], x=x[keep], y=y[keep]), None


def load_ais(*, bbox: BBox | None = None, drop_outside: bool = False) -> tuple[PointSet, BBox]:
    """Real AIS vessel reports around New York harbour from ``tracktable-data`` (user = vessel MMSI).

    For experiments: with ``bbox=None`` the data's own bounding box is used (:func:`bounding_box`), which
    is not private; a release needs a public box. Needs the ``data`` extra (``pip install 'dpcloak[data]'``).
    """
    # tracktable_data.data reconfigures logging and sys.tracebacklimit on import: locate the file instead.
    spec = importlib.util.find_spec("tracktable_data")
    if spec is None or spec.origin is None:
        raise MissingExtraError("the AIS data set needs tracktable-data: pip install 'dpcloak[data]'")
    pd = _pandas()
    frame = pd.read_csv(Path(spec.origin).parent / "python_example_data" / AIS_FILE)
    lo, la = _lonlat_columns(frame, "MMSI", "LAT", "LON")
    return _frame_to_points(frame, "MMSI", lo, la, bounding_box(lo, la) if bbox is None else bbox, drop_outside)

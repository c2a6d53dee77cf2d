"""Where the sensors are: positions in metres (projected from lon/lat when needed) and co-located counters.

A :class:`SensorLayout` is public configuration: the sites' positions in a local metric frame,
their names, the lon/lat they came from and the projection used, and which input rows were merged
into one site (two counters at one address, e.g. one per direction, count the same people and are
one site for the model: their readings are summed, :meth:`SensorLayout.combine`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._textfiles import CsvTable, read_csv_table
from dpcloak._validation import check_array, check_choice, check_real
from dpcloak.errors import InvalidFileError, InvalidParameterError
from dpcloak.geo import LocalProjection, check_lonlat, projection_for

__all__ = ["COLOCATED_POLICIES", "SensorLayout", "layout_from_coordinates", "read_sensors_csv"]

#: What to do with sensors closer than ``merge_within`` metres: refuse, or merge into one site.
COLOCATED_POLICIES = ("refuse", "merge")

_LON = ("lon", "longitude", "lng", "long")
_LAT = ("lat", "latitude")
_NAME = ("name", "id", "sensor", "address", "site")


@dataclass(frozen=True)
class SensorLayout:
    """Sensor sites in metres.

    Attributes
    ----------
    positions : ndarray, shape (m, 2)
        ``(x, y)`` metres east and north in the local frame (one row per site).
    names : tuple of str
        One name per site (``"a + b"`` for merged counters).
    groups : tuple of tuple of int
        Input rows of each site (``((0,), (1, 2), …)``); a site of several rows sums their readings.
    lonlat : ndarray, shape (m, 2), or None
        The sites' ``(lon, lat)`` in degrees when they were given so.
    projection : LocalProjection or None
        The projection that produced ``positions`` from ``lonlat``.
    input_names : tuple of str
        The counters' own names, one per input row (``names`` joins those of a merged site);
        empty when unknown.

    Examples
    --------
    >>> layout = layout_from_coordinates([[0.0, 0.0], [0.5, 0.0], [100.0, 0.0]], colocated="merge")
    >>> layout.n_sites, layout.n_inputs, layout.groups
    (2, 3, ((0, 1), (2,)))
    >>> layout.names
    ('sensor 0 + sensor 1', 'sensor 2')
    >>> layout.combine(np.array([[1.0, 2.0, 3.0]])).tolist()  # merged counters are summed
    [[3.0, 3.0]]
    """

    positions: NDArray[np.float64]
    names: tuple[str, ...]
    groups: tuple[tuple[int, ...], ...]
    lonlat: NDArray[np.float64] | None = None
    projection: LocalProjection | None = None
    input_names: tuple[str, ...] = ()

    @property
    def n_sites(self) -> int:
        """Number of sites (rows of the model)."""
        return len(self.positions)

    @property
    def n_inputs(self) -> int:
        """Number of input rows (counters) before merging."""
        return sum(len(g) for g in self.groups)

    def combine(self, readings: ArrayLike) -> NDArray[np.float64]:
        """Per-site readings from per-counter readings: shape ``(…, n_inputs)`` → ``(…, n_sites)``, summed per site.

        NaN (a missing counter) makes its site missing (NaN) too: a partial sum would be a wrong count.
        """
        arr = np.asarray(readings, dtype=float)
        if arr.ndim not in (1, 2) or arr.shape[-1] != self.n_inputs:
            raise InvalidParameterError(
                f"readings must have {self.n_inputs} columns (one per counter), got shape {arr.shape}",
                parameter="readings"
            )
        return np.stack([arr[..., list(g)].sum(axis=-1) for g in self.groups], axis=-1)


def _clusters(pos: NDArray[np.float64], within: float) -> list[list[int]]:
    """Single-linkage groups of points closer than ``within`` (union-find over k-d tree pairs)."""
    from scipy.spatial import cKDTree

    parent = list(range(len(pos)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in cKDTree(pos).query_pairs(r=within):
        parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for k in range(len(pos)):
        groups.setdefault(find(k), []).append(k)
    return sorted(groups.values(), key=lambda g: g[0])


def layout_from_coordinates(
    coordinates: ArrayLike,
    *,
    names: list[str] | tuple[str, ...] | None = None,
    lonlat: bool = False,
    centre: tuple[float, float] | None = None,
    colocated: str = "refuse",
    merge_within: float = 1.0,
) -> SensorLayout:
    """A :class:`SensorLayout` from ``(m, 2)`` coordinates: ``(x, y)`` metres, or ``(lon, lat)`` degrees.

    Parameters
    ----------
    coordinates : array_like, shape (m, 2)
        Metres east/north, or with ``lonlat=True`` longitude and latitude in degrees (WGS84).
    names : sequence of str, optional
        One per row (default ``"sensor 0"``, …).
    lonlat : bool, default False
        Whether the coordinates are lon/lat, projected with :class:`~dpcloak.geo.LocalProjection`.
    centre : (lon, lat), optional
        Projection centre; default the centre of the sensors' bounding box (public: the sensor
        positions are part of the published configuration).
    colocated : {"refuse", "merge"}, default "refuse"
        Sensors closer than ``merge_within`` metres are refused with a message naming them, or
        merged into one site (position = their mean; readings summed by :meth:`SensorLayout.combine`).
    merge_within : float, default 1.0
        The co-location distance in metres (> 0).

    Examples
    --------
    Metres, or longitude/latitude projected around the layout's centre:

    >>> layout = layout_from_coordinates([[0.0, 0.0], [100.0, 0.0]], names=["gate", "hall"])
    >>> layout.names, layout.positions.tolist()
    (('gate', 'hall'), [[0.0, 0.0], [100.0, 0.0]])
    >>> ll = layout_from_coordinates([[174.762, -36.848], [174.772, -36.848]], lonlat=True)
    >>> ll.positions[:, 0].round(1).tolist()  # 0.01° of longitude ≈ 892 m at 36.8° S
    [-445.9, 445.9]
    >>> layout_from_coordinates([[0.0, 0.0], [0.5, 0.0]])
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: ...
    """
    pts = check_array("sensor coordinates", coordinates, shape=(None, 2))
    policy = check_choice("colocated", colocated, COLOCATED_POLICIES)
    within = check_real("merge_within", merge_within, low=0.0)
    labels = [f"sensor {k}" for k in range(len(pts))] if names is None else [str(n) for n in names]
    if len(labels) != len(pts):
        raise InvalidParameterError(f"names must have one entry per sensor ({len(pts)}), got {len(labels)}",
                                    parameter="names")
    twice = next((n for k, n in enumerate(labels) if n in labels[:k]), None)
    if twice is not None:
        raise InvalidParameterError(f"names must be unique: {twice!r} names two sensors", parameter="names",
                                    allowed="unique names", got=twice)
    projection = None
    ll = None
    if lonlat:
        lon, lat = check_lonlat(pts[:, 0], pts[:, 1])
        if centre is None:
            centre = (float((lon.min() + lon.max()) / 2), float((lat.min() + lat.max()) / 2))
        projection = projection_for(*centre)
        x, y = projection.forward(lon, lat)
        ll, pts = np.column_stack([lon, lat]), np.column_stack([x, y])
    elif centre is not None:
        raise InvalidParameterError("centre is the lon/lat projection centre; it needs lonlat=True", parameter="centre")
    groups = _clusters(pts, within) if len(pts) > 1 else [[0]]
    merged = [g for g in groups if len(g) > 1]
    if merged and policy == "refuse":
        g = merged[0]
        dist = float(np.linalg.norm(pts[g[0]] - pts[g[1]]))
        raise InvalidParameterError(
            f"sensors {labels[g[0]]!r} and {labels[g[1]]!r} are {dist:.3g} m apart (closer than merge_within="
            f"{within:g} m): co-located sensors measure the same place; merge them (colocated='merge', readings "
            "summed) or remove one", parameter="sensors"
        )
    positions = np.array([pts[g].mean(axis=0) for g in groups])
    site_ll = None if ll is None else np.array([ll[g].mean(axis=0) for g in groups])
    return SensorLayout(
        positions=positions, names=tuple(" + ".join(labels[k] for k in g) for g in groups),
        groups=tuple(tuple(g) for g in groups), lonlat=site_ll, projection=projection, input_names=tuple(labels),
    )


def _columns(table: CsvTable, role: str, names: tuple[str, ...]) -> int | None:
    """The one column whose name (case-insensitive) is one of ``names``; two such columns are refused."""
    hits = [k for k, h in enumerate(table.header) if h.lower() in names]
    if len(hits) > 1:
        raise InvalidFileError(f"{table.path}:1: columns {table.header[hits[0]]!r} and {table.header[hits[1]]!r} "
                               f"both give the {role} of the sensors; keep one", path=table.path, line=1,
                               field=table.header[hits[1]])
    return hits[0] if hits else None


def read_sensors_csv(path: str | Path, **options: Any) -> SensorLayout:
    """A :class:`SensorLayout` from a CSV with a header: ``lon``/``lat`` (degrees) or ``x``/``y`` (metres).

    Column names are matched case-insensitively (``longitude``/``latitude`` also work); an optional
    ``name`` (or ``id``, ``sensor``, ``address``, ``site``) column names the sensors. ``options`` go
    to :func:`layout_from_coordinates` (``colocated``, ``merge_within``, ``centre``).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "sensors.csv"
    >>> _ = path.write_text("name,lon,lat\\nQueen St,174.7650,-36.8480\\nVictoria St,174.7630,-36.8490\\n")
    >>> layout = read_sensors_csv(path)
    >>> layout.names, layout.lonlat.tolist()
    (('Queen St', 'Victoria St'), [[174.765, -36.848], [174.763, -36.849]])
    >>> bool(np.hypot(*(layout.positions[0] - layout.positions[1])) > 200)  # metres apart
    True
    >>> tmp.cleanup()
    """
    file = Path(path)
    if not file.exists():
        raise InvalidFileError(f"{file}: no such file (the sensors CSV was not found)", path=file)
    table = read_csv_table(file, what="sensors CSV")
    if not table.rows:
        raise InvalidFileError(f"{file} must have a header row and at least one sensor", path=file)
    roles = {"lon": _LON, "lat": _LAT, "x": ("x",), "y": ("y",), "name": _NAME}
    found = {role: _columns(table, role, names) for role, names in roles.items()}
    if found["lon"] is not None and found["lat"] is not None:
        cols, lonlat = (found["lon"], found["lat"]), True
        if found["x"] is not None or found["y"] is not None:
            raise InvalidFileError(f"{file}:{1}: the header names both lon/lat and x/y columns; keep one pair",
                                   path=file, line=1, field="x")
    elif found["x"] is not None and found["y"] is not None:
        cols, lonlat = (found["x"], found["y"]), False
    else:
        raise InvalidFileError(
            f"{file}: the header must name lon and lat columns (degrees) or x and y columns (metres), got "
            f"{list(table.header)}", path=file, line=1, field="lon", allowed="lon,lat or x,y",
            got=list(table.header))
    known = {k for k in found.values() if k is not None}
    extra = [h for k, h in enumerate(table.header) if k not in known]
    if extra:
        raise InvalidFileError(f"{file}:1: unknown column {extra[0]!r} in the sensors CSV (allowed: a name column "
                               f"({', '.join(_NAME)}), lon and lat, or x and y)", path=file, line=1, field=extra[0],
                               allowed="name, lon, lat, x, y", got=extra[0])
    coords: list[tuple[float, float]] = []
    names: list[str] = []
    seen: dict[str, int] = {}
    for lineno, row in table.rows:
        point = []
        for k in cols:
            try:
                point.append(float(row[k]))
            except ValueError:
                raise InvalidFileError(f"{file}:{lineno}: coordinates are not numbers: {table.header[k]} = {row[k]!r}",
                                       path=file, line=lineno, field=table.header[k], got=row[k]) from None
            if not np.isfinite(point[-1]):
                raise InvalidFileError(f"{file}:{lineno}: {table.header[k]} must be a finite number, got {row[k]!r}",
                                       path=file, line=lineno, field=table.header[k], got=row[k])
        coords.append((point[0], point[1]))
        if found["name"] is not None:
            label = row[found["name"]]
            column = table.header[found["name"]]
            if not label:
                raise InvalidFileError(f"{file}:{lineno}: the sensor has no {column}", path=file, line=lineno,
                                       field=column)
            if label in seen:
                raise InvalidFileError(f"{file}:{lineno}: sensor name {label!r} is already used on line {seen[label]}; "
                                       "names must be unique", path=file, line=lineno, field=column, got=label)
            seen[label] = lineno
            names.append(label)
    return layout_from_coordinates(coords, names=names or None, lonlat=lonlat, **options)

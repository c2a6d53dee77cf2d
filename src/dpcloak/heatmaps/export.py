"""Writing a released heatmap for GIS tools: a CSV of cells with their centres, GeoJSON cell polygons,
XYZ / quadkey tiles (:func:`tile_masses`) and H3 hexagons (:func:`h3_masses`; the ``h3`` extra), both
written by :func:`write_masses_csv`, and a cloud-optimised GeoTIFF (:func:`write_geotiff`; the
``geotiff`` extra).

The files hold the DP output (each cell's share of the total) and public geometry only (the extent,
cell centres and corners): nothing computed from the exact data. Cells are indexed ``row`` (south to
north) and ``col`` (west to east) like the aggregate. Coordinates: metres in the extent's plane
(``x_m``, ``y_m``: east and north of the projection centre), plus longitude/latitude for a lon/lat
extent. GeoJSON (RFC 7946) is always WGS84 lon/lat, so it needs a lon/lat extent; each cell is the
polygon through its four projected corners, and cells with zero share are left out (their absence
means 0).
"""

from __future__ import annotations

import csv
import json
import math
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from dpcloak._validation import check_array, check_int
from dpcloak.errors import InvalidParameterError, MissingExtraError
from dpcloak.geo import LocalProjection
from dpcloak.heatmaps.data import check_resolution
from dpcloak.heatmaps.extent import Extent
from dpcloak.heatmaps.pyramid import pyramid_levels

__all__ = ["write_cells_csv", "write_geojson", "TileMasses", "tile_masses", "quadkey", "TILE_UNIT_BITS", "H3Masses",
           "h3_masses", "write_masses_csv", "write_geotiff"]


def _square(aggregate: ArrayLike) -> Any:
    arr = check_array("aggregate", aggregate, ndim=2, nonnegative=True)
    if arr.shape[0] != arr.shape[1]:
        raise InvalidParameterError(f"aggregate must be a square Δ × Δ array, got shape {arr.shape}",
                                    parameter="aggregate")
    return arr


def write_cells_csv(path: str | Path, aggregate: ArrayLike, *, extent: Extent | None) -> None:
    """One row per cell: row, col, centre (x_m, y_m[, lon, lat]) or (x, y) in [0, 1)², and its share.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> share = np.array([[0.75, 0.0], [0.0, 0.25]])
    >>> path = Path(tmp.name) / "cells.csv"
    >>> write_cells_csv(path, share, extent=Extent.metres_box(0.0, 0.0, 1000.0, 1000.0))
    >>> print(path.read_text().strip())
    row,col,x_m,y_m,share
    0,0,250,250,0.75
    0,1,750,250,0
    1,0,250,750,0
    1,1,750,750,0.25
    >>> tmp.cleanup()
    """
    arr = _square(aggregate)
    delta = arr.shape[0]
    rows, cols = np.divmod(np.arange(delta * delta), delta)
    if extent is None:
        c = (np.arange(delta) + 0.5) / delta
        header, coords = ["x", "y"], [c[cols], c[rows]]
    else:
        xx, yy = extent.cell_centres(delta)
        header, coords = ["x_m", "y_m"], [xx.ravel(), yy.ravel()]
        if extent.projection is not None:
            lon, lat = extent.to_lonlat(xx.ravel(), yy.ravel())
            header, coords = [*header, "lon", "lat"], [*coords, lon, lat]
    with Path(path).open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["row", "col", *header, "share"])
        for k in range(delta * delta):
            out.writerow([int(rows[k]), int(cols[k]), *(f"{v[k]:.10g}" for v in coords), f"{arr.flat[k]:.10g}"])


def write_geojson(path: str | Path, aggregate: ArrayLike, *, extent: Extent, properties: dict[str, Any]) -> None:
    """A FeatureCollection of the cells with a positive share, as WGS84 lon/lat polygons.

    ``properties`` (public parameters of the release, e.g. ``HeatmapResult.public_summary()``) are
    stored on the collection.

    Examples
    --------
    Only cells with a positive share become polygons:

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> share = np.array([[0.75, 0.0], [0.0, 0.25]])
    >>> path = Path(tmp.name) / "cells.geojson"
    >>> write_geojson(path, share, extent=Extent.around(lon=174.762, lat=-36.848, size=2000.0),
    ...               properties={"epsilon": 1.0})
    >>> collection = json.loads(path.read_text())
    >>> collection["type"], collection["properties"], len(collection["features"])
    ('FeatureCollection', {'epsilon': 1.0}, 2)
    >>> collection["features"][0]["properties"], collection["features"][0]["geometry"]["type"]
    ({'row': 0, 'col': 0, 'share': 0.75}, 'Polygon')
    >>> tmp.cleanup()
    """
    arr = _square(aggregate)
    if extent.projection is None:
        raise InvalidParameterError(
            "GeoJSON is WGS84 longitude/latitude: it needs a lon/lat extent (Extent.lonlat_box or Extent.around), "
            "not a metres box",
            parameter="extent", allowed="a lon/lat extent"
        )
    delta = arr.shape[0]
    step = extent.cell_size(delta)
    rows, cols = np.nonzero(arr > 0.0)
    corners = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], dtype=float)
    x = extent.x_min + (cols[:, None] + corners[None, :, 0]) * step
    y = extent.y_min + (rows[:, None] + corners[None, :, 1]) * step
    lon, lat = extent.to_lonlat(x.ravel(), y.ravel())
    lon, lat = lon.reshape(x.shape), lat.reshape(y.shape)
    features = [
        {"type": "Feature",
         "geometry": {"type": "Polygon", "coordinates": [[[round(float(a), 8), round(float(b), 8)]
                                                          for a, b in zip(lon[k], lat[k], strict=True)]]},
         "properties": {"row": int(rows[k]), "col": int(cols[k]), "share": float(arr[rows[k], cols[k]])}}
        for k in range(rows.size)
    ]
    doc = {"type": "FeatureCollection", "properties": properties, "features": features}
    Path(path).write_text(json.dumps(doc))


TILE_UNIT_BITS = 40
"""Tile masses are whole multiples of 2^-40 of the total, so every sum over tiles is exact."""

_MAX_ZOOM = 30
_MAX_MERCATOR_LAT = math.degrees(math.atan(math.sinh(math.pi)))  # 85.0511…°: the square Web Mercator world
_EARTH_CIRCUMFERENCE = 2 * math.pi * 6378137.0


@dataclass(frozen=True)
class TileMasses:
    """The released map's mass on XYZ (Web Mercator, "slippy map") tiles at zooms ``min_zoom..max_zoom``.

    ``units[z][(x, y)]`` is an integer number of 2^-:data:`TILE_UNIT_BITS` of the total (tiles with none
    are absent). Each cell's mass goes to the tile holding its centre at ``max_zoom``; a tile at a
    coarser zoom holds the **exact** integer sum of its four children, so the levels agree to the last
    unit. Post-processing of the DP output and public geometry only.

    Examples
    --------
    Returned by :func:`tile_masses`:

    >>> ext = Extent.around(lon=-0.1276, lat=51.5072, size=4000.0)
    >>> tiles = tile_masses(np.array([[0.5, 0.0], [0.0, 0.5]]), extent=ext, max_zoom=12, min_zoom=10)
    >>> isinstance(tiles, TileMasses), tiles.zooms
    (True, (10, 11, 12))
    >>> sum(tiles.units[10].values()) == sum(tiles.units[12].values())
    True
    """

    units: dict[int, dict[tuple[int, int], int]]
    min_zoom: int
    max_zoom: int
    columns: ClassVar[tuple[str, ...]] = ("z", "x", "y", "quadkey", "units", "share")

    @property
    def zooms(self) -> tuple[int, ...]:
        """The zoom levels held, coarsest first."""
        return tuple(range(self.min_zoom, self.max_zoom + 1))

    def rows(self) -> Iterator[tuple[int, int, int, str, int, float]]:
        """(z, x, y, quadkey, units, share) per non-empty tile, coarsest zoom first, then by x and y."""
        scale = 2.0**-TILE_UNIT_BITS
        for z in self.zooms:
            for (x, y), u in sorted(self.units[z].items()):
                yield z, x, y, quadkey(z, x, y), u, u * scale


def quadkey(z: int, x: int, y: int) -> str:
    """Bing Maps quadkey of tile (z, x, y): one digit per zoom, (x bit) + 2·(y bit), most significant first.

    Examples
    --------
    >>> quadkey(3, 3, 5), quadkey(1, 1, 0), quadkey(0, 0, 0)
    ('213', '1', '')
    """
    zoom = check_int("z", z, minimum=0, maximum=_MAX_ZOOM)
    return "".join(str(((x >> b) & 1) + 2 * ((y >> b) & 1)) for b in range(zoom - 1, -1, -1))


def _tile_xy(lon: Any, lat: Any, zoom: int) -> tuple[Any, Any]:
    """Slippy-map tile indices at ``zoom`` (spherical Web Mercator, EPSG:3857; y grows southwards)."""
    n = 1 << zoom
    phi = np.radians(np.clip(lat, -_MAX_MERCATOR_LAT, _MAX_MERCATOR_LAT))
    x = np.floor((np.asarray(lon) + 180.0) / 360.0 * n)
    y = np.floor((1.0 - np.arcsinh(np.tan(phi)) / math.pi) / 2.0 * n)
    return np.clip(x, 0, n - 1).astype(np.int64), np.clip(y, 0, n - 1).astype(np.int64)


def _check_lonlat_extent(extent: Any) -> LocalProjection:
    if not isinstance(extent, Extent) or extent.projection is None:
        raise InvalidParameterError("tiles need a lon/lat or CRS extent (Extent.lonlat_box, around or crs_box)",
                                    parameter="extent", allowed="an Extent with a projection")
    return extent.projection


def _units(arr: Any) -> Any:
    """Each cell's share rounded to whole units of 2^-:data:`TILE_UNIT_BITS` (int64, so sums are exact)."""
    return np.rint(arr * float(1 << TILE_UNIT_BITS)).astype(np.int64)


def _positive_units(arr: Any, extent: Extent) -> tuple[Any, Any, Any]:
    """Each cell's share in whole units of 2^-40 and its centre's (lon, lat), for the cells with a positive share."""
    units = _units(arr).ravel()
    lon, lat = extent.to_lonlat(*(c.ravel() for c in extent.cell_centres(arr.shape[0])))
    keep = units > 0
    return units[keep], lon[keep], lat[keep]


def tile_masses(aggregate: ArrayLike, *, extent: Extent, max_zoom: int | None = None, min_zoom: int = 0) -> TileMasses:
    """The map's shares on XYZ tiles, exact across zoom levels (:class:`TileMasses`).

    Parameters
    ----------
    aggregate : array_like, shape (Δ, Δ)
        The released shares (non-negative; rows south to north).
    extent : Extent
        A lon/lat or CRS extent (the tiles are in WGS84 Web Mercator).
    max_zoom : int or None
        Finest zoom (≤ 30). ``None``: the finest whose tiles are at least one cell wide at the
        extent's centre (a tile's ground side there is 40,075 km · cos φ / 2^z).
    min_zoom : int
        Coarsest zoom (0 ≤ ``min_zoom`` ≤ ``max_zoom``).

    Examples
    --------
    A 4 km square in London at Δ = 2 (2 km cells): the finest zoom with tiles ≥ 2 km there is 13:

    >>> ext = Extent.around(lon=-0.1276, lat=51.5072, size=4000.0)
    >>> tiles = tile_masses(np.array([[0.25, 0.25], [0.25, 0.25]]), extent=ext, min_zoom=11)
    >>> tiles.max_zoom, sum(tiles.units[13].values()) == 2**40
    (13, True)
    >>> next(tiles.rows())[:4]  # z, x, y, quadkey of the coarsest tile
    (11, 1023, 680, '03131313111')
    """
    arr = _square(aggregate)
    projection = _check_lonlat_extent(extent)
    delta = arr.shape[0]
    if max_zoom is None:
        lat0 = math.radians(projection.lat0)
        ground = _EARTH_CIRCUMFERENCE * math.cos(lat0) / extent.cell_size(delta)
        max_zoom = min(_MAX_ZOOM, max(0, math.floor(math.log2(ground))))
    top = check_int("max_zoom", max_zoom, minimum=0, maximum=_MAX_ZOOM)
    low = check_int("min_zoom", min_zoom, minimum=0, maximum=top)
    u, lon, lat = _positive_units(arr, extent)
    x, y = _tile_xy(lon, lat, top)
    levels: dict[int, dict[tuple[int, int], int]] = {}
    for z in range(top, low - 1, -1):
        key = (x << _MAX_ZOOM) | y
        uniq, inverse = np.unique(key, return_inverse=True)
        totals = np.zeros(uniq.size, dtype=np.int64)
        np.add.at(totals, inverse, u)  # int64: exact
        x, y, u = uniq >> _MAX_ZOOM, uniq & ((1 << _MAX_ZOOM) - 1), totals
        levels[z] = {(int(a), int(b)): int(c) for a, b, c in zip(x, y, u, strict=True)}
        x, y = x >> 1, y >> 1
    return TileMasses(units=levels, min_zoom=low, max_zoom=top)


@dataclass(frozen=True)
class H3Masses:
    """The released map's mass on H3 hexagons at resolutions ``min_resolution..max_resolution``.

    ``units[r][cell]`` is an integer number of 2^-:data:`TILE_UNIT_BITS` of the total (cells with none
    are absent). Each grid cell's mass goes to the H3 cell holding its centre at ``max_resolution``; at
    every coarser resolution an H3 cell holds the **exact** integer sum of its children in the H3
    hierarchy (``h3.cell_to_parent``). Post-processing of the DP output and public geometry only.

    Examples
    --------
    Returned by :func:`h3_masses`:

    >>> ext = Extent.around(lon=-0.1276, lat=51.5072, size=4000.0)
    >>> cells = h3_masses(np.array([[0.5, 0.0], [0.0, 0.5]]), extent=ext, max_resolution=8, min_resolution=6)
    >>> isinstance(cells, H3Masses), sum(cells.units[6].values()) == sum(cells.units[8].values()) == 2**40
    (True, True)
    """

    units: dict[int, dict[str, int]]
    min_resolution: int
    max_resolution: int
    columns: ClassVar[tuple[str, ...]] = ("resolution", "h3", "units", "share")

    def rows(self) -> Iterator[tuple[int, str, int, float]]:
        """(resolution, h3 index, units, share) per non-empty cell, coarsest resolution first, then by index."""
        scale = 2.0**-TILE_UNIT_BITS
        for r in range(self.min_resolution, self.max_resolution + 1):
            for cell, u in sorted(self.units[r].items()):
                yield r, cell, u, u * scale


def _h3() -> Any:
    try:
        import h3
    except ImportError:
        raise MissingExtraError('H3 output needs the h3 package: pip install "dpcloak[h3]"') from None
    return h3


def h3_masses(aggregate: ArrayLike, *, extent: Extent, max_resolution: int | None = None,
              min_resolution: int = 0) -> H3Masses:
    """The map's shares on H3 hexagons, exact across resolutions (:class:`H3Masses`; the ``h3`` extra).

    Parameters
    ----------
    aggregate : array_like, shape (Δ, Δ)
        The released shares (non-negative; rows south to north).
    extent : Extent
        A lon/lat or CRS extent.
    max_resolution : int or None
        Finest H3 resolution (≤ 15). ``None``: the finest whose average hexagon is at least one grid
        cell in area (``h3.average_hexagon_area``).
    min_resolution : int
        Coarsest resolution (0 ≤ ``min_resolution`` ≤ ``max_resolution``).

    Examples
    --------
    A 4 km square at Δ = 2 (4 km² cells): H3 resolution 7 (5.2 km² on average) is the finest that large:

    >>> ext = Extent.around(lon=-0.1276, lat=51.5072, size=4000.0)
    >>> cells = h3_masses(np.full((2, 2), 0.25), extent=ext, min_resolution=5)
    >>> cells.max_resolution, sorted(cells.units)
    (7, [5, 6, 7])
    """
    h3 = _h3()
    arr = _square(aggregate)
    _check_lonlat_extent(extent)
    if max_resolution is None:
        area = extent.cell_size(arr.shape[0]) ** 2
        max_resolution = max([0, *(r for r in range(16) if h3.average_hexagon_area(r, unit="m^2") >= area)])
    top = check_int("max_resolution", max_resolution, minimum=0, maximum=15)
    low = check_int("min_resolution", min_resolution, minimum=0, maximum=top)
    u, lon, lat = _positive_units(arr, extent)
    level: dict[str, int] = {}
    for a, b, c in zip(lat.tolist(), lon.tolist(), u.tolist(), strict=True):
        cell = h3.latlng_to_cell(a, b, top)
        level[cell] = level.get(cell, 0) + c
    levels = {top: level}
    for r in range(top - 1, low - 1, -1):
        parent: dict[str, int] = {}
        for cell, c in levels[r + 1].items():
            key = h3.cell_to_parent(cell, r)
            parent[key] = parent.get(key, 0) + c
        levels[r] = parent
    return H3Masses(units=levels, min_resolution=low, max_resolution=top)


def write_masses_csv(path: str | Path, masses: TileMasses | H3Masses) -> None:
    """One row per non-empty tile or H3 cell (``masses.columns``), coarsest level first; ``units`` (of 2^-40)
    are exact, ``share`` is ``units`` · 2^-40 written to the last bit.

    Tiles give ``z, x, y, quadkey, units, share``; H3 cells ``resolution, h3, units, share``.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> ext = Extent.around(lon=-0.1276, lat=51.5072, size=4000.0)
    >>> share = np.array([[1.0, 0.0], [0.0, 0.0]])
    >>> write_masses_csv(Path(tmp.name) / "tiles.csv", tile_masses(share, extent=ext, max_zoom=12, min_zoom=12))
    >>> print((Path(tmp.name) / "tiles.csv").read_text().strip())
    z,x,y,quadkey,units,share
    12,2046,1362,031313131130,1099511627776,1.0
    >>> write_masses_csv(Path(tmp.name) / "h3.csv", h3_masses(share, extent=ext, max_resolution=7, min_resolution=7))
    >>> print((Path(tmp.name) / "h3.csv").read_text().strip())
    resolution,h3,units,share
    7,87194ad16ffffff,1099511627776,1.0
    >>> tmp.cleanup()
    """
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(masses.columns)
        for *keys, u, share in masses.rows():
            out.writerow([*keys, u, repr(share)])


def _rasterio() -> Any:
    try:
        import rasterio
        import rasterio.shutil
    except ImportError:
        raise MissingExtraError('GeoTIFF output needs rasterio: pip install "dpcloak[geotiff]"') from None
    return rasterio


def write_geotiff(path: str | Path, aggregate: ArrayLike, *, extent: Extent, properties: dict[str, Any],
                  blocksize: int = 256) -> None:
    """A cloud-optimised GeoTIFF of the shares, with overviews that are the exact sums of their children.

    One float64 band, north row first, holding each cell's share rounded to a whole multiple of
    2^-:data:`TILE_UNIT_BITS` (as the tiles). The overviews halve the grid down to 1 × 1 pixel; each of
    their pixels is the **exact** sum of its four children, computed here in int64 units
    (:func:`~dpcloak.heatmaps.pyramid.pyramid_levels`) and written as they are (GDAL resamples
    nothing). The layout is GDAL's COG (tiles of ``blocksize`` pixels, overviews before the
    full-resolution data, DEFLATE).

    Georeferencing: cells are ``extent.cell_size(Δ)`` metres square from the extent's north-west
    corner, in the extent's plane: for a lon/lat or CRS extent its transverse Mercator on WGS84
    (:attr:`dpcloak.geo.LocalProjection.proj_string`), so any GIS can reproject the file; for a
    :meth:`Extent.metres_box` the metres have no CRS and none is written. ``properties`` (public
    parameters of the release, e.g. ``HeatmapResult.public_summary()``) are stored as JSON in the
    file's ``DPCLOAK_RELEASE`` metadata item. Post-processing of the DP output and public geometry only.

    Parameters
    ----------
    path : str or Path
        The ``.tif`` file to write.
    aggregate : array_like, shape (Δ, Δ)
        The released shares (non-negative; rows south to north; Δ a power of two).
    extent : Extent
        The release's public extent.
    properties : dict
        JSON-ready public parameters of the release.
    blocksize : int
        Side of the TIFF's square tiles in pixels: a multiple of 16 in [128, 4096] (GDAL's COG range).

    Examples
    --------
    >>> import tempfile, rasterio
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "map.tif"
    >>> share = np.array([[0.5, 0.25, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0.125], [0, 0, 0.125, 0]])
    >>> write_geotiff(path, share, extent=Extent.around(lon=-0.1276, lat=51.5072, size=4000.0),
    ...               properties={"epsilon": 1.0})
    >>> with rasterio.open(path) as tif:
    ...     tif.read(1)[-1].tolist(), tif.overviews(1), tif.transform.a, tif.crs.to_dict()["proj"]
    ([0.5, 0.25, 0.0, 0.0], [2, 4], 1000.0, 'tmerc')
    >>> with rasterio.open(path, overview_level=0) as level:  # 2 × 2: the exact sums of the 2 × 2 blocks
    ...     level.read(1).tolist()
    [[0.0, 0.25], [0.75, 0.0]]
    >>> tmp.cleanup()
    """
    rasterio = _rasterio()
    from rasterio.enums import Resampling
    from rasterio.errors import NotGeoreferencedWarning
    from rasterio.transform import Affine

    arr = _square(aggregate)
    if not isinstance(extent, Extent):
        raise InvalidParameterError(f"extent must be an Extent, got {type(extent).__name__}", parameter="extent",
                                    allowed="an Extent")
    block = check_int("blocksize", blocksize, minimum=128, maximum=4096)
    if block % 16:
        raise InvalidParameterError(f"blocksize must be a multiple of 16 (TIFF tiles), got {block}",
                                    parameter="blocksize", allowed="a multiple of 16 in [128, 4096]", got=block)
    delta = arr.shape[0]
    check_resolution(delta)
    levels = pyramid_levels(_units(arr)[::-1])[::-1]  # finest first; GeoTIFF rows run north to south
    scale = 2.0**-TILE_UNIT_BITS
    step = extent.cell_size(delta)
    profile = {"driver": "GTiff", "width": delta, "height": delta, "count": 1, "dtype": "float64",
               "crs": None if extent.projection is None else extent.projection.proj_string,
               "transform": Affine(step, 0.0, extent.x_min, 0.0, -step, extent.y_min + extent.size),
               "tiled": True, "blockxsize": block, "blockysize": block}
    staging = f"/vsimem/dpcloak-{uuid.uuid4().hex}.tif"
    try:
        with rasterio.open(staging, "w", **profile) as tif:
            tif.write(levels[0] * scale, 1)
            tif.set_band_description(1, f"share of the total (multiples of 2^-{TILE_UNIT_BITS})")
            tif.update_tags(DPCLOAK_RELEASE=json.dumps(properties))
            if len(levels) > 1:  # allocates the overviews; their pixels are overwritten with the exact sums below
                tif.build_overviews([2**k for k in range(1, len(levels))], Resampling.nearest)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotGeoreferencedWarning)  # an overview's directory has no transform
            for k, level in enumerate(levels[1:], start=2):
                with rasterio.open(f"GTIFF_DIR:{k}:{staging}", "r+") as overview:
                    overview.write(level * scale, 1)
        rasterio.shutil.copy(staging, str(path), driver="COG", OVERVIEWS="FORCE_USE_EXISTING", BLOCKSIZE=block,
                             COMPRESS="DEFLATE")
    finally:
        rasterio.shutil.delete(staging)

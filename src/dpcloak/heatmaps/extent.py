"""The public extent of a heatmap: which square of the world the Δ × Δ grid covers, in metres.

A release's extent must be **public input**, fixed without looking at the data: a box derived from
the points (their minimum and maximum) is a function of the data and can single a user out. An
:class:`Extent` is therefore only built from numbers the caller gives:

* :meth:`Extent.lonlat_box` — a longitude/latitude box; points are lon/lat degrees, projected to
  metres with :class:`dpcloak.geo.LocalProjection` (transverse Mercator on WGS84) centred on the box
  centre;
* :meth:`Extent.around` — a centre (lon, lat) and a side in metres (same projection, centred there);
* :meth:`Extent.metres_box` — a box in metres of any planar coordinate system; points are metres.
* :meth:`Extent.crs_box` — a box in any coordinate reference system PROJ knows (``"EPSG:3857"``, Web
  Mercator, what most GIS exports give; a UTM zone; ``"EPSG:4326"``); points are in that CRS. Points
  and box are converted to lon/lat by ``pyproj`` (the ``geo`` extra) and then projected like a lon/lat
  box, so cells are true metres on the ground (Web Mercator's "metres" are 1/cos φ too long: 1.6× at
  51° N), and GeoJSON output works.

The grid is square (the pyramid halves it at every level), so a box that is not square is padded to
the smallest square with the same centre that contains it. For a lon/lat box the square contains the
projected box (its edges are curves in the projection: each is sampled at 257 points and the square
widened by 10⁻⁶ of its side). Cells are then squares of side ``size / Δ`` metres, and an EMD computed
on the unit square multiplies by ``size`` to give metres (ℓ1 ground metric).

Points are mapped to the unit square of :mod:`dpcloak.heatmaps.data` by
x = (X − x_min)/size, y = (Y − y_min)/size; points outside the square are refused unless
``drop_outside=True`` (the number dropped is a curator-side diagnostic, not part of the release).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_real
from dpcloak.errors import InvalidParameterError, MissingExtraError

if TYPE_CHECKING:
    from dpcloak.geo import LocalProjection

__all__ = ["Extent"]

_EDGE_SAMPLES = 257
_MARGIN = 1e-6


def _check_box(names: tuple[str, str, str, str], box: tuple[float, float, float, float]) -> tuple[float, ...]:
    vals = tuple(check_real(n, v) for n, v in zip(names, box, strict=True))
    if not (vals[0] < vals[2] and vals[1] < vals[3]):
        raise InvalidParameterError(
            f"the box must have {names[0]} < {names[2]} and {names[1]} < {names[3]}, got {box}",
            parameter="box", got=box
        )
    return vals


def _projection(lon: float, lat: float) -> LocalProjection:
    from dpcloak.geo import LocalProjection

    return LocalProjection(lon0=lon, lat0=lat)


@functools.lru_cache(maxsize=16)
def _crs_to_lonlat(crs: str) -> tuple[str, Any]:
    """(the CRS's canonical name, a pyproj Transformer from it to WGS84 lon/lat in x, y order)."""
    try:
        from pyproj import CRS, Transformer
        from pyproj.exceptions import CRSError
    except ImportError:
        raise MissingExtraError('an Extent in a CRS needs pyproj: pip install "dpcloak[geo]"') from None
    try:
        source = CRS.from_user_input(crs)
    except CRSError:
        raise InvalidParameterError(
            f"crs must be a coordinate reference system PROJ knows (e.g. 'EPSG:3857'), got {crs!r}",
            parameter="crs", allowed="an EPSG code or PROJ string", got=crs) from None
    authority = source.to_authority()
    name = f"{authority[0]}:{authority[1]}" if authority else source.to_string()
    return name, Transformer.from_crs(source, "EPSG:4326", always_xy=True)


def _edges(x0: float, y0: float, x1: float, y1: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The four edges of a box, each sampled at :data:`_EDGE_SAMPLES` points."""
    t = np.linspace(0.0, 1.0, _EDGE_SAMPLES)
    xs = np.concatenate([x0 + (x1 - x0) * t, x0 + (x1 - x0) * t, np.full_like(t, x0), np.full_like(t, x1)])
    ys = np.concatenate([np.full_like(t, y0), np.full_like(t, y1), y0 + (y1 - y0) * t, y0 + (y1 - y0) * t])
    return xs, ys


@dataclass(frozen=True)
class Extent:
    """A public square [x_min, x_min + size) × [y_min, y_min + size) in metres, mapped to the grid.

    Build it with :meth:`lonlat_box`, :meth:`around` or :meth:`metres_box` (module docstring).

    Attributes
    ----------
    x_min, y_min : float
        South-west corner in metres (in the projection's plane when ``projection`` is set).
    size : float
        Side of the square in metres.
    projection : LocalProjection or None
        Lon/lat → metres for point input and for lon/lat output; ``None``: points are metres.
    source : str
        How the extent was specified (for the release's public summary).
    crs : str or None
        The CRS of the points (:meth:`crs_box`), converted to lon/lat and then by ``projection``.

    Examples
    --------
    A 1 km square in metres, and a 2 km square around a public landmark in longitude/latitude:

    >>> box = Extent.metres_box(0.0, 0.0, 1000.0, 1000.0)
    >>> box.cell_size(4), box.lonlat  # metres per cell at Δ = 4
    (250.0, False)
    >>> x, y, inside = box.to_unit([100.0, 900.0], [100.0, 500.0])
    >>> x.tolist(), y.tolist(), inside.tolist()
    ([0.1, 0.9], [0.1, 0.5], [True, True])
    >>> city = Extent.around(lon=174.762, lat=-36.848, size=2000.0)
    >>> city.lonlat, city.x_min, city.size
    (True, -1000.0, 2000.0)
    >>> x, y, _ = city.to_unit([174.762], [-36.848])  # the centre maps to the middle of the grid
    >>> x.tolist(), y.tolist()
    ([0.5], [0.5])

    A public lon/lat box becomes the smallest enclosing square in metres; the round trip is exact:

    >>> box = Extent.lonlat_box(174.75, -36.86, 174.78, -36.84)
    >>> round(box.size), box.summary()["size_m"] == box.size  # 0.03° of longitude ≈ 2676 m here
    (2676, True)
    >>> x, y = box.to_metres([174.762], [-36.848])
    >>> lon, lat = box.to_lonlat(x, y)
    >>> lon.round(9).tolist(), lat.round(9).tolist()
    ([174.762], [-36.848])
    >>> [a.shape for a in box.cell_centres(2)]
    [(2, 2), (2, 2)]
    """

    x_min: float
    y_min: float
    size: float
    projection: LocalProjection | None
    source: str
    crs: str | None = None

    @classmethod
    def metres_box(cls, x_min: float, y_min: float, x_max: float, y_max: float) -> Extent:
        """The smallest square containing the box (metres), with the same centre; points are metres."""
        x0, y0, x1, y1 = _check_box(("x_min", "y_min", "x_max", "y_max"), (x_min, y_min, x_max, y_max))
        return cls._square(x0, y0, x1, y1, None, f"metres box ({x0:g}, {y0:g}, {x1:g}, {y1:g})")

    @classmethod
    def lonlat_box(cls, lon_min: float, lat_min: float, lon_max: float, lat_max: float) -> Extent:
        """The smallest square (metres, transverse Mercator at the box centre) containing a lon/lat box."""
        from dpcloak.geo import check_lonlat

        lo0, la0, lo1, la1 = _check_box(("lon_min", "lat_min", "lon_max", "lat_max"),
                                        (lon_min, lat_min, lon_max, lat_max))
        check_lonlat(np.array([lo0, lo1]), np.array([la0, la1]))
        proj = _projection(0.5 * (lo0 + lo1), 0.5 * (la0 + la1))
        x, y = proj.forward(*_edges(lo0, la0, lo1, la1))
        return cls._square(float(x.min()), float(y.min()), float(x.max()), float(y.max()), proj,
                           f"lon/lat box ({lo0:g}, {la0:g}, {lo1:g}, {la1:g})", margin=_MARGIN)

    @classmethod
    def crs_box(cls, x_min: float, y_min: float, x_max: float, y_max: float, *, crs: str) -> Extent:
        """The smallest square (true metres) containing a box given in ``crs``; points are in ``crs``.

        ``crs`` is anything :class:`pyproj.CRS` accepts (``"EPSG:3857"``, ``"EPSG:32630"``, a PROJ
        string). The box's edges and every point are converted to WGS84 lon/lat by PROJ and projected
        with the transverse Mercator centred on the box centre, as in :meth:`lonlat_box`.

        Examples
        --------
        A 1,000 × 1,000 Web Mercator box at 60° N is about 501 m on the ground (its scale is ≈ 1/cos φ):

        >>> box = Extent.crs_box(0.0, 8399737.9, 1000.0, 8400737.9, crs="EPSG:3857")
        >>> round(box.size), box.crs, box.lonlat
        (501, 'EPSG:3857', False)
        >>> x, y, _ = box.to_unit([500.0], [8400237.9])  # the box centre: near the middle (Mercator is not linear)
        >>> round(float(x[0]), 4), round(float(y[0]), 4)
        (0.5, 0.5)
        """
        x0, y0, x1, y1 = _check_box(("x_min", "y_min", "x_max", "y_max"), (x_min, y_min, x_max, y_max))
        name, transformer = _crs_to_lonlat(_check_crs(crs))
        lon, lat = cls._crs_lonlat(transformer, *_edges(x0, y0, x1, y1))
        clon, clat = cls._crs_lonlat(transformer, np.array([0.5 * (x0 + x1)]), np.array([0.5 * (y0 + y1)]))
        proj = _projection(float(clon[0]), float(clat[0]))
        x, y = proj.forward(lon, lat)
        square = cls._square(float(x.min()), float(y.min()), float(x.max()), float(y.max()), proj,
                             f"{name} box ({x0:g}, {y0:g}, {x1:g}, {y1:g})", margin=_MARGIN)
        return cls(x_min=square.x_min, y_min=square.y_min, size=square.size, projection=proj, source=square.source,
                   crs=name)

    @staticmethod
    def _crs_lonlat(transformer: Any, a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        from dpcloak.geo import check_lonlat

        xa, ya = check_array("x", a, ndim=1), check_array("y", b, ndim=1)
        if xa.shape != ya.shape:
            raise InvalidParameterError(f"x and y must have the same length, got {xa.size} and {ya.size}",
                                        parameter="x")
        lon, lat = transformer.transform(xa, ya)
        return check_lonlat(np.asarray(lon, dtype=float), np.asarray(lat, dtype=float))

    @classmethod
    def around(cls, *, lon: float, lat: float, size: float) -> Extent:
        """A square of side ``size`` metres centred on the public point (lon, lat)."""
        side = check_real("size", size, low=0.0)
        proj = _projection(check_real("lon", lon), check_real("lat", lat))
        half = 0.5 * side
        return cls(x_min=-half, y_min=-half, size=side, projection=proj,
                   source=f"{side:g} m square around lon {proj.lon0:g}, lat {proj.lat0:g}")

    @classmethod
    def _square(cls, x0: float, y0: float, x1: float, y1: float, proj: LocalProjection | None, source: str,
                margin: float = 0.0) -> Extent:
        side = max(x1 - x0, y1 - y0) * (1.0 + 2.0 * margin)
        if not math.isfinite(side):
            raise InvalidParameterError(f"the extent's side must be a finite number of metres, got {side:g} for the "
                                        f"{source}", parameter="extent", allowed="a finite side", got=side)
        cx, cy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
        return cls(x_min=cx - 0.5 * side, y_min=cy - 0.5 * side, size=side, projection=proj, source=source)

    @property
    def lonlat(self) -> bool:
        """True when points come as (lon, lat) degrees."""
        return self.projection is not None and self.crs is None

    def to_metres(self, a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Points in metres: (lon, lat) or ``crs`` coordinates projected, or (x, y) metres checked and returned."""
        if self.crs is not None and self.projection is not None:
            return self.projection.forward(*self._crs_lonlat(_crs_to_lonlat(self.crs)[1], a, b))
        if self.projection is not None:
            return self.projection.forward(a, b)
        xa, ya = check_array("x", a, ndim=1), check_array("y", b, ndim=1)
        if xa.shape != ya.shape:
            raise InvalidParameterError(f"x and y must have the same length, got {xa.size} and {ya.size}",
                                        parameter="x")
        return xa, ya

    def to_unit(self, a: ArrayLike, b: ArrayLike, *, drop_outside: bool = False
                ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
        """Map points to [0, 1)²; returns x, y of the kept points and the mask of kept input points.

        Raises :class:`InvalidParameterError` for invalid lon/lat (outside [-180, 180] × [-90, 90], NaN)
        and, unless ``drop_outside``, for points outside the square.
        """
        xm, ym = self.to_metres(a, b)
        x = (np.ravel(xm) - self.x_min) / self.size
        y = (np.ravel(ym) - self.y_min) / self.size
        inside = (x >= 0.0) & (x < 1.0) & (y >= 0.0) & (y < 1.0)
        if not drop_outside and not np.all(inside):
            outside = int(inside.size - np.count_nonzero(inside))
            raise InvalidParameterError(f"{outside} of {inside.size} points lie outside the extent ({self.source}); "
                                        "enlarge it or pass drop_outside=True", parameter="drop_outside",
                                        allowed="True to drop the points outside", got=outside)
        return x[inside], y[inside], inside

    def cell_size(self, resolution: int) -> float:
        """Side of one cell in metres: size / Δ."""
        return self.size / resolution

    def cell_centres(self, resolution: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Metres (X, Y) of the cell centres, each (Δ, Δ) indexed [row, col] like the aggregate."""
        c = (np.arange(resolution) + 0.5) * self.cell_size(resolution)
        xx, yy = np.meshgrid(self.x_min + c, self.y_min + c)
        return xx, yy

    def to_lonlat(self, x: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(lon, lat) of points in metres; needs a lon/lat extent."""
        if self.projection is None:
            raise InvalidParameterError(
                "this extent is a metres box without a projection: lon/lat output needs Extent.lonlat_box or "
                "Extent.around",
                parameter="extent", allowed="a lon/lat extent"
            )
        return self.projection.inverse(x, y)

    def summary(self) -> dict[str, Any]:
        """Public description for a release's summary (JSON-ready)."""
        out: dict[str, Any] = {"extent": self.source, "x_min_m": self.x_min, "y_min_m": self.y_min,
                               "size_m": self.size}
        if self.projection is not None:
            out["projection"] = (f"transverse Mercator (WGS84) centred on lon {self.projection.lon0:g}, "
                                 f"lat {self.projection.lat0:g}")
        if self.crs is not None:
            out["crs"] = self.crs
        return out


def _check_crs(crs: Any) -> str:
    """A CRS given as a non-empty string (an EPSG code such as ``"EPSG:3857"`` or a PROJ string).

    Examples
    --------
    >>> _check_crs("EPSG:3857")
    'EPSG:3857'
    >>> _check_crs(3857)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: crs must be a string such as 'EPSG:3857', got int 3857
    """
    if not isinstance(crs, str) or not crs.strip():
        raise InvalidParameterError(f"crs must be a string such as 'EPSG:3857', got {type(crs).__name__} {crs!r}",
                                    parameter="crs", allowed="an EPSG code or PROJ string", got=crs)
    return crs.strip()

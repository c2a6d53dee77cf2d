"""Geographic coordinates: lon/lat on the WGS84 ellipsoid ↔ local metres (:class:`LocalProjection`)."""

from dpcloak.geo.projection import WGS84_A, WGS84_F, LocalProjection, check_lonlat, projection_for

__all__ = ["LocalProjection", "projection_for", "check_lonlat", "WGS84_A", "WGS84_F"]

"""dpcloak: provable privacy for sensor networks and location data, with recovery of *roughly where*."""

__version__ = "0.1.0"  # the single source of the version: pyproject.toml reads it (hatch dynamic version)

__all__ = ["__version__"]

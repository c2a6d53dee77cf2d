"""dpcloak: provable privacy for sensor networks and location data, with recovery of *roughly where*."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpcloak")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0"

__all__ = ["__version__"]

"""Where sources live: :class:`Line`, :class:`Grid`, :class:`GraphDomain`."""

from dpcloak.domains.base import Domain
from dpcloak.domains.graph import GraphDomain
from dpcloak.domains.grid import Grid
from dpcloak.domains.line import Line

__all__ = ["Domain", "Line", "Grid", "GraphDomain"]

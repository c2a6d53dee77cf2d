"""Where sources live: :class:`Line`, :class:`Grid`, :class:`GraphDomain`, :class:`Sites`."""

from dpcloak.domains.base import Domain
from dpcloak.domains.graph import GraphDomain
from dpcloak.domains.grid import Grid
from dpcloak.domains.line import Line
from dpcloak.domains.proximity import PROXIMITY_METHODS, proximity_graph
from dpcloak.domains.sites import Sites

__all__ = ["Domain", "Line", "Grid", "GraphDomain", "Sites", "proximity_graph", "PROXIMITY_METHODS"]

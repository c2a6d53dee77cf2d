"""Where sources live: :class:`Line`, :class:`Grid`, :class:`GraphDomain`, :class:`Sites`."""

from typing import TYPE_CHECKING

from dpcloak._lazy import lazy_exports

if TYPE_CHECKING:
    from dpcloak.domains.base import Domain
    from dpcloak.domains.graph import GraphDomain
    from dpcloak.domains.grid import Grid
    from dpcloak.domains.line import Line
    from dpcloak.domains.proximity import PROXIMITY_METHODS, proximity_graph
    from dpcloak.domains.sites import Sites

__all__ = ["Domain", "Line", "Grid", "GraphDomain", "Sites", "proximity_graph", "PROXIMITY_METHODS"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "Domain": "dpcloak.domains.base",
    "GraphDomain": "dpcloak.domains.graph",
    "Grid": "dpcloak.domains.grid",
    "Line": "dpcloak.domains.line",
    "PROXIMITY_METHODS": "dpcloak.domains.proximity",
    "proximity_graph": "dpcloak.domains.proximity",
    "Sites": "dpcloak.domains.sites",
})

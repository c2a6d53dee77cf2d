"""Nodes of a graph with the shortest-path metric (thesis section 8.3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from dpcloak.domains.base import Domain
from dpcloak.errors import DisconnectedGraphError, InvalidParameterError

__all__ = ["GraphDomain"]


@dataclass(frozen=True, eq=False)
class GraphDomain(Domain):
    """The nodes of an undirected networkx graph; neighbours are its edges.

    Parameters
    ----------
    graph : networkx.Graph
        Undirected graph with at least one node. Node order is ``list(graph.nodes)``.
    weight : str, default "weight"
        Edge attribute holding positive edge lengths; edges without it have length 1.

    Notes
    -----
    The ground metric is the weighted shortest-path distance, which requires a connected graph:
    :meth:`distances` raises :class:`~dpcloak.errors.DisconnectedGraphError` otherwise. A move of
    unit mass along an edge of length ``w`` is a ``w``-step for the privacy relation.
    """

    graph: nx.Graph
    weight: str = "weight"
    nodes: list[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.graph, nx.Graph):
            raise InvalidParameterError(f"graph must be a networkx.Graph, got {type(self.graph).__name__}")
        if self.graph.is_directed():
            raise InvalidParameterError("graph must be undirected, got a directed graph")
        if self.graph.number_of_nodes() == 0:
            raise InvalidParameterError("graph must have at least one node, got an empty graph")
        for u, v, data in self.graph.edges(data=True):
            w = data.get(self.weight, 1.0)
            if not (isinstance(w, int | float | np.number) and np.isfinite(w) and w > 0):
                raise InvalidParameterError(
                    f"edge ({u!r}, {v!r}) must have a finite positive {self.weight!r}, got {w!r}"
                )
        object.__setattr__(self, "nodes", list(self.graph.nodes))

    @property
    def size(self) -> int:
        return len(self.nodes)

    def is_connected(self) -> bool:
        """Whether the graph is connected."""
        return bool(nx.is_connected(self.graph))

    def require_connected(self, what: str = "the shortest-path metric") -> None:
        """Raise :class:`DisconnectedGraphError` unless the graph is connected."""
        if not self.is_connected():
            parts = nx.number_connected_components(self.graph)
            raise DisconnectedGraphError(f"graph must be connected for {what}; it has {parts} components")

    def _edge_arrays(self) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        index = {node: k for k, node in enumerate(self.nodes)}
        pairs, lengths = [], []
        for u, v, data in self.graph.edges(data=True):
            i, j = index[u], index[v]
            if i == j:
                continue
            pairs.append((min(i, j), max(i, j)))
            lengths.append(float(data.get(self.weight, 1.0)))
        if not pairs:
            return np.zeros((0, 2), dtype=np.intp), np.zeros(0)
        return np.asarray(pairs, dtype=np.intp), np.asarray(lengths)

    def neighbours(self) -> NDArray[np.intp]:
        return self._edge_arrays()[0]

    def neighbour_steps(self) -> NDArray[np.float64]:
        return self._edge_arrays()[1]

    def coordinates(self) -> NDArray[np.float64] | None:
        """Node attribute ``pos`` as coordinates when every node has one, else ``None``."""
        pos = nx.get_node_attributes(self.graph, "pos")
        if len(pos) != self.size:
            return None
        return np.asarray([pos[v] for v in self.nodes], dtype=float)

    def adjacency(self) -> Any:
        """Weighted sparse adjacency matrix (CSR) in node order."""
        return nx.to_scipy_sparse_array(self.graph, nodelist=self.nodes, weight=self.weight, format="csr")

    def laplacian(self) -> Any:
        """Sparse graph Laplacian ``L = D - W`` (CSR) in node order, ``W`` the edge weights."""
        import scipy.sparse as sp

        w = self.adjacency().astype(float)
        degree = np.asarray(w.sum(axis=1)).ravel()
        return (sp.diags(degree) - w).tocsr()

    def distances(self) -> NDArray[np.float64]:
        from scipy.sparse.csgraph import shortest_path

        self.require_connected()
        return np.asarray(shortest_path(self.adjacency(), method="D", directed=False))

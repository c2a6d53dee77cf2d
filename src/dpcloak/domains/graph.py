"""Nodes of a graph with the shortest-path metric (thesis section 8.3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from dpcloak.domains.base import Domain
from dpcloak.errors import DisconnectedGraphError, InvalidParameterError

__all__ = ["GraphDomain", "AMBIGUOUS_EDGE_ATTRIBUTE"]

#: Edge attribute refused because it has been read both as a length and as a conductance.
AMBIGUOUS_EDGE_ATTRIBUTE = "weight"


@dataclass(frozen=True, eq=False)
class GraphDomain(Domain):
    """The nodes of an undirected networkx graph; neighbours are its edges.

    Parameters
    ----------
    graph : networkx.Graph
        Undirected graph with at least one node. Node order is ``list(graph.nodes)``.
    length : str, default "length"
        Edge attribute holding the edge's positive *length* (e.g. metres): it defines the ground
        metric (shortest paths, the EMD) and the privacy relation. Edges without it are one hop long.
    conductance : str, default "conductance"
        Edge attribute holding the edge's positive *conductance*: how fast heat flows along it,
        ``L = D − W`` with ``W`` the conductances (:meth:`laplacian`, graph diffusion). Edges
        without it conduct 1.

    Notes
    -----
    The two are different physical quantities with opposite effects (a long edge is a weak
    conductor), so they live in two attributes. An edge attribute ``"weight"`` is refused unless
    it is named as one of the two (e.g. ``conductance="weight"`` for networkx's weighted example
    graphs): it used to be read as a conductance by the diffusion model and as a length by the
    metric, and metre-valued weights silently gave a fully mixed operator (Δ2 ≈ 1e-17).
    :func:`dpcloak.domains.proximity_graph` builds graphs from positions with both attributes set.

    The ground metric is the shortest-path distance in ``length``, which requires a connected
    graph: :meth:`distances` raises :class:`~dpcloak.errors.DisconnectedGraphError` otherwise.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.path_graph(3)
    >>> nx.set_edge_attributes(G, 2.0, "length")
    >>> d = GraphDomain(G)
    >>> d.size, d.is_connected()
    (3, True)
    >>> d.distances().tolist()  # shortest paths in edge length
    [[0.0, 2.0, 4.0], [2.0, 0.0, 2.0], [4.0, 2.0, 0.0]]
    >>> d.laplacian().toarray().tolist()  # no conductance attribute: each edge conducts 1
    [[1.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 1.0]]

    >>> d.has_lengths, d.hop_distances().tolist()[0]  # hops ignore the lengths
    (True, [0.0, 1.0, 2.0])
    >>> d.adjacency().toarray().tolist()[1]  # the lengths by default
    [2.0, 0.0, 2.0]
    >>> GraphDomain(nx.empty_graph(2)).require_connected("graph diffusion")
    Traceback (most recent call last):
        ...
    dpcloak.errors.DisconnectedGraphError: graph must be connected for graph diffusion; it has 2 components
    """

    graph: nx.Graph
    length: str = "length"
    conductance: str = "conductance"
    nodes: list[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.graph, nx.Graph):
            raise InvalidParameterError(f"graph must be a networkx.Graph, got {type(self.graph).__name__}",
                                        parameter="graph")
        if self.graph.is_directed():
            raise InvalidParameterError("graph must be undirected, got a directed graph", parameter="graph")
        if self.graph.number_of_nodes() == 0:
            raise InvalidParameterError("graph must have at least one node, got an empty graph", parameter="graph")
        if self.length == self.conductance:
            raise InvalidParameterError(
                f"length and conductance must be different edge attributes, both are {self.length!r}",
                parameter="length"
            )
        unnamed = AMBIGUOUS_EDGE_ATTRIBUTE not in (self.length, self.conductance)
        for u, v, data in self.graph.edges(data=True):
            if unnamed and AMBIGUOUS_EDGE_ATTRIBUTE in data:
                raise InvalidParameterError(
                    f"edge ({u!r}, {v!r}) has a {AMBIGUOUS_EDGE_ATTRIBUTE!r} attribute, which is ambiguous: store "
                    f"a distance (metres) as {self.length!r} (the metric and the privacy relation) and a heat-flow "
                    f"rate as {self.conductance!r} (graph diffusion)", parameter="edge"
                )
            for attribute in (self.length, self.conductance):
                w = data.get(attribute, 1.0)
                if not (isinstance(w, int | float | np.number) and np.isfinite(w) and w > 0):
                    raise InvalidParameterError(
                        f"edge ({u!r}, {v!r}) must have a finite positive {attribute!r}, got {w!r}", parameter="edge"
                    )
        object.__setattr__(self, "nodes", list(self.graph.nodes))

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def has_lengths(self) -> bool:
        """Whether some edge carries an explicit ``length`` (otherwise every edge is one hop)."""
        return any(self.length in data for _, _, data in self.graph.edges(data=True))

    def is_connected(self) -> bool:
        """Whether the graph is connected."""
        return bool(nx.is_connected(self.graph))

    def require_connected(self, what: str = "the shortest-path metric") -> None:
        """Raise :class:`DisconnectedGraphError` unless the graph is connected."""
        if not self.is_connected():
            parts = nx.number_connected_components(self.graph)
            raise DisconnectedGraphError(f"graph must be connected for {what}; it has {parts} components",
                                         parameter="graph")

    def _edge_arrays(self) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        index = {node: k for k, node in enumerate(self.nodes)}
        pairs, lengths = [], []
        for u, v, data in self.graph.edges(data=True):
            i, j = index[u], index[v]
            if i == j:
                continue
            pairs.append((min(i, j), max(i, j)))
            lengths.append(float(data.get(self.length, 1.0)))
        if not pairs:
            return np.zeros((0, 2), dtype=np.intp), np.zeros(0)
        return np.asarray(pairs, dtype=np.intp), np.asarray(lengths)

    def neighbours(self) -> NDArray[np.intp]:
        return self._edge_arrays()[0]

    def neighbour_steps(self) -> NDArray[np.float64]:
        """Each edge's ``length`` (1 hop where it has none)."""
        return self._edge_arrays()[1]

    def coordinates(self) -> NDArray[np.float64] | None:
        """Node attribute ``pos`` as coordinates when every node has one, else ``None``."""
        pos = nx.get_node_attributes(self.graph, "pos")
        if len(pos) != self.size:
            return None
        return np.asarray([pos[v] for v in self.nodes], dtype=float)

    def adjacency(self, attribute: str | None = None) -> Any:
        """Sparse adjacency matrix (CSR) in node order holding ``attribute`` (default: the lengths)."""
        key = self.length if attribute is None else attribute
        return nx.to_scipy_sparse_array(self.graph, nodelist=self.nodes, weight=key, format="csr")

    def laplacian(self) -> Any:
        """Sparse graph Laplacian ``L = D − W`` (CSR) in node order, ``W`` the edge conductances."""
        import scipy.sparse as sp

        w = self.adjacency(self.conductance).astype(float)
        degree = np.asarray(w.sum(axis=1)).ravel()
        return (sp.diags(degree) - w).tocsr()

    def hop_distances(self) -> NDArray[np.float64]:
        """The dense ``(size, size)`` matrix of shortest-path distances counted in edges (hops)."""
        from scipy.sparse.csgraph import shortest_path

        self.require_connected()
        return np.asarray(shortest_path(self.adjacency(), method="D", directed=False, unweighted=True))

    def distances(self) -> NDArray[np.float64]:
        from scipy.sparse.csgraph import shortest_path

        self.require_connected()
        return np.asarray(shortest_path(self.adjacency(), method="D", directed=False))

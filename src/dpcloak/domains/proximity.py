r"""Graphs built from positions in metres: k-nearest-neighbour or Delaunay, with lengths and conductances.

Every edge ``(i, j)`` gets

* ``length`` = the Euclidean distance ``d_ij`` in metres (the metric and the privacy relation), and
* ``conductance`` = ``1 / d_ij²`` in m⁻²: the finite-difference Laplacian of the heat equation,
  ``(u_j − u_i)/d²`` along an edge, so that ``exp(−τ L)`` with ``τ`` in m² spreads heat over about
  ``√(2τ)`` metres, the same unit as ``T = μ t`` of the heat kernel (Gilbert & McMillan §2.1).

Nodes carry their position as the ``pos`` attribute.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike

from dpcloak._validation import check_array, check_choice, check_int
from dpcloak.domains.graph import GraphDomain
from dpcloak.domains.sites import closest_pair
from dpcloak.errors import DisconnectedGraphError, InvalidParameterError

__all__ = ["PROXIMITY_METHODS", "proximity_graph"]

PROXIMITY_METHODS = ("knn", "delaunay")


def _knn_pairs(pos: np.ndarray, k: int) -> set[tuple[int, int]]:
    from scipy.spatial import cKDTree

    _, idx = cKDTree(pos).query(pos, k=min(k, len(pos) - 1) + 1)
    return {(min(i, int(j)), max(i, int(j))) for i, row in enumerate(idx) for j in row[1:]}


def _delaunay_pairs(pos: np.ndarray) -> set[tuple[int, int]]:
    from scipy.spatial import Delaunay, QhullError

    if len(pos) < 3:
        return {(0, 1)}
    try:
        tri = Delaunay(pos)
    except QhullError:
        raise InvalidParameterError(
            "positions are collinear, so they have no Delaunay triangulation; use method='knn'", parameter="positions"
        ) from None
    out: set[tuple[int, int]] = set()
    for simplex in tri.simplices:
        a, b, c = sorted(int(v) for v in simplex)
        out |= {(a, b), (b, c), (a, c)}
    return out


def proximity_graph(positions: ArrayLike, *, method: str = "knn", k: int = 4) -> GraphDomain:
    """A connected graph on ``positions`` (metres) with edge ``length`` and ``conductance`` (module docstring).

    Parameters
    ----------
    positions : array_like, shape (n, 2)
        Distinct node positions in metres, n ≥ 2.
    method : {"knn", "delaunay"}, default "knn"
        ``"knn"``: each node joined to its ``k`` nearest neighbours (symmetrised). ``"delaunay"``:
        the edges of the Delaunay triangulation.
    k : int, default 4
        Neighbours per node for ``"knn"`` (≥ 1).

    Raises
    ------
    InvalidParameterError
        Co-located positions (two nodes at distance 0 would have an infinite conductance, and
        Delaunay would silently drop one: merge them first), fewer than 2 positions.
    DisconnectedGraphError
        A k-NN graph with several components (increase ``k`` or use Delaunay).

    Examples
    --------
    >>> g = proximity_graph([[0, 0], [10, 0], [0, 20]], method="delaunay")
    >>> sorted(round(d["length"], 3) for _, _, d in g.graph.edges(data=True))
    [10.0, 20.0, 22.361]
    """
    pos = check_array("positions", positions, shape=(None, 2))
    method = check_choice("method", method, PROXIMITY_METHODS)
    kk = check_int("k", k, minimum=1)
    if len(pos) < 2:
        raise InvalidParameterError(f"positions must hold at least 2 points for a graph, got {len(pos)}",
                                    parameter="positions")
    i, j, d = closest_pair(pos)
    if d == 0.0:
        raise InvalidParameterError(
            f"positions {i} and {j} are co-located at {tuple(pos[i].tolist())}: merge them into one node "
            "(a zero-length edge has infinite conductance)", parameter="positions"
        )
    pairs = _knn_pairs(pos, kk) if method == "knn" else _delaunay_pairs(pos)
    graph = nx.Graph()
    for node, p in enumerate(pos):
        graph.add_node(node, pos=(float(p[0]), float(p[1])))
    for a, b in sorted(pairs):
        length = float(np.linalg.norm(pos[a] - pos[b]))
        graph.add_edge(a, b, length=length, conductance=1.0 / length**2)
    if not nx.is_connected(graph):
        parts = nx.number_connected_components(graph)
        raise DisconnectedGraphError(
            f"the {kk}-nearest-neighbour graph has {parts} components; increase k or use method='delaunay'"
        )
    return GraphDomain(graph)

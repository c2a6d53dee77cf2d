"""Sites (points in metres) and proximity graphs: against scipy/numpy distances and networkx."""

import pickle

import networkx as nx
import numpy as np
import pytest

from dpcloak.domains import Sites, proximity_graph
from dpcloak.errors import DisconnectedGraphError, InvalidParameterError


def test_sites_metric_and_pairs_are_euclidean():
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 500, (7, 2))
    sites = Sites(pos)
    d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
    np.testing.assert_allclose(sites.distances(), d, atol=1e-9)
    pairs = sites.neighbours()
    assert len(pairs) == 21
    np.testing.assert_allclose(sites.neighbour_steps(), d[pairs[:, 0], pairs[:, 1]])


def test_sites_distances_are_kept_and_read_only():
    pos = np.random.default_rng(1).uniform(0, 50, (5, 2))
    sites = Sites(pos)
    first = sites.distances()
    assert sites.distances() is first  # computed once: every EMD of a sensor network reuses it
    with pytest.raises(ValueError, match="read-only"):
        first[0, 1] = 0.0
    np.testing.assert_allclose(first, np.linalg.norm(pos[:, None] - pos[None], axis=2), atol=1e-12)
    copy = pickle.loads(pickle.dumps(sites))  # pickle restores arrays writeable: the copy must not inherit one
    assert not copy.distances().flags.writeable
    np.testing.assert_array_equal(copy.distances(), first)


def test_sites_refuse_co_located_points():
    with pytest.raises(InvalidParameterError, match=r"points 0 and 2 are both at \(1.0, 2.0\).*merge"):
        Sites([[1.0, 2.0], [5.0, 5.0], [1.0, 2.0]])


def test_knn_graph_edges_are_the_k_nearest_with_lengths_and_inverse_square_conductances():
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 1000, (30, 2))
    domain = proximity_graph(pos, k=3)
    d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
    np.fill_diagonal(d, np.inf)
    want = {tuple(sorted((i, int(j)))) for i in range(30) for j in np.argsort(d[i])[:3]}
    assert {tuple(sorted(e)) for e in domain.graph.edges} == want
    for u, v, data in domain.graph.edges(data=True):
        assert data["length"] == pytest.approx(d[u, v], rel=1e-12)
        assert data["conductance"] == pytest.approx(1 / d[u, v] ** 2, rel=1e-12)
    np.testing.assert_allclose(domain.coordinates(), pos)


def test_delaunay_graph_matches_scipy_triangulation():
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(2)
    pos = rng.uniform(0, 100, (20, 2))
    tri = Delaunay(pos)
    want = {tuple(sorted((int(s[a]), int(s[b])))) for s in tri.simplices for a, b in ((0, 1), (1, 2), (0, 2))}
    assert {tuple(sorted(e)) for e in proximity_graph(pos, method="delaunay").graph.edges} == want


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: proximity_graph([[0, 0], [3, 4], [0, 0]]), InvalidParameterError, "co-located.*merge"),
        (lambda: proximity_graph([[0, 0], [1, 0], [1000, 0], [1001, 0]], k=1), DisconnectedGraphError,
         "2 components; increase k"),
        (lambda: proximity_graph([[0, 0], [1, 1], [2, 2]], method="delaunay"), InvalidParameterError, "collinear"),
        (lambda: proximity_graph([[0, 0]]), InvalidParameterError, "at least 2 points"),
        (lambda: proximity_graph([[0, 0], [1, 1]], method="gabriel"), InvalidParameterError, "method must be one of"),
    ],
)
def test_proximity_graph_refusals(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_graph_hop_distances_match_networkx():
    domain = proximity_graph(np.random.default_rng(3).uniform(0, 10, (12, 2)), k=2)
    want = dict(nx.shortest_path_length(domain.graph))
    hops = domain.hop_distances()
    assert all(hops[i, j] == want[i][j] for i in range(12) for j in range(12))

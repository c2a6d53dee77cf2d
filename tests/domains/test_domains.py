"""Domains: coordinates, neighbours and ground metrics against hand-computed values and networkx."""

import networkx as nx
import numpy as np
import pytest

from dpcloak.domains import GraphDomain, Grid, Line
from dpcloak.errors import DisconnectedGraphError, InvalidParameterError


def test_line_points_neighbours_and_metric():
    line = Line(4)
    assert line.size == 4 and len(line) == 4
    np.testing.assert_allclose(line.points(), [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(line.neighbours(), [[0, 1], [1, 2], [2, 3]])
    np.testing.assert_allclose(line.distances()[0], [0.0, 0.25, 0.5, 0.75])
    assert line.diameter() == pytest.approx(0.75)
    np.testing.assert_array_equal(line.neighbour_steps(), [1.0, 1.0, 1.0])


def test_grid_indexing_neighbours_and_metrics():
    grid = Grid((2, 3), extent=(2.0, 3.0))
    assert grid.size == 6 and grid.spacing == (1.0, 1.0)
    xy = grid.coordinates()
    np.testing.assert_allclose(xy[4], [1.5, 1.5])  # row 1, column 1 (row-major)
    pairs = {tuple(p) for p in grid.neighbours()}
    assert len(pairs) == 2 * 2 + 3 * 1  # horizontal + vertical edges
    assert (0, 1) in pairs and (0, 3) in pairs and (0, 4) not in pairs
    d1 = grid.distances()
    assert d1[0, 5] == pytest.approx(1.0 + 2.0)
    d2 = Grid((2, 3), extent=(2.0, 3.0), metric="l2").distances()
    assert d2[0, 5] == pytest.approx(np.hypot(1.0, 2.0))
    assert grid.diameter() == pytest.approx(d1.max())
    assert Grid((2, 3), extent=(2.0, 3.0), metric="l2").diameter() == pytest.approx(d2.max())


def test_graph_domain_weighted_shortest_paths_match_networkx():
    g = nx.cycle_graph(5)
    nx.set_edge_attributes(g, {(0, 1): 2.5}, "length")
    domain = GraphDomain(g)
    want = dict(nx.shortest_path_length(g, weight="length"))
    d = domain.distances()
    for i in range(5):
        for j in range(5):
            assert d[i, j] == pytest.approx(want[i][j])
    steps = dict(zip(map(tuple, domain.neighbours()), domain.neighbour_steps(), strict=True))
    assert steps[(0, 1)] == 2.5 and steps[(1, 2)] == 1.0
    lap = domain.laplacian().toarray()
    np.testing.assert_allclose(lap.sum(axis=1), 0.0, atol=1e-12)


def test_graph_domain_positions_as_coordinates():
    g = nx.path_graph(3)
    assert GraphDomain(g).coordinates() is None
    nx.set_node_attributes(g, {0: (0, 0), 1: (1, 0), 2: (2, 0)}, "pos")
    np.testing.assert_allclose(GraphDomain(g).coordinates(), [[0, 0], [1, 0], [2, 0]])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Line(0), "n must be an integer >= 1, got 0"),
        (lambda: Line(2.5), "n must be an integer"),
        (lambda: Grid((0, 3)), "shape[0] must be an integer >= 1"),
        (lambda: Grid((2,)), "shape must be a pair"),
        (lambda: Grid((2, 2), extent=(1.0, float("nan"))), "extent[1] must be a finite real number"),
        (lambda: Grid((2, 2), metric="chebyshev"), "metric must be one of"),
        (lambda: GraphDomain(nx.DiGraph([(0, 1)])), "undirected"),
        (lambda: GraphDomain(nx.Graph()), "at least one node"),
        (lambda: GraphDomain(nx.Graph([(0, 1, {"length": -1.0})])), "finite positive 'length'"),
        (lambda: GraphDomain(nx.Graph([(0, 1, {"conductance": 0.0})])), "finite positive 'conductance'"),
        (lambda: GraphDomain(nx.Graph([(0, 1, {"weight": 30.0})])), "'weight' attribute, which is ambiguous"),
        (lambda: GraphDomain(nx.Graph([(0, 1)]), length="c", conductance="c"), "must be different"),
        (lambda: GraphDomain("not a graph"), "networkx.Graph"),
    ],
)
def test_bad_domain_inputs_raise_clear_errors(make, message):
    with pytest.raises(InvalidParameterError, match=None) as info:
        make()
    assert message in str(info.value)


def test_disconnected_graph_metric_is_refused():
    domain = GraphDomain(nx.Graph([(0, 1), (2, 3)]))
    with pytest.raises(DisconnectedGraphError, match="2 components"):
        domain.distances()

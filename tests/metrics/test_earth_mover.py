"""EMD against independent oracles: POT's emd2, scipy's wasserstein_distance and closed forms."""

import networkx as nx
import numpy as np
import ot
import pytest
from scipy.stats import wasserstein_distance

from dpcloak.domains import GraphDomain, Grid, Line
from dpcloak.errors import InvalidParameterError
from dpcloak.metrics import emd


def _pair(rng, n, sparsity=0.0):
    p, q = rng.random(n), rng.random(n)
    p[rng.random(n) < sparsity] = 0.0
    q[rng.random(n) < sparsity] = 0.0
    p[0] += 0.1
    q[-1] += 0.1
    return p, q


DOMAINS = [
    Line(9),
    Grid((4, 5), extent=(2.0, 3.0)),
    Grid((5, 3), extent=(1.0, 2.5), metric="l2"),
    GraphDomain(nx.random_regular_graph(3, 12, seed=1)),
]


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: type(d).__name__ + getattr(d, "metric", ""))
def test_matches_pot_emd2(domain):
    """Oracle: POT's exact network simplex on the dense ground metric."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        p, q = _pair(rng, domain.size, sparsity=0.3)
        want = ot.emd2(p / p.sum(), q / q.sum(), domain.distances(), numItermax=10**7)
        assert emd(p, q, domain) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_line_matches_scipy_wasserstein():
    """Oracle: scipy.stats.wasserstein_distance on the points i/n."""
    rng = np.random.default_rng(4)
    line = Line(50)
    p, q = _pair(rng, 50, sparsity=0.5)
    want = wasserstein_distance(line.points(), line.points(), p, q)
    assert emd(p, q, line) == pytest.approx(want, rel=1e-12)


def test_point_mass_shift_costs_distance():
    """Closed form: a unit point mass moved by (dy, dx) costs |dy| + |dx| in physical units."""
    grid = Grid((6, 8), extent=(3.0, 2.0))
    p = np.zeros(grid.shape)
    q = np.zeros(grid.shape)
    p[1, 2] = 1.0
    q[4, 7] = 1.0
    hy, hx = grid.spacing
    assert emd(p, q, grid) == pytest.approx(3 * hy + 5 * hx, rel=1e-12)


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        ([1.0, -0.5, 0.5], [1.0, 1.0, 1.0], "non-negative"),
        ([1.0, np.nan, 0.5], [1.0, 1.0, 1.0], "finite"),
        ([1.0, 1.0], [1.0, 1.0, 1.0], "shape"),
        ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], "positive total mass"),
    ],
)
def test_bad_input(p, q, match):
    with pytest.raises(InvalidParameterError, match=match):
        emd(p, q, Line(3))


def test_empty_and_unequal_mass():
    with pytest.raises(InvalidParameterError, match="empty"):
        emd([], [], Line(1))
    with pytest.raises(InvalidParameterError, match="equal total mass"):
        emd([1.0, 0.0], [0.0, 2.0], Line(2), normalize=False)
    assert emd([2.0, 0.0], [0.0, 2.0], Line(2), normalize=False) == pytest.approx(1.0)

"""EMD, EMD plan and EMD norm against independent oracles.

Oracles: POT's exact ``ot.emd2`` on the dense ground metric (every domain kind, 1e-9),
``scipy.stats.wasserstein_distance`` on a line, closed forms for shifted point masses, the
marginals of the returned plan, and hypothesis properties of a metric.
"""

import networkx as nx
import numpy as np
import ot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import wasserstein_distance

from dpcloak.domains import GraphDomain, Grid, Line
from dpcloak.errors import ConvergenceError, DisconnectedGraphError, InvalidParameterError
from dpcloak.metrics import _costscale, _dense, _flow, _grid, as_distribution, emd, emd_norm, emd_plan


def _pair(rng, n, sparsity=0.0):
    p, q = rng.random(n), rng.random(n)
    p[rng.random(n) < sparsity] = 0.0
    q[rng.random(n) < sparsity] = 0.0
    p[0] += 0.1
    q[-1] += 0.1
    return p, q


def _weighted_graph():
    g = nx.connected_watts_strogatz_graph(15, 4, 0.3, seed=2)
    rng = np.random.default_rng(5)
    for u, v in g.edges:
        g.edges[u, v]["length"] = float(rng.uniform(0.5, 3.0))
    return GraphDomain(g)


DOMAINS = {
    "line": Line(9),
    "grid-l1": Grid((4, 5), extent=(2.0, 3.0)),
    "grid-l1-multiscale": Grid((33, 21), extent=(1.0, 0.7)),
    "grid-l2": Grid((5, 3), extent=(1.0, 2.5), metric="l2"),
    "graph-unit": GraphDomain(nx.random_regular_graph(3, 12, seed=1)),
    "graph-weighted": _weighted_graph(),
}


@pytest.mark.parametrize("name", DOMAINS)
def test_emd_matches_pot_emd2(name):
    """Oracle: POT's exact network simplex on the dense ground metric, tolerance 1e-9."""
    domain = DOMAINS[name]
    rng = np.random.default_rng(3)
    cost = domain.distances()
    for sparsity in (0.0, 0.3, 0.8):
        p, q = _pair(rng, domain.size, sparsity)
        want = ot.emd2(p / p.sum(), q / q.sum(), cost, numItermax=10**8)
        assert emd(p, q, domain) == pytest.approx(want, rel=1e-9, abs=1e-12)
        m = 2.5
        raw = emd(m * p / p.sum(), m * q / q.sum(), domain, normalize=False)
        assert raw == pytest.approx(m * want, rel=1e-9, abs=1e-12)


def test_emd_with_explicit_cost_matrix_matches_pot():
    """Oracle: POT on a random (non-metric) cost matrix."""
    rng = np.random.default_rng(8)
    cost = rng.random((12, 12)) * 4
    p, q = _pair(rng, 12, 0.2)
    want = ot.emd2(p / p.sum(), q / q.sum(), cost, numItermax=10**8)
    assert emd(p, q, cost) == pytest.approx(want, rel=1e-9)


def test_grid_accepts_2d_arrays_and_matches_flat():
    grid = Grid((6, 7))
    rng = np.random.default_rng(1)
    p, q = rng.random((6, 7)), rng.random((6, 7))
    assert emd(p, q, grid) == emd(p.ravel(), q.ravel(), grid)


def test_deep_multiscale_grid_matches_pot():
    """Oracle: POT on a 40 x 40 grid (three coarsening levels) for noise and a smooth bump pair."""
    grid = Grid((40, 40), extent=(1.0, 1.0))
    rng = np.random.default_rng(21)
    y, x = np.mgrid[0:40, 0:40] / 40
    pairs = [
        (rng.random((40, 40)) ** 4, rng.random((40, 40)) ** 4),
        (np.exp(-((y - 0.3) ** 2 + (x - 0.6) ** 2) / 0.01), np.exp(-((y - 0.7) ** 2 + (x - 0.2) ** 2) / 0.02)),
    ]
    cost = grid.distances()
    for p, q in pairs:
        want = ot.emd2(p.ravel() / p.sum(), q.ravel() / q.sum(), cost, numItermax=10**8)
        assert emd(p, q, grid) == pytest.approx(want, rel=1e-9)


def test_single_row_grid_is_a_line():
    """Closed form: a 1 x n grid of width n/k is the line with spacing 1/k (scipy oracle)."""
    rng = np.random.default_rng(6)
    p, q = rng.random(30), rng.random(30)
    pts = np.arange(30) / 10
    want = wasserstein_distance(pts, pts, p, q)
    assert emd(p, q, Grid((1, 30), extent=(1.0, 3.0))) == pytest.approx(want, rel=1e-12)
    assert emd(p, q, Grid((30, 1), extent=(3.0, 1.0))) == pytest.approx(want, rel=1e-12)


def test_line_matches_scipy_wasserstein():
    """Oracle: scipy.stats.wasserstein_distance on the points i/n."""
    rng = np.random.default_rng(4)
    line = Line(50)
    for sparsity in (0.0, 0.5, 0.9):
        p, q = _pair(rng, 50, sparsity)
        want = wasserstein_distance(line.points(), line.points(), p, q)
        assert emd(p, q, line) == pytest.approx(want, rel=1e-12)


def test_point_mass_shift_costs_distance():
    """Closed form: a point mass moved by (dy, dx) cells costs |dy| h_y + |dx| h_x (L1) or hypot (L2)."""
    shape, extent = (6, 8), (3.0, 2.0)
    p, q = np.zeros(shape), np.zeros(shape)
    p[1, 2] = 1.0
    q[4, 7] = 1.0
    hy, hx = 3.0 / 6, 2.0 / 8
    assert emd(p, q, Grid(shape, extent=extent)) == pytest.approx(3 * hy + 5 * hx, rel=1e-12)
    assert emd(p, q, Grid(shape, extent=extent, metric="l2")) == pytest.approx(np.hypot(3 * hy, 5 * hx), rel=1e-12)
    line = np.zeros(20)
    moved = np.zeros(20)
    line[3], moved[11] = 1.0, 1.0
    assert emd(line, moved, Line(20)) == pytest.approx(8 / 20, rel=1e-12)


def test_large_grid_point_masses_and_split_mass():
    """Closed form at heatmap scale: half the mass moves (a, b) cells, half stays put."""
    d = 128
    grid = Grid((d, d))
    p, q = np.zeros((d, d)), np.zeros((d, d))
    p[10, 20] = p[100, 100] = 1.0
    q[10, 20] = 1.0
    q[30, 7] = 1.0
    assert emd(p, q, grid) == pytest.approx(0.5 * (70 + 93) / d, rel=1e-12)


@pytest.mark.parametrize("name", ["line", "grid-l1", "grid-l1-multiscale", "grid-l2", "graph-weighted"])
def test_plan_has_the_right_marginals_and_cost(name):
    """Oracle: the plan's marginals are p and q, its cost is Σ γ d and equals POT's optimum."""
    domain = DOMAINS[name]
    rng = np.random.default_rng(11)
    p, q = _pair(rng, domain.size, 0.4)
    plan = emd_plan(p, q, domain)
    gamma = plan.todense()
    np.testing.assert_allclose(gamma.sum(axis=1), p / p.sum(), atol=1e-12)
    np.testing.assert_allclose(gamma.sum(axis=0), q / q.sum(), atol=1e-12)
    assert np.all(plan.mass > 0)
    dist = domain.distances()
    want = ot.emd2(p / p.sum(), q / q.sum(), dist, numItermax=10**8)
    assert float(np.sum(gamma * dist)) == pytest.approx(want, rel=1e-9)
    assert plan.cost == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("name", ["line", "grid-l1", "grid-l1-multiscale", "grid-l2", "graph-weighted"])
def test_emd_norm_matches_pot_with_a_dummy_location(name):
    """Oracle: POT on the problem extended by one location at distance α from all others."""
    domain = DOMAINS[name]
    rng = np.random.default_rng(12)
    n = domain.size
    for alpha in (0.3, 2.0):
        w = rng.normal(size=n)
        w[rng.random(n) < 0.3] = 0.0
        plus, minus = np.maximum(w, 0), np.maximum(-w, 0)
        cost = np.zeros((n + 1, n + 1))
        cost[:n, :n] = domain.distances()
        cost[:n, n] = cost[n, :n] = alpha
        want = ot.emd2(np.append(plus, minus.sum()), np.append(minus, plus.sum()), cost, numItermax=10**8)
        assert emd_norm(w, domain, penalty=alpha) == pytest.approx(want, rel=1e-9)


def test_emd_norm_of_balanced_difference_is_the_emd_and_unmatched_mass_pays_alpha():
    """Closed forms: ‖p − q‖_EMD = EMD(p, q) for equal masses (default α = diameter of [0,1]² = 2);
    a lone unit of mass pays α; Ghazi et al.'s α = 2 for the unit square."""
    grid = Grid((16, 16))
    rng = np.random.default_rng(2)
    p, q = rng.random(grid.size), rng.random(grid.size)
    p, q = p / p.sum(), q / q.sum()
    assert emd_norm(p - q, grid) == pytest.approx(emd(p, q, grid), rel=1e-9)
    lone = np.zeros(grid.size)
    lone[5] = 0.25
    assert emd_norm(lone, grid) == pytest.approx(0.25 * 2.0, rel=1e-12)
    assert emd_norm(-lone, grid, penalty=0.5) == pytest.approx(0.125, rel=1e-12)
    assert emd_norm(np.zeros(grid.size), grid) == 0.0


@pytest.mark.parametrize("magnitude", [1e-300, 2.2250738585072014e-308, 1e300])
def test_emd_norm_extreme_magnitudes_scale_exactly(magnitude):
    """The norm is homogeneous at any magnitude: UNIT / total must not overflow for tiny totals (found by
    hypothesis: a 4x5 field of ~1e-300 raised "invalid value encountered in cast")."""
    w = np.zeros(GRID.size)
    w[0], w[-1] = 1.0, -1.0
    assert emd_norm(magnitude * w, GRID, penalty=1.5) == pytest.approx(magnitude * emd_norm(w, GRID, penalty=1.5),
                                                                      rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, (4, 5), elements=st.floats(-5.0, 5.0, allow_nan=False, allow_subnormal=False)))
def test_emd_norm_bounds(w):
    """Imbalance pays α (so Ghazi et al. Lemma 2.1's step holds as |‖s‖₁ − ‖ŝ‖₁| ≤ ζ), and the norm
    never exceeds deleting everything (α ‖w‖₁); it is a norm: ‖−w‖ = ‖w‖, ‖2w‖ = 2‖w‖."""
    norm = emd_norm(w, GRID, penalty=1.5)
    assert norm >= 1.5 * abs(w.sum()) - 1e-9
    assert norm <= 1.5 * np.abs(w).sum() + 1e-9
    assert emd_norm(-w, GRID, penalty=1.5) == pytest.approx(norm, rel=1e-9, abs=1e-12)
    assert emd_norm(2 * w, GRID, penalty=1.5) == pytest.approx(2 * norm, rel=1e-9, abs=1e-12)


def test_non_converged_pot_result_is_never_returned(monkeypatch):
    """A POT solve stopped by its iteration cap raises instead of returning a too-high EMD."""
    monkeypatch.setattr(_dense, "NUM_ITER_MAX", 3)
    rng = np.random.default_rng(0)
    p, q = _pair(rng, 64, 0.0)
    with pytest.raises(ConvergenceError, match="optimal"):
        emd(p, q, Grid((8, 8), metric="l2"))


def test_pivot_limit_raises_instead_of_returning_a_suboptimal_flow(monkeypatch):
    monkeypatch.setattr(_grid, "pivot_cap", lambda n: 1)
    monkeypatch.setattr(_flow, "pivot_cap", lambda n: 1)
    rng = np.random.default_rng(0)
    p, q = _pair(rng, 64, 0.0)
    with pytest.raises(ConvergenceError, match="pivot limit"):
        emd(p, q, Grid((8, 8)))
    with pytest.raises(ConvergenceError, match="pivot limit"):
        emd(p[:15], q[:15], DOMAINS["graph-weighted"])


# ---- metric properties (hypothesis) -------------------------------------------------------------

GRID = Grid((4, 5), extent=(1.0, 2.0))
_mass = arrays(np.float64, (4, 5), elements=st.floats(0.0, 10.0, allow_nan=False, allow_subnormal=False))


def _unit(x):
    x = np.asarray(x, dtype=float).copy()
    x[0, 0] += 1e-3
    return x


@settings(max_examples=40, deadline=None)
@given(_mass, _mass)
def test_symmetric_and_zero_iff_equal(a, b):
    p, q = _unit(a), _unit(b)
    d = emd(p, q, GRID)
    assert d == pytest.approx(emd(q, p, GRID), rel=1e-9, abs=1e-14)
    assert emd(p, p, GRID) == pytest.approx(0.0, abs=1e-14)
    # EMD >= (shortest edge) x (total variation): zero exactly when the unit-mass vectors agree
    tv = 0.5 * np.abs(p / p.sum() - q / q.sum()).sum()
    assert d >= min(GRID.spacing) * tv - 1e-12


@settings(max_examples=40, deadline=None)
@given(_mass, _mass, _mass)
def test_triangle_inequality(a, b, c):
    p, q, r = _unit(a), _unit(b), _unit(c)
    for domain in (GRID, Grid((4, 5), extent=(1.0, 2.0), metric="l2")):
        assert emd(p, r, domain) <= emd(p, q, domain) + emd(q, r, domain) + 1e-12


# ---- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        ([1.0, -0.5, 0.5], [1.0, 1.0, 1.0], "non-negative"),
        ([1.0, np.nan, 0.5], [1.0, 1.0, 1.0], "finite"),
        ([1.0, 1.0, 1.0], [1.0, np.inf, 1.0], "finite"),
        ([1.0, 1.0], [1.0, 1.0, 1.0], "shape"),
        ([[1.0, 1.0, 1.0]], [1.0, 1.0, 1.0], "shape"),
        (["a", "b", "c"], [1.0, 1.0, 1.0], "array of numbers"),
    ],
)
@pytest.mark.parametrize("fn", [emd, emd_plan])
def test_bad_input_raises(p, q, match, fn):
    with pytest.raises(InvalidParameterError, match=match):
        fn(p, q, Line(3))


@pytest.mark.parametrize("fn", [emd, emd_plan])
def test_the_empty_answer_is_read_as_uniform_or_refused_on_request(fn):
    """The one rule (metrics.distribution): an all-zero estimate is the uniform distribution, flagged.

    Oracle: the 1-D closed form on Line(3) with points 1/3 apart: uniform vs a point mass at the first
    point moves 1/3 a distance 1/3 and 1/3 a distance 2/3 — EMD 1/3."""
    cost = fn([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], Line(3))
    assert (cost if fn is emd else cost.cost) == pytest.approx(1 / 3, rel=1e-12)
    assert as_distribution([0.0, 0.0, 0.0]).degenerate and not as_distribution([0.0, 2.0, 0.0]).degenerate
    for p, q in (([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]), ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])):
        with pytest.raises(InvalidParameterError, match="positive total mass"):
            fn(p, q, Line(3), empty="raise")
        with pytest.raises(InvalidParameterError, match="positive total mass"):
            fn(p, q, Line(3), normalize=False)
    with pytest.raises(InvalidParameterError, match="empty must be one of"):
        fn([1.0], [1.0], Line(1), empty="zero")


def test_more_bad_input():
    with pytest.raises(InvalidParameterError, match="empty"):
        emd([], [], Line(1))
    with pytest.raises(InvalidParameterError, match="equal total mass"):
        emd([1.0, 0.0], [0.0, 2.0], Line(2), normalize=False)
    with pytest.raises(InvalidParameterError, match="shape"):
        emd(np.ones((3, 4)), np.ones((3, 4)), Grid((4, 3)))
    with pytest.raises(InvalidParameterError, match="square"):
        emd([1.0, 1.0], [1.0, 1.0], np.ones((2, 3)))
    with pytest.raises(InvalidParameterError, match="non-negative"):
        emd([1.0, 1.0], [1.0, 1.0], -np.ones((2, 2)))
    with pytest.raises(DisconnectedGraphError, match="connected"):
        emd([1.0, 0.0], [0.0, 1.0], GraphDomain(nx.empty_graph(2)))
    with pytest.raises(InvalidParameterError, match="finite"):
        emd_norm([1.0, np.nan], Line(2))
    with pytest.raises(InvalidParameterError, match="penalty"):
        emd_norm([1.0, -1.0], Line(2), penalty=0.0)
    assert emd([2.0, 0.0], [0.0, 2.0], Line(2), normalize=False) == pytest.approx(1.0)


# ---- cost-scaling grid solver (exact integer problem) ---------------------------------------------


def _exact_cost(flow, ch, cv, rows, cols):
    """Σ c_e |f_e| as an exact Python integer (horizontal edges first, as in ``grid_edges``)."""
    nh = rows * (cols - 1)
    return ch * sum(abs(int(v)) for v in flow[:nh]) + cv * sum(abs(int(v)) for v in flow[nh:])


def _supply(rng, rows, cols, kind):
    n = rows * cols
    if kind == "noise":
        p, q = rng.random(n) ** 4, rng.random(n) ** 4
    elif kind == "sparse":
        p, q = rng.random(n) * (rng.random(n) < 0.1), rng.random(n) * (rng.random(n) < 0.1)
        p[0] += 0.5
        q[-1] += 0.5
    else:  # two far-apart bumps: long-range transport
        p, q = np.zeros(n), np.zeros(n)
        p[: cols // 2] = 1.0
        q[-(cols // 2) :] = 1.0
    return _flow.quantize(p) - _flow.quantize(q)


def _check_flow(flow, b, rows, cols):
    """Oracle-free feasibility: ``div f = b`` exactly on the grid's edges."""
    eu, ev, _ = _grid.grid_edges(rows, cols, 1.0, 1.0)
    div = np.zeros(rows * cols, dtype=object)
    np.add.at(div, eu, flow.astype(object))
    np.add.at(div, ev, -flow.astype(object))
    assert np.array_equal(div, b.astype(object))


@pytest.mark.parametrize("kind", ["noise", "sparse", "bumps"])
@pytest.mark.parametrize(("rows", "cols", "ch", "cv"), [(20, 20, 1, 1), (17, 23, 11, 10), (31, 9, 1, 3), (2, 40, 2, 1)])
def test_cost_scaling_equals_network_simplex_exactly(kind, rows, cols, ch, cv):
    """Oracle: the network simplex (``_flow.edge_flow``, a different algorithm) on the same integer
    problem; the optimal costs must be equal as exact integers, and the flow must be feasible."""
    rng = np.random.default_rng(rows * cols + ch)
    for _ in range(3):
        b = _supply(rng, rows, cols, kind)
        status, flow, _ = _costscale.grid_cost_scaling(rows, cols, ch, cv, b, _costscale.relabel_cap(rows * cols))
        assert status == 0
        _check_flow(flow, b, rows, cols)
        eu, ev, ew = _grid.grid_edges(rows, cols, float(cv), float(ch))
        want = _flow.edge_flow(b, eu, ev, ew)
        assert _exact_cost(flow, ch, cv, rows, cols) == _exact_cost(want, ch, cv, rows, cols)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 9),
    st.integers(2, 9),
    st.sampled_from([(1, 1), (3, 2), (1, 5)]),
    st.lists(st.integers(-(10**15), 10**15), min_size=81, max_size=81),
)
def test_cost_scaling_equals_network_simplex_on_random_small_grids(rows, cols, costs, values):
    """Oracle: the network simplex on random integer supplies (large magnitudes, any signs)."""
    b = np.array(values[: rows * cols], dtype=np.int64)
    b[-1] -= b.sum()
    ch, cv = costs
    status, flow, _ = _costscale.grid_cost_scaling(rows, cols, ch, cv, b, _costscale.relabel_cap(rows * cols))
    assert status == 0
    _check_flow(flow, b, rows, cols)
    eu, ev, ew = _grid.grid_edges(rows, cols, float(cv), float(ch))
    assert _exact_cost(flow, ch, cv, rows, cols) == _exact_cost(_flow.edge_flow(b, eu, ev, ew), ch, cv, rows, cols)


def test_cost_scaling_large_noise_grid_matches_the_multiscale_simplex():
    """Oracle: the multiscale network simplex on a 96 x 80 noise grid (the size class cost scaling serves)."""
    rng = np.random.default_rng(30)
    b = _supply(rng, 96, 80, "noise")
    status, flow, _ = _costscale.grid_cost_scaling(96, 80, 1, 1, b, _costscale.relabel_cap(96 * 80))
    assert status == 0
    pred, tflow, _ = _grid._solve(b.reshape(96, 80), 1.0, 1.0, None)
    eu, _, _ = _grid.grid_edges(96, 80, 1.0, 1.0)
    want = _flow.tree_to_edge_flow(pred, tflow, eu, eu.shape[0])
    assert _exact_cost(flow, 1, 1, 96, 80) == _exact_cost(want, 1, 1, 96, 80)


@pytest.mark.parametrize("kind", ["noise", "bumps"])
def test_multiscale_cost_scaling_on_odd_grids_with_unequal_costs_matches_the_simplex(kind):
    """Oracle: the network simplex (edge list, no multiscale) on a 101 x 67 grid with costs 3 : 2, where the
    warm start pads odd sides and recurses twice; exact integer costs must agree."""
    rows, cols, ch, cv = 101, 67, 3, 2
    assert rows * cols > _costscale.WARM_MIN
    b = _supply(np.random.default_rng(34), rows, cols, kind)
    status, flow, _ = _costscale.grid_cost_scaling(rows, cols, ch, cv, b, _costscale.relabel_cap(rows * cols))
    assert status == 0
    _check_flow(flow, b, rows, cols)
    eu, ev, ew = _grid.grid_edges(rows, cols, float(cv), float(ch))
    assert _exact_cost(flow, ch, cv, rows, cols) == _exact_cost(_flow.edge_flow(b, eu, ev, ew), ch, cv, rows, cols)


def test_relabel_limit_raises_instead_of_returning_a_suboptimal_flow(monkeypatch):
    monkeypatch.setattr(_grid, "noise_like", lambda b: True)
    monkeypatch.setattr(_grid, "relabel_cap", lambda n: 1)
    rng = np.random.default_rng(0)
    p, q = _pair(rng, 400, 0.0)
    with pytest.raises(ConvergenceError, match="relabel limit"):
        emd(p, q, Grid((20, 20)))


def test_noise_dispatch_sends_noise_to_cost_scaling_and_smooth_supplies_to_the_simplex():
    """i.i.d. noise of two laws is noise-like; a smooth bump difference and a 20 % smooth share are not.
    Oracle for the value: the multiscale simplex on the same noise input (COST_SCALING off)."""
    rng = np.random.default_rng(33)
    for law in (rng.random, rng.standard_normal):
        b = _flow.quantize(law(64 * 64) ** 2) - _flow.quantize(law(64 * 64) ** 2)
        assert _grid.noise_like(b.reshape(64, 64))
    y, x = np.mgrid[0:64, 0:64] / 64.0
    bump = np.exp(-((y - 0.3) ** 2 + (x - 0.6) ** 2) * 20).ravel()
    smooth = _flow.quantize(bump) - _flow.quantize(np.exp(-((x - 0.2) ** 2) * 9).ravel())
    assert not _grid.noise_like(smooth.reshape(64, 64))
    mixed = (0.2 * smooth.astype(float) + 0.8 * b.astype(float)).astype(np.int64)
    assert not _grid.noise_like(mixed.reshape(64, 64))
    assert not _grid.noise_like(np.zeros((64, 64), np.int64))
    p, q = rng.random((64, 64)) ** 4, rng.random((64, 64)) ** 4
    fast = emd(p, q, Grid((64, 64)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_grid, "COST_SCALING", False)
        assert emd(p, q, Grid((64, 64))) == pytest.approx(fast, rel=1e-12)


def test_integer_cost_ratio_detection():
    """Square cells give 1:1, the 33 x 21 grid of extent (1, 0.7) 11:10, an irrational ratio none."""
    assert _grid.integer_costs(0.5, 0.5) == (1, 1)
    assert _grid.integer_costs(1.0 / 33, 0.7 / 21) == (11, 10)
    assert _grid.integer_costs(1.0, 3.0) == (3, 1)
    assert _grid.integer_costs(1.0, np.pi) is None
    assert _grid.integer_costs(1.0, 1000.0) is None


def test_grid_with_incommensurable_cells_uses_the_simplex_and_matches_pot():
    """Oracle: POT on a 20 x 16 grid whose cell sides have ratio π/3 (no small integer costs)."""
    grid = Grid((20, 16), extent=(1.0, np.pi / 3 * 16 / 20))
    assert _grid.integer_costs(*grid.spacing) is None
    rng = np.random.default_rng(31)
    p, q = _pair(rng, grid.size, 0.2)
    want = ot.emd2(p / p.sum(), q / q.sum(), grid.distances(), numItermax=10**8)
    assert emd(p, q, grid) == pytest.approx(want, rel=1e-9)


def test_exact_optimality_check_rejects_a_feasible_suboptimal_flow():
    """The early stop's check: the optimal flow passes; adding a unit circulation around one cell square
    (still feasible, strictly costlier) leaves a negative residual cycle, so no potentials exist."""
    rows, cols = 12, 10
    b = _supply(np.random.default_rng(32), rows, cols, "noise")
    status, flow, _ = _costscale.grid_cost_scaling(rows, cols, 1, 1, b, _costscale.relabel_cap(rows * cols))
    assert status == 0
    n = rows * cols
    scratch = (np.empty(n, np.int64), np.zeros(n, np.bool_))
    phi = np.zeros(n, np.int64)
    assert _costscale._lower_prices(flow, phi, rows, cols, 1, 1, 10**7, *scratch)
    assert _costscale._certified(flow, phi, b, rows, cols, np.array([1, 1]), 0)
    bad = flow.copy()
    nh = rows * (cols - 1)
    x = 5 * cols + 4  # square x, x+1, x+cols+1, x+cols, traversed clockwise
    bad[5 * (cols - 1) + 4] += 1  # x -> x+1
    bad[nh + x + 1] += 1  # x+1 -> x+1+cols
    bad[6 * (cols - 1) + 4] -= 1  # x+cols+1 -> x+cols
    bad[nh + x] -= 1  # x+cols -> x
    _check_flow(bad, b, rows, cols)
    assert _exact_cost(bad, 1, 1, rows, cols) > _exact_cost(flow, 1, 1, rows, cols)
    phi[:] = 0
    assert not _costscale._lower_prices(bad, phi, rows, cols, 1, 1, 10**5, *scratch)

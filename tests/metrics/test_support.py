"""The EMD of sparse maps on a grid, solved on their supports, against the whole grid.

Oracles: the full ``n × n`` transport linear program over every cell pair with ``Grid.distances()``
(scipy's HiGHS, independent of POT and of the support costs), and the grid's own min-cost flow over its
4-neighbour edges (``_grid.grid_flow``, the path ``emd`` takes for dense maps).
"""

import numpy as np
import pytest
from scipy.optimize import linprog

from dpcloak.domains import Grid
from dpcloak.metrics import _flow, _grid, _support, emd, emd_plan


def _full_lp(p, q, grid):
    """min Σ γ_ij d_ij over all n² cell pairs with marginals p, q (unit mass): the definition of the EMD."""
    n = grid.size
    rows = np.zeros((2 * n, n * n))
    for i in range(n):
        rows[i, i * n:(i + 1) * n] = 1.0
        rows[n + i, i::n] = 1.0
    res = linprog(grid.distances().ravel(), A_eq=rows, b_eq=np.concatenate([p, q]), bounds=(0, None),
                  method="highs")
    assert res.status == 0
    return float(res.fun)


def _grid_flow_emd(p, q, grid):
    hy, hx = grid.spacing
    _, _, ew = _grid.grid_edges(grid.shape[0], grid.shape[1], hy, hx)
    flow = _grid.grid_flow((_flow.quantize(p) - _flow.quantize(q)).reshape(grid.shape), hy, hx)
    return _flow.flow_cost(flow, ew)


def _sparse_pair(rng, n, k_p, k_q):
    p, q = np.zeros(n), np.zeros(n)
    p[rng.choice(n, k_p, replace=False)] = rng.random(k_p) + 0.1
    q[rng.choice(n, k_q, replace=False)] = rng.random(k_q) + 0.1
    return p / p.sum(), q / q.sum()


@pytest.mark.parametrize("metric", ["l1", "l2"])
def test_support_emd_equals_the_full_grid_transport_program(metric):
    """Supports of 1-6 cells on a 6 x 7 grid with unequal cell sides: equal to the n²-pair LP (1e-9); the
    same supports with the cell sides swapped (a wrong ground cost) differ from it."""
    grid = Grid((6, 7), extent=(1.5, 4.2), metric=metric)
    swapped = Grid((6, 7), extent=(6 * 4.2 / 7, 7 * 1.5 / 6), metric=metric)  # h_y and h_x exchanged
    rng = np.random.default_rng(40)
    wrong = 0
    for k_p, k_q in [(1, 1), (2, 5), (6, 3), (4, 4), (1, 6)]:
        p, q = _sparse_pair(rng, grid.size, k_p, k_q)
        assert _support.sparse_enough(p, q, grid)
        want = _full_lp(p, q, grid)
        assert emd(p, q, grid) == pytest.approx(want, rel=1e-9, abs=1e-12)
        wrong += abs(_support.support_plan(p, q, swapped)[0] - want) > 1e-6 * want
    assert wrong >= 4


def test_support_emd_equals_the_grid_min_cost_flow_on_a_large_floor():
    """Ten sources against nine on a 128² floor: the support transport equals the edge flow over the whole
    grid (1e-12); moving one target cell by one column changes the value by more than that."""
    grid = Grid((128, 128), extent=(1.0, 1.0))
    rng = np.random.default_rng(41)
    p, q = _sparse_pair(rng, grid.size, 10, 9)
    want = _grid_flow_emd(p, q, grid)
    assert emd(p, q, grid) == pytest.approx(want, rel=1e-12)
    cell = int(np.flatnonzero(q)[0])
    moved = q.copy()
    moved[cell + (1 if cell % 128 < 127 else -1)] += moved[cell]
    moved[cell] = 0.0
    assert abs(_support.support_plan(p, moved, grid)[0] - want) > 1e-9


def test_support_plan_has_the_marginals_and_replays_its_cost():
    """The plan moves exactly p out and q in, and Σ mass · d with Grid.distances() gives its cost and the EMD."""
    grid = Grid((9, 8), extent=(2.0, 1.0))
    rng = np.random.default_rng(42)
    p, q = _sparse_pair(rng, grid.size, 5, 7)
    plan = emd_plan(p, q, grid)
    assert np.allclose(np.bincount(plan.source, plan.mass, grid.size), p, atol=1e-15)
    assert np.allclose(np.bincount(plan.target, plan.mass, grid.size), q, atol=1e-15)
    replay = float(np.sum(plan.mass * grid.distances()[plan.source, plan.target]))
    assert plan.cost == pytest.approx(replay, rel=1e-12)
    assert plan.cost == pytest.approx(_full_lp(p, q, grid), rel=1e-9)


def test_dense_maps_take_the_grid_flow():
    """Past rows · cols support pairs the grid's flow is used: the support path is never called."""
    grid = Grid((6, 6))
    rng = np.random.default_rng(43)
    p, q = rng.random(36) + 0.01, rng.random(36) + 0.01
    assert not _support.sparse_enough(p, q, grid)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("dpcloak.metrics.earth_mover.support_plan", None)  # calling it would raise
        value = emd(p, q, grid)
    assert value == pytest.approx(_full_lp(p / p.sum(), q / q.sum(), grid), rel=1e-9)

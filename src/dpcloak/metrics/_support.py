r"""Exact EMD between sparse maps on a floor grid, solved on their supports only.

The EMD is a transport problem between the locations that carry mass: with ``S_p`` and ``S_q`` the
cells where ``p`` and ``q`` are positive, every coupling ``γ`` with marginals ``p`` and ``q`` is zero
outside ``S_p × S_q``, so

.. math:: \mathrm{EMD}(p, q) = \min_{\gamma \ge 0,\ \gamma 1 = p_{S_p},\ \gamma^T 1 = q_{S_q}}
          \sum_{x \in S_p,\ y \in S_q} \gamma(x, y)\, d(x, y)

exactly, with ``d`` the grid's metric between cell centres (L1: ``|Δrow| h_y + |Δcol| h_x``, the
length of a shortest 4-neighbour path, which is why the grid min-cost flow of ``_grid`` gives the
same value; L2: their Euclidean distance). The problem has ``|S_p| · |S_q|`` unknowns and is solved
by POT's network simplex with a checked result code (``_dense``); the grid flow has ``2 · rows · cols``
edges whatever the supports. A recovered map of a few sparse sources against another (the bootstrap
of a window's uncertainty: about ten cells each on a ``316²`` floor) is a ``10 × 10`` problem instead of
a ``10⁵``-cell flow.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dpcloak.domains import Grid
from dpcloak.metrics._dense import dense_plan

__all__ = ["sparse_enough", "support_costs", "support_plan"]


def sparse_enough(p: NDArray[np.float64], q: NDArray[np.float64], grid: Grid) -> bool:
    """Whether the transport problem on the supports has at most as many unknowns as the grid has cells.

    Examples
    --------
    >>> import numpy as np
    >>> grid = Grid((4, 4))
    >>> p = np.zeros(16); q = np.zeros(16); p[[0, 5]] = 1.0; q[[3, 9, 15]] = 1.0
    >>> sparse_enough(p, q, grid), sparse_enough(np.ones(16), q, grid)  # 2 x 3 = 6 and 16 x 3 = 48 pairs
    (True, False)
    """
    return int(np.count_nonzero(p)) * int(np.count_nonzero(q)) <= grid.size


def support_costs(grid: Grid, sources: NDArray[np.intp], targets: NDArray[np.intp]) -> NDArray[np.float64]:
    """The grid's ground distances from the cells ``sources`` to the cells ``targets`` (row-major indices).

    Examples
    --------
    >>> import numpy as np
    >>> grid = Grid((3, 4), extent=(3.0, 2.0))  # cells 1.0 high and 0.5 wide
    >>> support_costs(grid, np.array([0]), np.array([0, 11])).tolist()  # (0, 0) to (2, 3): 2 x 1.0 + 3 x 0.5
    [[0.0, 3.5]]
    """
    hy, hx = grid.spacing
    cols = grid.shape[1]
    ry, rx = np.divmod(np.asarray(sources, dtype=np.int64), cols)
    cy, cx = np.divmod(np.asarray(targets, dtype=np.int64), cols)
    dy = np.abs(ry[:, None] - cy[None, :]) * hy
    dx = np.abs(rx[:, None] - cx[None, :]) * hx
    return np.asarray(dy + dx if grid.metric == "l1" else np.hypot(dy, dx), dtype=np.float64)


def support_plan(
    p: NDArray[np.float64], q: NDArray[np.float64], grid: Grid
) -> tuple[float, NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
    """The optimal coupling between unit-mass ``p`` and ``q`` on ``grid`` from their supports (module docstring).

    Returns ``(value, source, target, mass)`` with the plan's non-zero entries as cell indices, as
    :func:`~dpcloak.metrics._dense.dense_plan` does for an explicit cost matrix.

    Examples
    --------
    One unit split over two cells moves to a third cell:

    >>> import numpy as np
    >>> p = np.zeros(12); q = np.zeros(12); p[[0, 11]] = 0.5; q[5] = 1.0
    >>> value, source, target, mass = support_plan(p, q, Grid((3, 4)))
    >>> round(value, 12), source.tolist(), target.tolist(), mass.tolist()  # 1/3 + 1/4, then 1/3 + 2/4 away
    (0.708333333333, [0, 11], [5, 5], [0.5, 0.5])
    """
    sp, sq = np.flatnonzero(p), np.flatnonzero(q)
    value, i, j, mass = dense_plan(p[sp], q[sq], support_costs(grid, sp, sq))
    return value, sp[i], sq[j], mass

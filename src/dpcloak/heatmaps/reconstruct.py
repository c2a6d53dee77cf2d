"""Algorithm 2 of Ghazi et al. (RECONSTRUCT): top-w descent, then an ℓ1 linear program with O(wℓ) variables.

Descent (lines 3–8): at the first measured level every cell is a candidate (T = C_{2^start}); at each
level the min{w, |T_i|} candidates with the largest noisy values form S_i, and T_{i+1} = children(S_i).
ŷ = y'|_S keeps the noisy measurements of the selected cells and sets every other row to 0.

LP (line 9): ŝ = argmin_{s' ≥ 0} ‖ŷ − P s'‖₁ over the measured rows. As noted in §4 ("Implementation
details"), only one variable per cell *left out* at each stage is needed, plus one per selected cell
of the finest level: every other cell lies inside one of those regions, and a region's mass m only
enters the objective through (a) the rows of its selected ancestors and (b) the rows of the region
and of all its descendants, whose targets are 0, costing m Σ_{t=j}^{ℓ} 2^-t for a region at level j
whatever the mass's position inside it. With u_v ≥ |ŷ_v − (P s')_v| for the selected rows the LP is

    minimise Σ_{v∈S} 2^-lev(v) u_v + Σ_{regions r} (Σ_{t=lev(r)}^{ℓ} 2^-t) m_r
    s.t.     −u_v ≤ y_v − Σ_{r ⊆ v} m_r ≤ u_v,  m ≥ 0,

solved with HiGHS (:func:`scipy.optimize.linprog`). Any s' with these region masses is optimal; the
mass of a left-out region is spread uniformly over its pixels (a documented choice: the objective is
indifferent to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, sparse

from dpcloak._validation import check_int
from dpcloak.errors import ConvergenceError, InvalidParameterError
from dpcloak.heatmaps.aggregate import NoisyPyramid
from dpcloak.heatmaps.pyramid import children

__all__ = ["Reconstruction", "reconstruct", "top_w_descent"]


@dataclass(frozen=True)
class Reconstruction:
    """Result of RECONSTRUCT.

    Attributes
    ----------
    estimate : ndarray, shape (Δ, Δ)
        ŝ ≥ 0 (unnormalised; its total estimates n).
    selected : tuple of ndarray
        S_i (flat cell indices) for each measured level, coarsest first.
    n_variables : int
        Region variables of the LP (left-out cells + finest selected cells).
    objective : float
        ‖ŷ − P ŝ‖₁ over the measured rows.
    message : str
        HiGHS status message.
    region_levels, region_cells : ndarray of int64
        The LP's regions: level j and flat cell index (at level j) of each left-out cell and finest
        selected cell.
    region_masses : ndarray
        Their optimal masses m_r ≥ 0 (``estimate`` spreads each uniformly over its pixels).

    Examples
    --------
    Returned by :func:`reconstruct`; its layers add up to the estimate:

    >>> from dpcloak.heatmaps import bound_users, hierarchical_laplace
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=8)
    >>> rec = reconstruct(hierarchical_laplace(agg, epsilon=1.0, w=4, noise="float", rng=0), w=4)
    >>> isinstance(rec, Reconstruction), bool(np.allclose(sum(layer for _, layer in rec.layers()), rec.estimate))
    (True, True)
    """

    estimate: NDArray[np.float64]
    selected: tuple[NDArray[np.int64], ...]
    n_variables: int
    objective: float
    message: str
    region_levels: NDArray[np.int64]
    region_cells: NDArray[np.int64]
    region_masses: NDArray[np.float64]

    def layers(self) -> tuple[tuple[int, NDArray[np.float64]], ...]:
        """``estimate`` split by region size: (block side in pixels, that level's regions spread uniformly)."""
        ell = self.estimate.shape[0].bit_length() - 1
        return _spread_layers(self.region_masses, self.region_levels, self.region_cells, ell)


CellSets = tuple[NDArray[np.int64], ...]


def top_w_descent(noisy: NoisyPyramid, *, w: int) -> tuple[CellSets, CellSets]:
    """Lines 3–7 of RECONSTRUCT: the selected sets S_i and the left-out sets T_i \\ S_i, coarsest first.

    Ties are broken by the smaller flat index (stable sort), so the descent is deterministic.

    Examples
    --------
    >>> from dpcloak.heatmaps import bound_users, hierarchical_laplace
    >>> agg = bound_users(range(40), [0.1] * 30 + [0.8] * 10, [0.1] * 30 + [0.8] * 10, resolution=4)
    >>> noisy = hierarchical_laplace(agg, epsilon=10.0, w=1, noise="float", rng=0)
    >>> selected, left_out = top_w_descent(noisy, w=1)
    >>> [s.tolist() for s in selected]  # the densest cell at each level, coarsest first
    [[0], [0], [0]]
    """
    width = check_int("w", w, minimum=1)
    start = noisy.start_level
    candidates = np.arange(4**start, dtype=np.int64)
    selected: list[NDArray[np.int64]] = []
    left_out: list[NDArray[np.int64]] = []
    for k, values in enumerate(noisy.levels):
        vals = values.ravel()[candidates]
        order = np.argsort(-vals, kind="stable")
        keep = min(width, candidates.size)
        selected.append(np.sort(candidates[order[:keep]]))
        left_out.append(np.sort(candidates[order[keep:]]))
        if k + 1 < len(noisy.levels):
            candidates = children(selected[-1], 1 << (start + k))
    return tuple(selected), tuple(left_out)


def reconstruct(noisy: NoisyPyramid, *, w: int = 20) -> Reconstruction:
    """RECONSTRUCT (Ghazi et al., Algorithm 2) on the release of Algorithm 1.

    Parameters
    ----------
    noisy : NoisyPyramid
        Output of :func:`~dpcloak.heatmaps.aggregate.hierarchical_laplace`.
    w : int
        Cells kept per level (the same w that fixed the budgets).

    Returns
    -------
    Reconstruction

    Privacy guarantee
    -----------------
    Post-processing of the ε-DP release ``noisy``: the output is ε-DP for the same neighbouring
    relation.

    Examples
    --------
    >>> from dpcloak.heatmaps import bound_users, hierarchical_laplace
    >>> agg = bound_users([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], resolution=8)
    >>> rec = reconstruct(hierarchical_laplace(agg, epsilon=1.0, w=4, noise="float", rng=0), w=4)
    >>> rec.estimate.shape, bool(np.all(rec.estimate >= 0))  # unnormalised, non-negative
    ((8, 8), True)
    """
    if not isinstance(noisy, NoisyPyramid):
        raise InvalidParameterError(
            f"noisy must be a NoisyPyramid from hierarchical_laplace, got {type(noisy).__name__}",
            parameter="noisy", allowed="NoisyPyramid", got=type(noisy).__name__
        )
    selected, left_out = top_w_descent(noisy, w=w)
    start, ell = noisy.start_level, noisy.depth
    levels = list(range(start, ell + 1))

    # Region variables: (level, flat cell) for left-out cells at every level and selected finest cells.
    reg_level = np.concatenate([np.full(lo.size, lev, dtype=np.int64) for lev, lo in zip(levels, left_out, strict=True)]
                               + [np.full(selected[-1].size, ell, dtype=np.int64)])
    reg_cell = np.concatenate([*left_out, selected[-1]])
    n_reg = reg_cell.size
    tail = np.array([sum(2.0**-t for t in range(j, ell + 1)) for j in range(ell + 1)])
    reg_penalty = np.concatenate([tail[reg_level[: n_reg - selected[-1].size]], np.zeros(selected[-1].size)])

    # Node rows: the selected cells S_i, each with weight 2^-i and target y_i(v).
    node_offset = np.cumsum([0] + [s.size for s in selected])
    n_nodes = int(node_offset[-1])
    node_weight = np.concatenate([np.full(s.size, 2.0**-lev) for lev, s in zip(levels, selected, strict=True)])
    node_target = np.concatenate([vals.ravel()[s] for vals, s in zip(noisy.levels, selected, strict=True)])

    rows: list[NDArray[np.int64]] = []
    cols: list[NDArray[np.int64]] = []
    reg_row, reg_col = np.divmod(reg_cell, np.left_shift(1, reg_level))
    for k, lev in enumerate(levels):
        # A region at level j lies under a selected node at level lev when j > lev (left-out regions, whose
        # ancestors are all selected) or when it is itself that node (finest selected cells, j = ℓ = lev).
        idx = np.flatnonzero(reg_level > lev) if lev < ell else np.arange(n_reg - selected[-1].size, n_reg)
        shift = reg_level[idx] - lev
        anc = (reg_row[idx] >> shift) * (1 << lev) + (reg_col[idx] >> shift)
        pos = np.searchsorted(selected[k], anc)
        rows.append(node_offset[k] + pos)
        cols.append(idx)
    a = sparse.csr_matrix(
        (np.ones(sum(r.size for r in rows)), (np.concatenate(rows), np.concatenate(cols))), shape=(n_nodes, n_reg)
    )
    eye = sparse.identity(n_nodes, format="csr")
    a_ub = sparse.vstack([sparse.hstack([-a, -eye]), sparse.hstack([a, -eye])], format="csr")
    b_ub = np.concatenate([-node_target, node_target])
    c = np.concatenate([reg_penalty, node_weight])
    res = optimize.linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if res.status != 0:
        raise ConvergenceError(f"RECONSTRUCT linear program failed: {res.message}")
    mass = np.maximum(res.x[:n_reg], 0.0)
    estimate = _spread(mass, reg_level, reg_cell, ell)
    return Reconstruction(
        estimate=estimate, selected=selected, n_variables=n_reg, objective=float(res.fun), message=str(res.message),
        region_levels=reg_level, region_cells=reg_cell, region_masses=mass,
    )


def _spread_layers(
    mass: NDArray[np.float64], level: NDArray[np.int64], cell: NDArray[np.int64], ell: int
) -> tuple[tuple[int, NDArray[np.float64]], ...]:
    """Each level's regions with their mass placed uniformly over their pixels: (block side, Δ × Δ array)."""
    delta = 1 << ell
    out = []
    for lev in np.unique(level[mass > 0]):
        pick = (level == lev) & (mass > 0)
        side = 1 << int(lev)
        coarse = np.zeros(side * side)
        np.add.at(coarse, cell[pick], mass[pick])
        block = delta // side
        out.append((block, np.kron(coarse.reshape(side, side), np.full((block, block), 1.0 / (block * block)))))
    return tuple(out)


def _spread(mass: NDArray[np.float64], level: NDArray[np.int64], cell: NDArray[np.int64], ell: int) -> NDArray[Any]:
    """Place each region's mass uniformly over its pixels of the Δ × Δ grid."""
    delta = 1 << ell
    return sum((layer for _, layer in _spread_layers(mass, level, cell, ell)), np.zeros((delta, delta)))

"""Exact min-cost transshipment over the edges of a graph (temporary LP path)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dpcloak.errors import ConvergenceError

__all__ = ["edge_flow"]


def edge_flow(
    b: NDArray[np.float64], edges: NDArray[np.intp], weights: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]]:
    """Minimise ``Σ w_e |f_e|`` subject to ``div f = b`` (``Σ b = 0``); returns (cost, signed edge flow)."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    n, e = len(b), len(edges)
    k = np.arange(e)
    rows = np.concatenate([edges[:, 0], edges[:, 1], edges[:, 1], edges[:, 0]])
    cols = np.concatenate([k, k, k + e, k + e])
    vals = np.concatenate([np.ones(e), -np.ones(e), np.ones(e), -np.ones(e)])
    a = sp.csr_matrix((vals, (rows, cols)), shape=(n, 2 * e))
    res = linprog(np.concatenate([weights, weights]), A_eq=a, b_eq=b, bounds=(0, None), method="highs-ds")
    if res.status != 0:
        raise ConvergenceError(f"min-cost flow LP failed: {res.message}")
    flow = res.x[:e] - res.x[e:]
    return float(np.sum(weights * np.abs(flow))), flow

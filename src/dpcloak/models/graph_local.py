r"""Graph diffusion read at a subset of nodes, computed locally: ``A = exp(−τ L)[S, :]``.

With sensors on ``m`` of ``n`` nodes the model is the ``m x n`` block of the heat kernel
``K = exp(−τ L)``. ``K`` is symmetric, so row ``s`` of the block is ``K e_s``, the heat released at
node ``s`` after time ``τ``, and at moderate ``τ`` it is negligible a few hops away. Each row is
computed on its own by uniformization: with ``c`` the largest weighted degree, ``P = I − L / c`` is
symmetric, entrywise non-negative and has unit column sums, and

.. math:: K e_s = \sum_{k \ge 0} \pi_k\, P^k e_s, \qquad \pi_k = e^{-τc} (τc)^k / k!

(Poisson weights). Every term is non-negative and ``‖P^k e_s‖₁ = 1``, so the truncation is
certified by exact bookkeeping: stopping after ``K`` terms loses ``ℓ1`` mass ``Σ_{k>K} π_k`` (the
Poisson tail), and dropping an entry ``x`` of ``P^k e_s`` loses at most ``x`` times the weight
still to come (entries are dropped when that product is below :data:`PRUNE`). The computed row
is an entrywise lower bound of the true one and its ``ℓ1`` deficit ``err_s`` is known. A column
``j`` of the block then has an error vector with ``ℓ2 ≤ ℓ1 ≤ Σ_s err_s =:``
:attr:`LocalGraphDiffusion.truncation_error`, and :meth:`LocalGraphDiffusion.column_difference_norms`
adds twice that, so Δ2 computed from it is never below the exact value.

Work is ``m`` times the local support times the number of terms (``≈ τc + 10 √(τc)``), memory
the block's non-zeros. Before the full computation a probe of :data:`PROBE` rows estimates both;
above :data:`MEMORY_LIMIT` or :data:`WORK_LIMIT` the model is refused with the estimate named.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit
from numpy.typing import NDArray
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.special import gammaln

from dpcloak._validation import check_array
from dpcloak.domains.graph import GraphDomain
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import LinearModel

__all__ = ["LocalGraphDiffusion", "MEMORY_LIMIT", "WORK_LIMIT"]

#: Poisson tail left out of each row (ℓ1 mass).
TAIL = 1e-16
#: An entry ``v`` of ``P^k e_s`` is dropped when ``v`` times the Poisson weight still to come is below
#: this (the product is added to the row's error bound).
PRUNE = 1e-18
#: Rows computed first to estimate memory and work.
PROBE = 16
#: Refuse when the block (with its transposed copy and one chunk of column differences) would need
#: more than this many bytes.
MEMORY_LIMIT = 6 * 2**30
#: Refuse when the estimated number of neighbour updates exceeds this (about 40 s on one core here).
WORK_LIMIT = 5e9
#: Bytes per stored non-zero: value and index in the row-major block and in its transpose.
_BYTES_PER_NONZERO = 2 * (8 + 4) + 8


def _poisson(lam: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Weights ``π_k`` for ``k = 0 .. K`` and tails ``T_k = Σ_{j ≥ k} π_j`` for ``k = 0 .. K + 1``.

    ``K`` is the first index with ``T_{K+1} ≤`` :data:`TAIL`. Tails are summed from the far end;
    the mass beyond the last computed index (``top``, where ``π`` falls geometrically with ratio
    ``λ / (top + 1) < 1``) is bounded by a geometric series and added.
    """
    top = int(lam + 12.0 * math.sqrt(lam) + 60.0)
    k = np.arange(top + 1, dtype=np.float64)
    pmf = np.exp(-lam + k * math.log(lam) - gammaln(k + 1.0))
    beyond = pmf[-1] * (lam / (top + 1)) / (1.0 - lam / (top + 1))
    tail = np.cumsum(pmf[::-1])[::-1] + beyond
    tail = np.append(tail, beyond)
    last = int(np.flatnonzero(tail[1:] <= TAIL)[0])
    return pmf[: last + 1], tail[: last + 2]


@njit(cache=True)
def _rows(
    indptr: NDArray[np.int64], indices: NDArray[np.int64], weight: NDArray[np.float64], diag: NDArray[np.float64],
    sources: NDArray[np.int64], pmf: NDArray[np.float64], tail: NDArray[np.float64], prune: float,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], int]:
    """Rows ``K e_s`` for ``s`` in ``sources``: (indptr, indices, values, ℓ1 error per row, node visits).

    An entry ``v`` of ``P^k e_s`` is dropped when ``v · T_k < prune`` (``T_k`` the weight still to
    come), which bounds what it could add to the row; the dropped ``v · T_k`` is added to the error.
    """
    n = diag.shape[0]
    nsrc = sources.shape[0]
    cur = np.zeros(n)
    nxt = np.zeros(n)
    acc = np.zeros(n)
    in_nxt = np.zeros(n, np.bool_)
    in_acc = np.zeros(n, np.bool_)
    sup = np.empty(n, np.int64)
    nsup = np.empty(n, np.int64)
    acc_sup = np.empty(n, np.int64)
    ptr = np.zeros(nsrc + 1, np.int64)
    cap = 1 << 16
    out_idx = np.empty(cap, np.int64)
    out_val = np.empty(cap)
    err = np.zeros(nsrc)
    work = 0
    terms = pmf.shape[0]
    for r in range(nsrc):
        s = sources[r]
        cur[s] = 1.0
        sup[0] = s
        ns = 1
        na = 0
        lost = tail[terms]
        for k in range(terms):
            if k > 0:  # cur <- P cur
                m = 0
                for a in range(ns):
                    x = sup[a]
                    vx = cur[x]
                    cur[x] = 0.0
                    if not in_nxt[x]:
                        in_nxt[x] = True
                        nsup[m] = x
                        m += 1
                    nxt[x] += diag[x] * vx
                    for q in range(indptr[x], indptr[x + 1]):
                        y = indices[q]
                        if not in_nxt[y]:
                            in_nxt[y] = True
                            nsup[m] = y
                            m += 1
                        nxt[y] += weight[q] * vx
                    work += indptr[x + 1] - indptr[x] + 1
                ns = 0
                dropped = 0.0
                floor = prune / tail[k]
                for a in range(m):
                    y = nsup[a]
                    in_nxt[y] = False
                    v = nxt[y]
                    nxt[y] = 0.0
                    if v < floor:
                        dropped += v
                    else:
                        cur[y] = v
                        sup[ns] = y
                        ns += 1
                lost += dropped * tail[k]
            w = pmf[k]
            for a in range(ns):
                x = sup[a]
                if not in_acc[x]:
                    in_acc[x] = True
                    acc_sup[na] = x
                    na += 1
                acc[x] += w * cur[x]
        for a in range(ns):
            cur[sup[a]] = 0.0
        base = ptr[r]
        if base + na > cap:
            while base + na > cap:
                cap *= 2
            grown_idx = np.empty(cap, np.int64)
            grown_val = np.empty(cap)
            grown_idx[:base] = out_idx[:base]
            grown_val[:base] = out_val[:base]
            out_idx, out_val = grown_idx, grown_val
        acc_sup[:na].sort()
        for a in range(na):
            x = acc_sup[a]
            out_idx[base + a] = x
            out_val[base + a] = acc[x]
            acc[x] = 0.0
            in_acc[x] = False
        ptr[r + 1] = base + na
        err[r] = lost
    total = ptr[nsrc]
    return ptr, out_idx[:total].copy(), out_val[:total].copy(), err, work


class LocalGraphDiffusion(LinearModel):
    """``A = exp(−τ L)[S, :]``: graph diffusion read by sensors on the nodes ``S`` (module docstring).

    Attributes
    ----------
    matrix : scipy.sparse.csr_array
        The computed ``(m, n)`` block (entrywise at most the true one).
    truncation_error : float
        Certified bound on the ℓ2 error of every column of the block.

    Examples
    --------
    Built by :func:`~dpcloak.models.graph_diffusion` when sensors are given: four sensors on a
    30 × 30 grid graph, checked against the rows of the dense ``expm``:

    >>> import networkx as nx
    >>> from dpcloak.models import graph_diffusion
    >>> grid = nx.grid_2d_graph(30, 30)
    >>> model = graph_diffusion(grid, 2.0, sensors=[0, 45, 450, 899])
    >>> type(model).__name__, model.shape, model.truncation_error < 1e-10
    ('LocalGraphDiffusion', (4, 900), True)
    >>> dense = graph_diffusion(grid, 2.0).todense()[[0, 45, 450, 899]]
    >>> bool(np.abs(model.todense() - dense).max() <= model.truncation_error)
    True
    """

    def __init__(self, domain: GraphDomain, tau: float, sensors: NDArray[np.intp]) -> None:
        super().__init__(shape=(len(sensors), domain.size), domain=domain, sensor_positions=sensors)
        self.tau = tau
        self.graph_domain = domain
        laplacian = sp.csr_array(domain.laplacian())
        degree = laplacian.diagonal()
        rate = float(degree.max())
        pmf, tail = _poisson(tau * rate)
        off = sp.csr_array(sp.diags(degree) - laplacian)  # W, the conductances
        off.eliminate_zeros()
        # work in reverse Cuthill-McKee order: neighbours close in memory (2.7x on a random geometric graph)
        perm = reverse_cuthill_mckee(sp.csr_matrix(off), symmetric_mode=True).astype(np.intp)
        rank = np.empty_like(perm)
        rank[perm] = np.arange(len(perm))
        off = sp.csr_array(off[perm][:, perm])
        off.sort_indices()
        args = (
            off.indptr.astype(np.int64), off.indices.astype(np.int64), off.data / rate, 1.0 - degree[perm] / rate,
        )
        order = np.argsort(rank[sensors], kind="stable")  # rows in memory order too
        local = rank[sensors][order].astype(np.int64)
        probe = local[np.linspace(0, len(local) - 1, min(PROBE, len(local))).astype(np.intp)]
        ptr, _, _, _, work = _rows(*args, probe, pmf, tail, PRUNE)
        scale = len(sensors) / len(probe)
        need_bytes = float(ptr[-1]) * scale * _BYTES_PER_NONZERO
        need_work = float(work) * scale
        if need_bytes > MEMORY_LIMIT or need_work > WORK_LIMIT:
            raise InvalidParameterError(
                f"graph diffusion with {len(sensors)} sensors on {domain.size} nodes at tau={tau:g} is estimated "
                f"to need {need_bytes / 2**30:.1f} GiB and {need_work:.2g} neighbour updates (limits "
                f"{MEMORY_LIMIT / 2**30:.0f} GiB, {WORK_LIMIT:.2g}); use fewer sensors or a shorter tau",
                parameter="graph"
            )
        ptr, idx, val, err, _ = _rows(*args, local, pmf, tail, PRUNE)
        back = np.empty_like(order)
        back[order] = np.arange(len(order))
        block = sp.csr_array((val, perm[idx], ptr), shape=self.shape)[back]
        block.sort_indices()
        self.matrix = block
        self._by_column = sp.csr_array(self.matrix.T)
        self.truncation_error = float(err.sum())

    def _matvec(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.matrix @ x)

    def _rmatvec(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.matrix.T @ y)

    def matmat(self, x: Any) -> NDArray[np.float64]:
        return np.asarray(self.matrix @ check_array("X", x, shape=(self.shape[1], None)))

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        return np.asarray(self._by_column[np.asarray(index, dtype=np.intp)].toarray().T)

    def column_difference_norms(self, pairs: NDArray[np.intp], *, chunk: int = 65536) -> NDArray[np.float64]:
        """``‖A_i − A_j‖₂`` rounded up by ``2 ·`` :attr:`truncation_error`: never below the exact value."""
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        out = np.empty(len(pairs))
        for start in range(0, len(pairs), chunk):
            block = pairs[start : start + chunk]
            diff = self._by_column[block[:, 0]] - self._by_column[block[:, 1]]
            out[start : start + len(block)] = np.sqrt(np.asarray(diff.multiply(diff).sum(axis=1)).ravel())
        return out + 2.0 * self.truncation_error

    def todense(self) -> NDArray[np.float64]:
        return np.asarray(self.matrix.toarray())

    def __repr__(self) -> str:
        return f"LocalGraphDiffusion(m={self.shape[0]}, n={self.shape[1]}, tau={self.tau:g})"

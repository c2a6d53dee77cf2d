"""Exact min-cost transshipment over the edges of a domain, and its decomposition into a coupling.

Masses are converted to int64 units (``UNIT = 2**60`` for the total) so that the network simplex
moves exact integers; the quantisation changes each entry by at most one unit, i.e. the EMD by at
most ``size · 2**-60 · diameter`` — far below double-precision rounding of the result.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from dpcloak.errors import ConvergenceError, DisconnectedGraphError
from dpcloak.metrics._simplex import network_simplex

__all__ = [
    "UNIT", "EPS_REL", "STATUS", "pivot_cap", "quantize", "edge_flow", "tree_to_edge_flow", "flow_cost", "decompose"
]

UNIT = 2**60
#: Reduced costs above ``-EPS_REL * max edge length`` count as non-negative. Potentials are sums
#: of edge lengths along tree paths and drift by rounding (~1e-13 relative on 256² grids), so the
#: tolerance must sit above that to rule out pivots on rounding noise. On grids with square cells
#: every true reduced cost is a multiple of the cell size, so nothing real is ignored; in general
#: the value exceeds the optimum by at most ``EPS_REL * max edge`` per unit of mass per edge hop.
EPS_REL = 1e-9


#: Meaning of the network simplex's non-zero status codes.
STATUS = {1: "the graph is disconnected", 2: "the pivot limit was reached", 3: "a negative-cost cycle was found"}


def pivot_cap(n: int) -> int:
    """Pivot limit of one solve: far above the ~n pivots observed, a guard against endless loops."""
    return 100 * n + 1_000_000


def quantize(x: NDArray[np.float64], total: int = UNIT) -> NDArray[np.int64]:
    """Non-negative integers proportional to ``x`` (``Σ x > 0``) summing exactly to ``total``."""
    q = np.floor(x * (total / np.sum(x))).astype(np.int64)
    q[np.argmax(q)] += total - int(q.sum())
    return q


def edge_flow(
    supply: NDArray[np.int64], eu: NDArray[np.int64], ev: NDArray[np.int64], ew: NDArray[np.float64], *, root: int = 0
) -> NDArray[np.int64]:
    """Signed optimal integer flow per edge (positive from ``eu`` to ``ev``) for ``div f = supply``."""
    n = supply.shape[0]
    status, _, pred, tflow, _, _ = network_simplex(
        n, eu, ev, ew, supply, root, EPS_REL * float(np.max(ew, initial=0.0)), pivot_cap(n), np.zeros(0, np.int64)
    )
    if status == 1:
        raise DisconnectedGraphError("the domain's graph must be connected for the EMD")
    if status != 0:
        raise ConvergenceError(f"network simplex stopped before optimality: {STATUS[status]}", parameter="network")
    return tree_to_edge_flow(pred, tflow, eu, eu.shape[0])


def tree_to_edge_flow(
    pred: NDArray[np.int64], tflow: NDArray[np.int64], eu: NDArray[np.int64], m: int
) -> NDArray[np.int64]:
    """Signed edge flows (positive from ``eu`` to ``ev``) from per-node tree flows (node → parent)."""
    flow = np.zeros(m, np.int64)
    nodes = np.flatnonzero(pred >= 0)
    e = pred[nodes]
    flow[e] = np.where(eu[e] == nodes, tflow[nodes], -tflow[nodes])
    return flow


def flow_cost(flow: NDArray[np.int64], ew: NDArray[np.float64], unit: float = UNIT) -> float:
    """``Σ |f_e| w_e`` in mass units (integer flow divided by ``unit``)."""
    return float(np.sum(np.abs(flow).astype(np.float64) * ew) / unit)


@njit(cache=True)
def decompose(
    eu: NDArray[np.int64], ev: NDArray[np.int64], flow: NDArray[np.int64], pi: NDArray[np.int64], qi: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Split an acyclic optimal flow from ``pi`` to ``qi`` into ``(source, target, amount)`` parcels.

    Mass present in both vectors stays put; the rest is routed through the nodes in topological
    order of the flow, each node first serving its own demand, then forwarding parcels (first in,
    first out) along its outgoing flow edges.
    """
    n = pi.shape[0]
    m = eu.shape[0]
    indeg = np.zeros(n, np.int64)
    outdeg = np.zeros(n + 1, np.int64)
    for e in range(m):
        if flow[e] > 0:
            outdeg[eu[e] + 1] += 1
            indeg[ev[e]] += 1
        elif flow[e] < 0:
            outdeg[ev[e] + 1] += 1
            indeg[eu[e]] += 1
    for i in range(n):
        outdeg[i + 1] += outdeg[i]
    fill = outdeg[:-1].copy()
    out_head = np.empty(outdeg[n], np.int64)
    out_amt = np.empty(outdeg[n], np.int64)
    for e in range(m):
        if flow[e] != 0:
            a, b = (eu[e], ev[e]) if flow[e] > 0 else (ev[e], eu[e])
            out_head[fill[a]] = b
            out_amt[fill[a]] = abs(flow[e])
            fill[a] += 1
    cap = 2 * n + 2 * m + 1
    p_org = np.empty(cap, np.int64)
    p_amt = np.empty(cap, np.int64)
    p_nxt = np.full(cap, -1, np.int64)
    head = np.full(n, -1, np.int64)
    tail = np.full(n, -1, np.int64)
    used = 0
    r_src = np.empty(cap + n, np.int64)
    r_dst = np.empty(cap + n, np.int64)
    r_amt = np.empty(cap + n, np.int64)
    nrec = 0
    for i in range(n):
        keep = min(pi[i], qi[i])
        if keep > 0:
            r_src[nrec], r_dst[nrec], r_amt[nrec] = i, i, keep
            nrec += 1
    queue = np.empty(n, np.int64)
    qh, qt = 0, 0
    for i in range(n):
        if indeg[i] == 0:
            queue[qt] = i
            qt += 1
    while qh < qt:
        x = queue[qh]
        qh += 1
        net = pi[x] - qi[x]
        if net > 0:  # append own parcel
            p_org[used], p_amt[used], p_nxt[used] = x, net, -1
            if tail[x] >= 0:
                p_nxt[tail[x]] = used
            else:
                head[x] = used
            tail[x] = used
            used += 1
        need = -net if net < 0 else 0
        while need > 0 and head[x] >= 0:
            h = head[x]
            take = min(need, p_amt[h])
            r_src[nrec], r_dst[nrec], r_amt[nrec] = p_org[h], x, take
            nrec += 1
            need -= take
            p_amt[h] -= take
            if p_amt[h] == 0:
                head[x] = p_nxt[h]
                if head[x] < 0:
                    tail[x] = -1
        for k in range(outdeg[x], outdeg[x + 1]):
            y = out_head[k]
            send = out_amt[k]
            while send > 0 and head[x] >= 0:
                h = head[x]
                if p_amt[h] <= send:  # move the whole parcel
                    send -= p_amt[h]
                    head[x] = p_nxt[h]
                    if head[x] < 0:
                        tail[x] = -1
                    moved = h
                else:  # split it
                    p_amt[h] -= send
                    moved = used
                    p_org[used], p_amt[used] = p_org[h], send
                    used += 1
                    send = 0
                p_nxt[moved] = -1
                if tail[y] >= 0:
                    p_nxt[tail[y]] = moved
                else:
                    head[y] = moved
                tail[y] = moved
            indeg[y] -= 1
            if indeg[y] == 0:
                queue[qt] = y
                qt += 1
    return r_src[:nrec], r_dst[:nrec], r_amt[:nrec]

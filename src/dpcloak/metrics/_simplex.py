"""Network simplex for uncapacitated min-cost transshipment on a sparse undirected graph (numba).

Every edge ``{u, v}`` of length ``w`` carries two uncapacitated arcs ``u→v`` and ``v→u`` of cost
``w``. Because arcs are uncapacitated in both directions *any* spanning tree is a feasible basis,
so the solver starts from a breadth-first tree, keeps it strongly feasible (zero-flow tree arcs
point to the root; the leaving arc is the last blocking arc of the pivot cycle counted from its
apex, Ahuja–Magnanti–Orlin §11.5, which prevents cycling) and pivots with a block-search rule
(the most violated arc of the next :data:`BLOCK` arcs that contain a violated one).

Supplies are int64 (the caller scales unit masses by ``2**60``), so flows are exact integers and
the ratio test has no rounding; only potentials and costs are floating point.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

__all__ = ["network_simplex"]

_INF = np.int64(2**62)
#: Arcs per pricing block. Measured on 128² and 256² grids, tiny blocks beat LEMON's √m by 3-6x:
#: the scan walks the edge list in grid order, so successive pivots stay local and cheap.
BLOCK = 4


@njit(cache=True)
def _csr(n: int, eu: NDArray[np.int64], ev: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    m = eu.shape[0]
    start = np.zeros(n + 1, np.int64)
    for e in range(m):
        start[eu[e] + 1] += 1
        start[ev[e] + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    edge = np.empty(2 * m, np.int64)
    for e in range(m):
        edge[fill[eu[e]]] = e
        fill[eu[e]] += 1
        edge[fill[ev[e]]] = e
        fill[ev[e]] += 1
    return start, edge


@njit(cache=True)
def _unlink(x: int, parent: NDArray[np.int64], first: NDArray[np.int64], nxt: NDArray[np.int64],
            prv: NDArray[np.int64]) -> None:
    p = parent[x]
    if prv[x] >= 0:
        nxt[prv[x]] = nxt[x]
    else:
        first[p] = nxt[x]
    if nxt[x] >= 0:
        prv[nxt[x]] = prv[x]
    nxt[x] = -1
    prv[x] = -1


@njit(cache=True)
def _link(x: int, parent: NDArray[np.int64], first: NDArray[np.int64], nxt: NDArray[np.int64],
          prv: NDArray[np.int64]) -> None:
    p = parent[x]
    f = first[p]
    nxt[x] = f
    prv[x] = -1
    if f >= 0:
        prv[f] = x
    first[p] = x


@njit(cache=True)
def network_simplex(
    n: int,
    eu: NDArray[np.int64],
    ev: NDArray[np.int64],
    ew: NDArray[np.float64],
    supply: NDArray[np.int64],
    root: int,
    eps: float,
    max_pivots: int,
    tree: NDArray[np.int64],
) -> tuple[int, NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], int]:
    """Solve ``min Σ w_e |f_e|`` s.t. ``div f = supply`` (``Σ supply = 0``) on a connected graph.

    ``tree`` lists the edge ids of an initial spanning tree (a warm start); when empty the solver
    starts from a breadth-first tree of the whole graph rooted at ``root``.

    Returns ``(status, parent, pred_edge, signed_tree_flow, potentials, pivots)``: ``status`` is
    0 (optimal), 1 (graph disconnected) or 2 (pivot cap reached). ``signed_tree_flow[x]`` is the
    integer flow on the edge ``pred_edge[x]`` between ``x`` and ``parent[x]``, positive when it
    runs from ``x`` to its parent.
    """
    m = eu.shape[0]
    if tree.shape[0] > 0:
        start, local = _csr(n, eu[tree], ev[tree])
        adj_edge = tree[local]
    else:
        start, adj_edge = _csr(n, eu, ev)
    parent = np.full(n, -1, np.int64)
    pred = np.full(n, -1, np.int64)
    up = np.zeros(n, np.bool_)
    flow = np.zeros(n, np.int64)
    pot = np.zeros(n, np.float64)
    depth = np.zeros(n, np.int64)
    first = np.full(n, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    prv = np.full(n, -1, np.int64)

    # breadth-first spanning tree and its (unique, feasible) tree flow
    order = np.empty(n, np.int64)
    seen = np.zeros(n, np.bool_)
    order[0] = root
    seen[root] = True
    head, tail = 0, 1
    while head < tail:
        x = order[head]
        head += 1
        for k in range(start[x], start[x + 1]):
            e = adj_edge[k]
            y = ev[e] if eu[e] == x else eu[e]
            if not seen[y]:
                seen[y] = True
                parent[y] = x
                pred[y] = e
                order[tail] = y
                tail += 1
    if tail < n:
        return 1, parent, pred, flow, pot, 0
    s = supply.copy()
    for idx in range(n - 1, 0, -1):
        x = order[idx]
        s[parent[x]] += s[x]
        up[x] = s[x] >= 0
        flow[x] = s[x] if s[x] >= 0 else -s[x]
    for idx in range(1, n):
        x = order[idx]
        p = parent[x]
        pot[x] = pot[p] - ew[pred[x]] if up[x] else pot[p] + ew[pred[x]]
        depth[x] = depth[p] + 1
        _link(x, parent, first, nxt, prv)

    path = np.empty(n, np.int64)
    old_e = np.empty(n, np.int64)
    old_up = np.empty(n, np.bool_)
    old_f = np.empty(n, np.int64)
    stack = np.empty(n, np.int64)
    block = BLOCK
    next_e = 0
    pivots = 0
    while True:
        # block search for the most violated arc: rc(u→v) = w + π_u − π_v, and min over both
        # directions is w − |π_u − π_v| (tree arcs give 0, their reverses 2w).
        best = -eps
        best_e = -1
        e = next_e
        cnt = 0
        for _ in range(m):
            rc = ew[e] - abs(pot[eu[e]] - pot[ev[e]])
            if rc < best:
                best = rc
                best_e = e
            e += 1
            if e == m:
                e = 0
            cnt += 1
            if cnt == block:
                if best_e >= 0:
                    break
                cnt = 0
        if best_e < 0:
            break
        if pivots >= max_pivots:
            return 2, parent, pred, flow, pot, pivots
        pivots += 1
        next_e = e
        if pot[ev[best_e]] - pot[eu[best_e]] > 0:
            k, l = eu[best_e], ev[best_e]
        else:
            k, l = ev[best_e], eu[best_e]
        # apex of the cycle
        a, c = k, l
        while a != c:
            if depth[a] > depth[c]:
                a = parent[a]
            elif depth[c] > depth[a]:
                c = parent[c]
            else:
                a = parent[a]
                c = parent[c]
        join = a
        # ratio test: last blocking arc counted from the apex (strongly feasible rule)
        delta = _INF
        u_out = -1
        side = 0
        x = k
        while x != join:
            if up[x] and flow[x] < delta:
                delta = flow[x]
                u_out = x
                side = 1
            x = parent[x]
        x = l
        while x != join:
            if (not up[x]) and flow[x] <= delta:
                delta = flow[x]
                u_out = x
                side = 2
            x = parent[x]
        if u_out < 0:  # a negative cycle of uncapacitated arcs cannot occur with w >= 0
            return 3, parent, pred, flow, pot, pivots
        if delta > 0:
            x = k
            while x != join:
                flow[x] += -delta if up[x] else delta
                x = parent[x]
            x = l
            while x != join:
                flow[x] += delta if up[x] else -delta
                x = parent[x]
        if side == 1:
            u_in, v_in, sigma = k, l, -best
        else:
            u_in, v_in, sigma = l, k, best
        # re-hang the subtree of u_out below v_in, reversing the path u_in .. u_out
        length = 0
        x = u_in
        while True:
            path[length] = x
            length += 1
            if x == u_out:
                break
            x = parent[x]
        for i in range(length):
            x = path[i]
            old_e[i] = pred[x]
            old_up[i] = up[x]
            old_f[i] = flow[x]
            _unlink(x, parent, first, nxt, prv)
        for i in range(length - 1, 0, -1):
            x = path[i]
            parent[x] = path[i - 1]
            pred[x] = old_e[i - 1]
            up[x] = not old_up[i - 1]
            flow[x] = old_f[i - 1]
        parent[u_in] = v_in
        pred[u_in] = best_e
        up[u_in] = side == 1
        flow[u_in] = delta
        for i in range(length):
            _link(path[i], parent, first, nxt, prv)
        # shift potentials and refresh depths in the moved subtree
        depth[u_in] = depth[v_in] + 1
        top = 0
        stack[0] = u_in
        top = 1
        while top > 0:
            top -= 1
            x = stack[top]
            pot[x] += sigma
            c = first[x]
            while c >= 0:
                depth[c] = depth[x] + 1
                stack[top] = c
                top += 1
                c = nxt[c]
    signed = np.where(up, flow, -flow)
    return 0, parent, pred, signed, pot, pivots

"""Cost-scaling push-relabel for the uncapacitated min-cost flow on a 4-neighbour grid (numba).

The grid EMD with the L1 ground metric is the Beckmann problem ``min Σ c_e |f_e|`` subject to
``div f = b`` over the grid's edges (``_grid``). This module solves it for *integer* edge costs
``c_h`` (horizontal) and ``c_v`` (vertical) with Goldberg's cost-scaling push-relabel method
(Goldberg & Tarjan 1990; Goldberg 1997, "An efficient implementation of a scaling minimum-cost flow
algorithm": global price updates), in the form that suits uncapacitated edges:

* Costs are multiplied by ``s = 2**k > n`` (a power of two, so that every ε is one and divisions
  by ε are shifts). A pseudo-flow ``f`` and potentials ``y`` are ε-optimal when
  every residual arc ``x → z`` of cost ``k`` has reduced cost ``k − y_x + y_z ≥ −ε``. An edge
  carrying ``|f_e|`` units from ``z`` to ``x`` offers a residual arc ``x → z`` of cost ``−c`` and
  capacity ``|f_e|`` (cancelling) and, like every edge, arcs of cost ``+c`` and unbounded capacity.
* Each phase divides ε by ``2**ALPHA_BITS``. Unbounded arcs cannot be saturated, so a phase first lowers
  the potentials to the largest function below them that is ``(c + ε)``-Lipschitz along the grid
  edges (an inf-convolution with the weighted L1 norm, separable: two passes per row, two per
  column), then cancels the flow on every edge whose cancelling arc has reduced cost ``< −ε``, and
  discharges the nodes with excess (push along arcs of negative reduced cost, else raise ``y_x`` to
  ``min_z (k + y_z) + ε``) in sweeps over the cells in index order, alternately forwards and
  backwards (a node woken ahead of the sweep is discharged in the same sweep; on noise grids this
  needs a quarter fewer discharges than a FIFO queue, and the memory is read in order). A global
  price update (a Dial-bucket search from the deficits) runs at the start of the phase and after
  every ``n / UPDATE_EVERY`` relabels.
* After each phase the flow is tested for optimality exactly: label correcting on the original
  integer costs, started from ``⌊y / s⌋``, looks for potentials ``φ`` under which no residual
  arc has negative reduced cost. It succeeds when ``f`` is optimal (no negative residual cycle) and
  the solve stops there; on noise grids this typically happens at ε ≈ c/1000 to c/30000.
* Otherwise the last phase has ε = 1, i.e. ``1 / s`` in the original costs: a residual cycle
  has at most ``n`` arcs, so its scaled cost is ``≥ −n > −s``; scaled costs are multiples of
  ``s``, so no residual cycle is negative and ``f`` is optimal for the integer problem (Ahuja,
  Magnanti & Orlin 1993, Theorem 9.4 and §10.3).
* Multiscale start (:func:`grid_cost_scaling`): above :data:`WARM_MIN` cells the 2 x 2-coarsened
  problem is solved first, the same way, and its potentials, constant on each block, start the
  fine solve at ε = c / 2**WARM_BITS instead of c. This skips most of the work of the first
  phases (3-4x less on 256² and 512² noise); any start is valid, since the Lipschitz projection
  makes the zero flow ε-optimal for it.

Either way the result is certified before it is returned, with exact integer arithmetic:
``div f = b``, ``|f_e|`` at most the total supply (so nothing overflowed) and every residual arc's
reduced cost ``≥ 0`` under ``φ`` (an LP duality certificate) or ``≥ −1`` under ``y`` (the bound
above). The certificate depends only on the returned ``f`` and potentials, so it holds whatever
happened before; its own int64 arithmetic cannot overflow (``|f_e| ≤ 2**60`` from the caller's
unit, four edges per cell).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

__all__ = ["CS_STATUS", "grid_cost_scaling", "relabel_cap"]

#: Meaning of the solver's non-zero status codes.
CS_STATUS = {2: "the relabel limit was reached", 4: "the optimality certificate failed"}

#: ε shrinks by ``2**ALPHA_BITS`` between phases (16 and 32 measured alike on 256² and 512² noise).
ALPHA_BITS = 5
#: A global price update runs after ``n / UPDATE_EVERY`` relabels (Goldberg 1997 uses about ``n``;
#: more frequent updates cut the relabels on noise grids by more than they cost, up to about ``n / 8``).
UPDATE_EVERY = 8
#: Node scans (per node) allowed to the exact dual check after a phase before it gives up.
DUAL_SCANS = 20
#: Global updates use Dial's buckets, a circular array of this power-of-two size; longer arcs count
#: as ``DIAL_BUCKETS - 1`` (a shorter length only lowers the distances, which keeps them valid).
#: Arcs are at most ``2c/ε + 2`` long, ``2**14 + 2`` in a warm-started phase, so they are not capped there.
DIAL_BUCKETS = 1 << 16
#: Nodes with excess are discharged by sweeps in index order (alternately forwards and backwards),
#: which skip the blocks of ``2**BLOCK_BITS`` consecutive cells that hold none.
BLOCK_BITS = 6
#: Above this many cells a solve starts from the potentials of the 2 x 2-coarsened problem.
WARM_MIN = 4096
#: A warm-started solve begins at ε = (largest cost) / 2**WARM_BITS (measured on 256² and 512² noise:
#: 8 and 5 alike, 3 a third slower at 512²).
WARM_BITS = 8
_INF = np.int64(2**62)
_UNSEEN = np.int64(2**62)


def relabel_cap(n: int) -> int:
    """Relabel limit of one solve: far above the ~10-50 per cell observed, a guard against endless loops."""
    return 1_000 * n + 1_000_000


@njit(cache=True, inline="always")
def _arc(x: int, r: int, c: int, k: int, rows: int, cols: int, nh: int) -> tuple[int, int, int, int]:
    """Neighbour ``k`` (right, left, down, up) of cell ``x`` in row ``r``, column ``c``.

    Returns (node, edge id, +1 if x is the edge's tail, kind); node -1 off the grid.
    """
    if k == 0:
        if c + 1 < cols:
            return x + 1, r * (cols - 1) + c, 1, 0
    elif k == 1:
        if c > 0:
            return x - 1, r * (cols - 1) + c - 1, -1, 0
    elif k == 2:
        if r + 1 < rows:
            return x + cols, nh + x, 1, 1
    elif r > 0:
        return x - cols, nh + x - cols, -1, 1
    return -1, -1, 0, 0


@njit(cache=True)
def _lipschitz(y: NDArray[np.int64], rows: int, cols: int, lh: int, lv: int) -> None:
    """Lower ``y`` in place to ``min_u (y_u + lh |Δcol| + lv |Δrow|)``, the largest such function below it."""
    for r in range(rows):
        base = r * cols
        for c in range(1, cols):
            y[base + c] = min(y[base + c], y[base + c - 1] + lh)
        for c in range(cols - 2, -1, -1):
            y[base + c] = min(y[base + c], y[base + c + 1] + lh)
    for r in range(1, rows):
        for c in range(cols):
            y[r * cols + c] = min(y[r * cols + c], y[(r - 1) * cols + c] + lv)
    for r in range(rows - 2, -1, -1):
        for c in range(cols):
            y[r * cols + c] = min(y[r * cols + c], y[(r + 1) * cols + c] + lv)


@njit(cache=True)
def _price_update(
    f: NDArray[np.int64], y: NDArray[np.int64], ex: NDArray[np.int64], rows: int, cols: int,
    cost: NDArray[np.int64], shift: int, dist: NDArray[np.int64], hk: NDArray[np.int64], hv: NDArray[np.int64],
    bhead: NDArray[np.int64],
) -> None:
    """Goldberg's global price update: raise ``y_x`` by ``ε d(x)``, ``d`` the residual distance to a deficit.

    An arc of reduced cost ``r ≥ −ε`` has length ``⌊r/ε⌋ + 1 ≥ 0``, so the raised potentials keep
    every reduced cost ``≥ −ε`` and every node with excess gets an admissible path towards a deficit
    whenever its distance is attained. Nodes not reached before the last node with excess are given
    the distance at which the search stopped (still a lower bound, so the property holds). Lengths
    are capped at the bucket count (a shorter length only lowers ``d``, which keeps the property).
    """
    n = rows * cols
    nh = rows * (cols - 1)
    eps = np.int64(1) << shift
    mask = bhead.shape[0] - 1
    size = 0  # bucket entries in use (hk: node, hv: next entry of the same bucket)
    pending = 0
    active = 0
    bhead[:] = -1
    for x in range(n):
        dist[x] = _UNSEEN
        if ex[x] < 0:
            dist[x] = 0
            hk[size], hv[size] = x, bhead[0]
            bhead[0] = size
            size += 1
            pending += 1
        elif ex[x] > 0:
            active += 1
    level = 0
    while active > 0 and pending > 0:
        while bhead[level & mask] < 0:
            level += 1
        i = bhead[level & mask]
        bhead[level & mask] = hv[i]
        pending -= 1
        key, z = level, hk[i]
        if dist[z] != key:  # stale entry, or z already settled (stored as -key - 1)
            continue
        dist[z] = -key - 1
        if ex[z] > 0:
            active -= 1
        r = z // cols
        cz = z - r * cols
        yz = y[z]
        for k in range(4):
            # residual arc x -> z; t is the flow from z to x on their edge (> 0: x -> z cancels it)
            if k == 0:
                if cz + 1 >= cols:
                    continue
                x, t, c = z + 1, f[r * (cols - 1) + cz], cost[0]
            elif k == 1:
                if cz == 0:
                    continue
                x, t, c = z - 1, -f[r * (cols - 1) + cz - 1], cost[0]
            elif k == 2:
                if r + 1 >= rows:
                    continue
                x, t, c = z + cols, f[nh + z], cost[1]
            else:
                if r == 0:
                    continue
                x, t, c = z - cols, -f[nh + z - cols], cost[1]
            if dist[x] < 0:
                continue
            nd = key + min((((-c if t > 0 else c) - y[x] + yz) >> shift) + 1, mask)
            if dist[x] <= nd:
                continue
            dist[x] = nd
            b = nd & mask
            hk[size], hv[size] = x, bhead[b]
            bhead[b] = size
            size += 1
            pending += 1
    for x in range(n):
        y[x] += eps * (-dist[x] - 1 if dist[x] < 0 else level)


@njit(cache=True)
def _lower_prices(
    f: NDArray[np.int64], phi: NDArray[np.int64], rows: int, cols: int, ch: int, cv: int,
    max_scans: int, queue: NDArray[np.int64], queued: NDArray[np.bool_],
) -> bool:
    """Potentials ``phi`` (original integer costs) with every residual reduced cost ``≥ 0``, if found.

    Label correcting for the difference constraints ``phi_x ≤ k + phi_z`` over the residual arcs
    ``x → z`` of cost ``k``, started from ``⌊y / scale⌋`` (nearly feasible after a phase) and lowering
    labels only. It converges exactly when the residual graph has no negative cycle, i.e. when ``f``
    is optimal; it gives up after ``max_scans`` node scans.
    """
    n = rows * cols
    nh = rows * (cols - 1)
    for x in range(n):
        queue[x] = x
        queued[x] = True
    head, count, scans = 0, n, 0
    while count > 0:
        x = queue[head]
        head = head + 1 if head + 1 < n else 0
        count -= 1
        queued[x] = False
        scans += 1
        if scans > max_scans:
            return False
        best = phi[x]
        r = x // cols
        c0 = x - r * cols
        for k in range(4):
            z, e, s, kind = _arc(x, r, c0, k, rows, cols, nh)
            if z < 0:
                continue
            c = ch if kind == 0 else cv
            ac = -c if s * f[e] < 0 else c
            best = min(best, ac + phi[z])
        if best < phi[x]:
            phi[x] = best
            for k in range(4):
                w = _arc(x, r, c0, k, rows, cols, nh)[0]
                if w >= 0 and not queued[w]:
                    tail = head + count
                    queue[tail if tail < n else tail - n] = w
                    queued[w] = True
                    count += 1
    return True


@njit(cache=True)
def _certified(
    f: NDArray[np.int64], y: NDArray[np.int64], supply: NDArray[np.int64], rows: int, cols: int,
    cost: NDArray[np.int64], eps: int,
) -> bool:
    """``div f = supply``, ``|f_e| ≤ Σ supply⁺`` and every residual arc has reduced cost ≥ −eps."""
    n = rows * cols
    nh = rows * (cols - 1)
    total = 0
    for x in range(n):
        if supply[x] > 0:
            total += supply[x]
    for e in range(f.shape[0]):
        if f[e] > total or f[e] < -total:
            return False
    for x in range(n):
        out = 0
        r = x // cols
        c0 = x - r * cols
        for k in range(4):
            z, e, s, kind = _arc(x, r, c0, k, rows, cols, nh)
            if z < 0:
                continue
            out += s * f[e]
            c = cost[kind]
            if c - y[x] + y[z] < -eps:  # unbounded arc x → z
                return False
            if s * f[e] < 0 and -c - y[x] + y[z] < -eps:  # cancelling arc x → z
                return False
        if out != supply[x]:
            return False
    return True


@njit(cache=True)
def _discharge(
    x: int, f: NDArray[np.int64], y: NDArray[np.int64], ex: NDArray[np.int64], rows: int, cols: int, nh: int,
    cost: NDArray[np.int64], eps: int, active: NDArray[np.int64],
) -> tuple[int, int]:
    """Push the excess of ``x`` along arcs of negative reduced cost, relabelling when none is left.

    Returns the number of relabels and of neighbours whose excess turned positive; each of those is
    counted in ``active``, the number of nodes with excess per block of ``2**BLOCK_BITS`` cells.
    """
    r = x // cols
    cx = x - r * cols
    relabels = 0
    woken = 0
    while ex[x] > 0:
        lowest = _INF
        pushed = False
        for k in range(4):
            if k == 0:
                if cx + 1 >= cols:
                    continue
                z, e, s, c = x + 1, r * (cols - 1) + cx, 1, cost[0]
            elif k == 1:
                if cx == 0:
                    continue
                z, e, s, c = x - 1, r * (cols - 1) + cx - 1, -1, cost[0]
            elif k == 2:
                if r + 1 >= rows:
                    continue
                z, e, s, c = x + cols, nh + x, 1, cost[1]
            else:
                if r == 0:
                    continue
                z, e, s, c = x - cols, nh + x - cols, -1, cost[1]
            out = s * f[e]
            if out < 0:
                ac, cap = -c, -out
            else:
                ac, cap = c, _INF
            if ac - y[x] + y[z] < 0:
                d = min(ex[x], cap)
                f[e] += s * d
                ex[x] -= d
                before = ex[z]
                ex[z] += d
                if before <= 0 < ex[z]:
                    active[z >> BLOCK_BITS] += 1
                    woken += 1
                pushed = True
                if ex[x] == 0:
                    break
            elif ac + y[z] < lowest:
                lowest = ac + y[z]
        if not pushed and ex[x] > 0:
            y[x] = lowest + eps
            relabels += 1
    return relabels, woken


def grid_cost_scaling(
    rows: int, cols: int, ch: int, cv: int, supply: NDArray[np.int64], max_relabels: int
) -> tuple[int, NDArray[np.int64], int]:
    """Optimal integer flow for ``div f = supply`` on the grid with integer edge costs ``ch``, ``cv``.

    Returns ``(status, flow, relabels)``: ``status`` 0 (optimal, certified), 2 (more than
    ``max_relabels`` relabels) or 4 (the certificate failed; never observed); ``flow`` per edge of
    ``grid_edges(rows, cols, ·, ·)``, positive from the lower to the higher cell index.

    Above :data:`WARM_MIN` cells the potentials start from the solution of the 2 x 2-coarsened problem
    (cell sides doubled, solved the same way) and the first phase is skipped. The start only changes
    the work: the result is certified from the returned flow alone.
    """
    status, flow, relabels, _ = _multiscale(rows, cols, ch, cv, supply, max_relabels)
    return status, flow, relabels


def _multiscale(
    rows: int, cols: int, ch: int, cv: int, supply: NDArray[np.int64], max_relabels: int
) -> tuple[int, NDArray[np.int64], int, NDArray[np.int64]]:
    start = np.zeros(0, np.int64)
    used = 0
    if rows * cols > WARM_MIN and min(rows, cols) >= 4:
        padded = np.zeros((rows + rows % 2, cols + cols % 2), np.int64)
        padded[:rows, :cols] = supply.reshape(rows, cols)
        rc, cc = padded.shape[0] // 2, padded.shape[1] // 2
        coarse = padded.reshape(rc, 2, cc, 2).sum(axis=(1, 3)).ravel()
        status, _, used, pot = _multiscale(rc, cc, 2 * ch, 2 * cv, coarse, max_relabels)
        if status == 0:
            start = np.repeat(np.repeat(pot.reshape(rc, cc), 2, axis=0), 2, axis=1)[:rows, :cols].ravel().copy()
    status, flow, relabels, pot = _cost_scaling(rows, cols, ch, cv, supply, max(max_relabels - used, 0), start)
    return status, flow, relabels + used, pot


@njit(cache=True)
def _cost_scaling(
    rows: int, cols: int, ch: int, cv: int, supply: NDArray[np.int64], max_relabels: int, start: NDArray[np.int64]
) -> tuple[int, NDArray[np.int64], int, NDArray[np.int64]]:
    """One cost-scaling solve from zero flow and the potentials ``start`` (original cost units; empty: zero).

    Returns ``(status, flow, relabels, potentials)``, the potentials in original cost units.
    """
    n = rows * cols
    nh = rows * (cols - 1)
    m = nh + (rows - 1) * cols
    scale_bits = 0  # costs are scaled by 2**scale_bits > n, so that ε is a power of two
    while (np.int64(1) << scale_bits) <= n:
        scale_bits += 1
    cost = np.array([ch, cv], np.int64) << scale_bits
    orig = np.array([ch, cv], np.int64)
    f = np.zeros(m, np.int64)
    y = np.zeros(n, np.int64)
    ex = supply.copy()
    queue = np.empty(n, np.int64)
    queued = np.zeros(n, np.bool_)
    dist = np.empty(n, np.int64)
    phi = np.empty(n, np.int64)
    hk = np.empty(5 * n + 1, np.int64)
    hv = np.empty(5 * n + 1, np.int64)
    bhead = np.empty(DIAL_BUCKETS, np.int64)
    blocks = ((n - 1) >> BLOCK_BITS) + 1
    active = np.zeros(blocks, np.int64)
    shift = scale_bits
    while (np.int64(1) << shift) < max(cost[0], cost[1]):
        shift += 1
    if start.shape[0] == n:
        y[:] = start << scale_bits
        shift = max(0, shift - WARM_BITS)
    first = shift
    relabels = 0
    while shift > 0:
        if shift < first:  # after a phase: is the flow already optimal?
            for x in range(n):
                phi[x] = y[x] >> scale_bits
            if _lower_prices(f, phi, rows, cols, ch, cv, DUAL_SCANS * n, queue, queued) and _certified(
                f, phi, supply, rows, cols, orig, 0
            ):
                return 0, f, relabels, phi
        shift = max(0, shift - ALPHA_BITS)
        eps = 1 << shift
        _lipschitz(y, rows, cols, cost[0] + eps, cost[1] + eps)
        for e in range(m):  # cancel the flow whose cancelling arc now has reduced cost < -eps
            if f[e] == 0:
                continue
            if e < nh:
                u = (e // (cols - 1)) * cols + e % (cols - 1)
                v, c = u + 1, cost[0]
            else:
                u = e - nh
                v, c = u + cols, cost[1]
            if (f[e] > 0 and y[u] - y[v] < c - eps) or (f[e] < 0 and y[v] - y[u] < c - eps):
                ex[u] += f[e]
                ex[v] -= f[e]
                f[e] = 0
        _price_update(f, y, ex, rows, cols, cost, shift, dist, hk, hv, bhead)
        since = 0
        active[:] = 0
        count = 0
        for x in range(n):
            if ex[x] > 0:
                active[x >> BLOCK_BITS] += 1
                count += 1
        sweeps = 0
        while count > 0:  # sweep the blocks that hold a node with excess, alternately forwards and backwards
            sweeps += 1
            for j in range(blocks):
                b = blocks - 1 - j if sweeps % 2 == 0 else j
                if active[b] == 0:
                    continue
                lo = b << BLOCK_BITS
                width = min(lo + (1 << BLOCK_BITS), n) - lo
                for i in range(width):
                    x = lo + width - 1 - i if sweeps % 2 == 0 else lo + i
                    if ex[x] <= 0:
                        continue
                    r, woken = _discharge(x, f, y, ex, rows, cols, nh, cost, eps, active)
                    active[b] -= 1
                    count += woken - 1
                    relabels += r
                    since += r
                    if relabels > max_relabels:
                        return 2, f, relabels, y >> scale_bits
                    if since * UPDATE_EVERY >= n:
                        _price_update(f, y, ex, rows, cols, cost, shift, dist, hk, hv, bhead)
                        since = 0
    if not _certified(f, y, supply, rows, cols, cost, 1):
        return 4, f, relabels, y >> scale_bits
    return 0, f, relabels, y >> scale_bits

r"""An interior-point method for "box + one quadratic" problems in compressed form.

Solves, for ``G ∈ R^{k×n}`` with ``k ≪ n``, either the constrained or the penalised problem

.. math::

    \min_{l ≤ x ≤ u} c^T x \;\text{s.t.}\; ‖Gx − z‖_2 ≤ ρ
    \qquad\text{or}\qquad
    \min_{l ≤ x ≤ u} c^T x + \tfrac{γ}{2}‖Gx − z‖_2^2 .

Method: the box is handled by a logarithmic barrier with weight ``μ`` and the resulting smooth
problem is solved through its *k-dimensional* Lagrange dual

.. math::

    d_μ(w) = \sum_i ψ_μ(a_i) − w^T z − h^*(w), \qquad a = c + G^T w,

where ``ψ_μ(a) = min_{l<x<u} a x − μ log(x − l) − μ log(u − x)`` has a closed-form minimiser
``x_μ(a)`` and ``h^*(w) = ρ‖w‖`` (constrained) or ``‖w‖²/(2γ)`` (penalised). ``d_μ`` is smooth and
strictly concave; Newton's method on it needs the ``k × k`` Hessian
``G diag(x_μ'(a)) Gᵀ − ∇²h^*(w)`` (``O(n k²)``) and its stationary point gives the barrier
solution ``x_μ(a)``, which sits exactly on the sphere ``‖Gx − z‖ = ρ`` in the constrained case.
``μ`` is decreased geometrically with warm starts (path following). Once the duality gap is small,
the active set read off ``x_μ`` is used to solve the KKT system exactly
(:func:`dpcloak.recovery._kkt.solve_on_active_set`), and a candidate is accepted only with a
certificate from the exact (non-smoothed) dual

.. math::

    c^T x^\star ≥ \sum_i \min(l_i a_i, u_i a_i) − w^T z − h^*(w)\quad\text{for any } w ∈ R^k .
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray

from dpcloak.recovery import _kkt
from dpcloak.recovery._kkt import Rows
from dpcloak.recovery.compress import DenseRows

__all__ = ["IpmResult", "solve_box_quadratic"]

_SHRINK = 30.0  # μ ← μ / _SHRINK after each centring
_ARMIJO = 1e-4
_WARM_MU = 1e-3
_MAX_FREE = 256
_MAX_CANDIDATES = 32
_MAX_NEWTON = 60  # Newton steps per centring
_MU0 = 1.0
_CENTRED = 1.0
_POLISH_AT = 1e-1


@dataclass(frozen=True)
class IpmResult:
    """Outcome of :func:`solve_box_quadratic`."""

    x: NDArray[np.float64]
    objective: float
    lower_bound: float
    n_iter: int
    converged: bool
    infeasible: bool = False
    dual: NDArray[np.float64] | None = None


def _polish_candidates(
    G: Rows, z: NDArray[np.float64], c: NDArray[np.float64], lo: NDArray[np.float64],
    hi: NDArray[np.float64], score: NDArray[np.float64], near_hi: NDArray[np.bool_], gamma: float,
    rho: float | None, tried: set[bytes],
) -> Iterator[NDArray[np.float64]]:
    """Exact KKT solutions on guessed active sets, most plausible first (the caller certifies them).

    Variables are ranked by how free the interior-point iterate says they are (``score`` = squared
    distance to the nearer bound over μ, i.e. slack over barrier multiplier); the ``j`` most free
    are released and the others fixed at their nearer bound, for ``j ≤ min(k, 64)`` in decreasing
    order of the drop ``score_(j) / score_(j+1)`` (a clear gap marks the active set). Candidates
    outside the box are skipped. ``tried`` holds the active sets solved before in this solve (the
    problem does not change between rounds, so neither does their solution): each is solved once.
    """
    order = np.argsort(-score)
    top = np.maximum(score[order[: min(G.rank, _MAX_FREE) + 1]], 1e-300)
    ratios = top[:-1] / top[1:]
    for j in np.argsort(-ratios)[:_MAX_CANDIDATES] + 1:
        free = np.zeros(score.size, dtype=bool)
        free[order[:j]] = True
        key = np.packbits(free).tobytes() + np.packbits(~free & near_hi).tobytes()
        if key in tried:
            continue
        tried.add(key)
        x = _kkt.solve_on_active_set(G, z, c, lo, hi, ~free & ~near_hi, ~free & near_hi, gamma, rho)
        if x is not None and np.all(x >= lo) and np.all(x <= hi):
            yield x


def _separates(
    G: Rows, z: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64],
    w: NDArray[np.float64], rho: float,
) -> bool:
    """Whether ``w`` certifies that the ball ``‖Gx − z‖ ≤ ρ`` misses the box (a dual ray).

    For every ``x`` in the box ``wᵀ G x ≥ Σ_i min(l_i g_i, u_i g_i)`` (``g = Gᵀw``), and for every
    ``x`` in the ball ``wᵀ(Gx − z) ≤ ρ‖w‖``; if the first bound exceeds ``wᵀz + ρ‖w‖`` the two sets
    are disjoint. Diverging dual iterates of an infeasible problem point along such a ``w``.
    """
    g = G.tdot(w)
    neg = g < 0
    if np.any(neg & ~np.isfinite(hi)):
        return False
    low = float(np.sum(np.where(neg, np.where(np.isfinite(hi), hi, 0.0) * g, lo * g)))
    return low - float(w @ z) - rho * float(np.linalg.norm(w)) > 1e-9 * max(1.0, abs(low))


_CHUNK = 1 << 14  # coordinates per chunk of the barrier point


def _barrier_point(
    a: NDArray[np.float64], lo: NDArray[np.float64], width: NDArray[np.float64], finite: NDArray[np.bool_], mu: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``x_μ(a)``, its derivative and ``ψ_μ(a)`` for each coordinate (``width = u − l``, inf allowed).

    ``s = x − l`` solves ``a − μ/s + μ/(d − s) = 0``, i.e. ``a s² − (a d + 2μ) s + μ d = 0``, whose
    root in ``(0, d)`` is ``2μd / (a d + 2μ + √(a²d² + 4μ²))`` for ``a ≥ 0`` (mirrored for ``a < 0``);
    with ``d = ∞`` it is ``μ/a`` (``a > 0`` required). The distance to the *nearer* bound is the
    one computed by the formula, the other is ``d`` minus it, so neither is lost to cancellation
    (``d − (d − t)`` can round to 0 and send ``μ/(u − x)²`` to infinity). The derivative
    ``x_μ' = −1/(μ/s² + μ/o²) = −s²o²/(μ(s² + o²))`` (``o = d − s``) is formed without the
    overflowing reciprocal squares.
    """
    x, xp, psi = np.empty_like(a), np.empty_like(a), np.empty_like(a)
    for start in range(0, a.size, _CHUNK):  # chunks keep the temporaries in cache (2x at 10^5-10^6 sources)
        part = slice(start, start + _CHUNK)
        x[part], xp[part], psi[part] = _barrier_chunk(a[part], lo[part], width[part], finite[part], mu)
    return x, xp, psi


def _barrier_chunk(
    a: NDArray[np.float64], lo: NDArray[np.float64], width: NDArray[np.float64], finite: NDArray[np.bool_], mu: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """:func:`_barrier_point` on one chunk."""
    all_finite = bool(np.all(finite))  # the common unit box: no infinite branch to mask
    d = width if all_finite else np.where(finite, width, 1.0)
    two_mu = 2.0 * mu
    ad = np.abs(a) * d
    if ad.max() < 1e150 and two_mu < 1e150 and ad.min() + two_mu > 1e-150:  # squares neither overflow nor vanish
        root = ad * ad
        root += two_mu * two_mu
        np.sqrt(root, out=root)  # √(a²d² + 4μ²), faster than hypot
    else:
        root = np.hypot(ad, two_mu)  # without overflowing the square
    root += ad
    root += two_mu
    near = np.multiply(d, two_mu)
    near /= root  # distance to the nearer bound
    far = d - near
    pos = a >= 0
    if all_finite:
        x = np.where(pos, near, far)
        x += lo
        so = near * far
        xp = -(so * so) / (mu * (near * near + far * far))
        psi = a * x - mu * np.log(so)
        return x, xp, psi
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(finite, np.where(pos, near, far), mu / a)
        other = np.where(finite, np.where(pos, far, near), np.inf)
        x = np.where(finite & ~pos, lo + d - near, lo + s)
        so = s * np.where(finite, other, 1.0)
        xp = np.where(finite, -(so * so) / (mu * (s * s + other * other)), -(s * s) / mu)
        psi = a * x - mu * np.log(s) - np.where(finite, mu * np.log(other), 0.0)
    return x, xp, psi


def _interior(
    c: NDArray[np.float64], G: Rows, w: NDArray[np.float64], finite: NDArray[np.bool_]
) -> bool:
    """Whether ``a = c + Gᵀw`` is positive wherever the box is unbounded above (``d_μ(w)`` finite)."""
    return bool(np.all(finite) or np.all((c + G.tdot(w))[~finite] > 0))


def _pull_inside(
    c: NDArray[np.float64], G: Rows, w: NDArray[np.float64], finite: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """``θ w`` with the largest ``θ ∈ (0, 1]`` keeping ``a ≥ c/2`` where the box is unbounded above.

    ``w = 0`` is interior exactly when ``c > 0`` there (``‖f‖₁`` on non-negative sources); a zero
    ``c`` on an unbounded coordinate has no interior dual point and is refused (the least-residual
    problem goes to :func:`dpcloak.recovery._boxls.box_least_squares` instead).
    """
    cu = c[~finite]
    if np.any(cu <= 0):
        raise ValueError("the barrier dual needs c > 0 where the box is unbounded above")
    gw = (G.tdot(w))[~finite]
    neg = gw < 0
    theta = min(1.0, float(np.min(0.5 * cu[neg] / -gw[neg]))) if np.any(neg) else 1.0
    return np.asarray(theta * w)


def solve_box_quadratic(
    G: Rows | NDArray[np.float64],
    z: NDArray[np.float64],
    c: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    *,
    gamma: float = 0.0,
    rho: float | None = None,
    tol: float = 1e-10,
    max_iter: int = 200,
    w0: NDArray[np.float64] | None = None,
    repair: Callable[[NDArray[np.float64]], IpmResult | None] | None = None,
) -> IpmResult:
    """Minimise ``cᵀx + γ/2 ‖Gx − z‖²`` (``rho is None``) or ``cᵀx`` s.t. ``‖Gx − z‖ ≤ ρ`` over the box.

    ``G`` is a dense ``k × n`` array or the compressed rows of a model
    (:class:`~dpcloak.recovery.compress.DenseRows`, :class:`~dpcloak.recovery.compress.KroneckerRows`,
    used only through their products). ``max_iter`` caps the total number of Newton steps. Convergence:
    certified gap ``≤ tol · max(1, |objective|)``. The constrained problem must be strictly
    feasible (the dual is unbounded otherwise; the caller checks this with the least residual in the box).
    ``repair``: called with the dual iterate at each centring where the active-set guesses read off the
    iterate fail (from the point where they are first tried); a certified result it returns is the answer
    (its ``n_iter`` added to the Newton steps). BPDN passes :func:`dpcloak.recovery._active.dual_repair`.
    """
    if isinstance(G, np.ndarray):
        G = DenseRows(G)
    n, k = lo.size, G.rank
    constrained = rho is not None
    finite = np.isfinite(hi)
    width = np.where(finite, hi - lo, np.inf)
    scale_c = max(1.0, float(np.max(np.abs(c))))
    mu = _MU0 * scale_c * (float(np.max(width[finite])) if np.any(finite) else 1.0) / n
    if constrained:
        # start along −z, scaled so that a = c + Gᵀw stays positive but reaches half of c's scale:
        # the multiplier pulls mass towards where the data are, as at the optimum
        pull = float(np.max(G.tdot(z)))
        w = -0.5 * scale_c * z / pull if pull > 0 else -z / max(float(np.linalg.norm(z)), 1e-300)
    else:
        x_mid = np.where(finite, lo + 0.5 * np.where(finite, width, 0.0), lo + 1.0)
        w = gamma * (G.dot(x_mid) - z)
    if w0 is not None and w0.shape == (k,) and np.all(np.isfinite(w0)) and np.any(w0) and _interior(c, G, w0, finite):
        w = w0.astype(float).copy()
        mu *= _WARM_MU
    if not np.any(w):
        w = np.full(k, 1e-8)
    if not _interior(c, G, w, finite):
        w = _pull_inside(c, G, w, finite)
    w_scale = float(np.linalg.norm(w))
    eye = np.eye(k)

    def conj_value(w: NDArray[np.float64]) -> float:
        """``h*(w)`` alone (the line search needs no derivatives)."""
        return float(w @ w) / (2.0 * gamma) if not constrained else rho * float(np.linalg.norm(w))  # type: ignore[operator]

    def conj(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
        """``h*(w)``, its gradient and Hessian."""
        if not constrained:
            return conj_value(w), w / gamma, eye / gamma
        nw = float(np.linalg.norm(w))
        wh = w / nw
        return conj_value(w), rho * wh, (rho / nw) * (eye - np.outer(wh, wh))  # type: ignore[operator]

    def dual(w: NDArray[np.float64], mu: float) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
        a = c + G.tdot(w)
        if not np.all(finite) and np.any(a[~finite] <= 0):
            return -math.inf, a, a
        x, xp, psi = _barrier_point(a, lo, width, finite, mu)
        return float(np.sum(psi)) - float(w @ z) - conj_value(w), x, xp

    def objective(x: NDArray[np.float64]) -> float:
        if constrained:
            return float(c @ x)
        e = G.dot(x) - z
        return float(c @ x) + 0.5 * gamma * float(e @ e)

    steps = 0
    lower = -math.inf
    best: tuple[NDArray[np.float64], float] | None = None
    tried: set[bytes] = set()  # active sets polished already
    dval, x, xp = dual(w, mu)
    while steps < max_iter:
        # centring: Newton's method on the concave d_μ; the line search starts at twice the last
        # accepted step (damped Newton needs short steps far from the centre, full ones near it)
        t_last = 0.5
        for _ in range(_MAX_NEWTON):
            if constrained and float(np.linalg.norm(w)) < 1e-3 * w_scale:
                # ρ‖w‖ has a kink at 0 that traps Newton; if the ball is violated there, the
                # supergradient G x − z is an ascent direction: restart along it
                e0 = G.dot(x) - z
                if float(np.linalg.norm(e0)) > rho:  # type: ignore[operator]
                    w = w_scale * e0 / float(np.linalg.norm(e0))
                    dval, x, xp = dual(w, mu)
            _, hg, hh = conj(w)
            grad = G.dot(x) - z - hg
            negH = G.weighted_gram(-xp) + hh
            sc = 1.0 / np.sqrt(np.diag(negH))
            try:
                chol = sla.cho_factor(negH * sc[:, None] * sc[None, :], lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                break
            step = sc * sla.cho_solve(chol, sc * grad, check_finite=False)
            decrement = float(grad @ step)
            steps += 1
            if decrement <= max(1e-3 * _CENTRED * mu, 1e-15 * max(1.0, abs(dval))):
                break  # centred, or below what double precision can resolve in d_μ
            t = min(1.0, 2.0 * t_last)
            while t > 1e-6:
                dn, xn, xpn = dual(w + t * step, mu)
                if dn >= dval + _ARMIJO * t * decrement:
                    break
                t *= 0.5
            else:
                break
            t_last = t
            w, dval, x, xp = w + t * step, dn, xn, xpn
            if decrement <= _CENTRED * mu or steps >= max_iter:
                break
        # certificates at this μ
        lower = max(lower, _kkt.dual_bound(G, z, c, lo, hi, w, gamma, rho))
        if constrained and _separates(G, z, lo, hi, w, rho):  # type: ignore[arg-type]
            return IpmResult(x=x, objective=math.inf, lower_bound=lower, n_iter=steps, converged=False,
                             infeasible=True, dual=w)
        e = G.dot(x) - z
        if not constrained or float(e @ e) <= rho * rho:  # type: ignore[operator]
            f = objective(x)
            if best is None or f < best[1]:
                best = (x, f)
            if f - lower <= tol * max(1.0, abs(f)):
                return IpmResult(x=x, objective=f, lower_bound=lower, n_iter=steps, converged=True, dual=w)
        if 2.0 * n * mu <= _POLISH_AT * max(1.0, abs(objective(x))) and (constrained or gamma > 0):
            sl, su = x - lo, np.where(finite, hi - x, np.inf)
            # two readings of the active set: the primal barrier point (slack² / μ) and the dual
            # (complementary slackness: x_i is free only where a_i = c_i + (Gᵀw)_i vanishes)
            a_now = c + G.tdot(w)
            guesses = ((np.minimum(sl, su) ** 2 / mu, su < sl), (1.0 / np.maximum(np.abs(a_now), 1e-300), a_now < 0))
            for score, near_hi in guesses:
                for cand in _polish_candidates(G, z, c, lo, hi, score, near_hi, gamma, rho, tried):
                    cert = _kkt.certify(G, z, c, lo, hi, cand, gamma, rho, tol)
                    if cert is not None:
                        return IpmResult(x=cand, objective=cert[0], lower_bound=cert[1], n_iter=steps,
                                         converged=True, dual=w)
            if repair is not None:
                fixed = repair(w)
                if fixed is not None:
                    return replace(fixed, n_iter=steps + fixed.n_iter)
        if mu < 1e-18 * scale_c:
            break
        mu /= _SHRINK
        dval, x, xp = dual(w, mu)
    if best is None:
        return IpmResult(x=x, objective=objective(x), lower_bound=lower, n_iter=steps, converged=False, dual=w)
    return IpmResult(x=best[0], objective=best[1], lower_bound=lower, n_iter=steps, converged=False, dual=w)

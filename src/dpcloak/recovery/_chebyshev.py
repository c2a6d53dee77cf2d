r"""Low-rank factors of a Gaussian heat kernel by Chebyshev interpolation, with a rigorous error.

For sensors ``s_j`` and sources ``x_i`` on an interval ``[a, b]`` the kernel matrix
``A[j, i] = g(s_j − x_i)``, ``g(d) = exp(−d²/(4T))/√(4πT)``, is interpolated in the source
variable at ``N + 1`` Chebyshev points ``c_l`` of ``[a, b]``:

.. math::

    A ≈ C L, \qquad C[j, l] = g(s_j − c_l),\quad L[l, i] = ℓ_l(x_i),

with ``ℓ_l`` the Lagrange basis in barycentric form (Berrut & Trefethen, SIAM Review 46, 2004).
Building ``C`` and ``L`` costs ``O((m + n) N)``; the dense ``m × n`` matrix is never read.

Error (Trefethen, *Approximation Theory and Approximation Practice*, Theorem 8.2): a function
analytic in the Bernstein ellipse ``E_ρ`` of ``[−1, 1]`` and bounded there by ``M`` is
interpolated in ``N + 1`` Chebyshev points with maximum error ``4 M ρ^{−N} / (ρ − 1)``. With
``x = mid + h u`` the ellipse reaches ``|Im x| ≤ β = h (ρ − 1/ρ) / 2``, where
``|g(s − x)| = exp(−Re (s − x)² / (4T)) / √(4πT) ≤ exp(β² / (4T)) / √(4πT) = M`` for every ``s``.
Every entry of ``A − C L`` is below that bound, so ``‖A − C L‖₂ ≤ ‖A − C L‖_F ≤ √(mn) · bound``;
floating-point evaluation adds at most ``√(mn) · 8 ε Λ_N max g`` (``Λ_N ≤ 1 + (2/π) log(N + 1)``
the Lebesgue constant of Chebyshev points), which is included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["KernelFactors", "heat_kernel_factors"]

_EPS = float(np.finfo(float).eps)
_RHOS = np.geomspace(1.01, 200.0, 400)


@dataclass(frozen=True)
class KernelFactors:
    """``A ≈ C L`` with ``‖A − C L‖₂ ≤ error``."""

    C: NDArray[np.float64]
    L: NDArray[np.float64]
    error: float


def _interpolation_bound(N: int, h: float, T: float) -> float:
    """``min_ρ 4 M(ρ) ρ^{−N} / (ρ − 1)`` for ``g`` on ``[mid − h, mid + h]`` (log-space, no overflow)."""
    beta = h * (_RHOS - 1.0 / _RHOS) / 2.0
    log_bound = (math.log(4.0) + beta**2 / (4.0 * T) - 0.5 * math.log(4.0 * math.pi * T)
                 - N * np.log(_RHOS) - np.log(_RHOS - 1.0))
    return float(np.exp(min(float(np.min(log_bound)), 700.0)))


def _lagrange_basis(nodes: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``L[l, i] = ℓ_l(x_i)`` for Chebyshev points of the second kind (barycentric formula)."""
    N = nodes.size - 1
    w = (-1.0) ** np.arange(N + 1)
    w[0] *= 0.5
    w[-1] *= 0.5
    diff = x[None, :] - nodes[:, None]
    exact = diff == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = w[:, None] / diff
        L = terms / np.sum(terms, axis=0)
    hit = np.any(exact, axis=0)
    L[:, hit] = exact[:, hit].astype(float)
    return np.asarray(L)


def heat_kernel_factors(
    sensors: NDArray[np.float64], sources: NDArray[np.float64], T: float, *, target: float, max_nodes: int
) -> KernelFactors | None:
    """Chebyshev factors of ``g(s_j − x_i)``, or ``None`` when more than ``max_nodes`` are needed.

    The number of nodes is the smallest ``N + 1`` (doubling, then bisection) whose interpolation
    error ``√(mn) · 4 M ρ^{−N}/(ρ − 1)`` meets ``target``; :attr:`KernelFactors.error` adds the
    rounding allowance to it.
    """
    a, b = float(np.min(sources)), float(np.max(sources))
    m, n = sensors.size, sources.size
    h = max(0.5 * (b - a), 1e-300)
    gmax = 1.0 / math.sqrt(4.0 * math.pi * T)
    size = math.sqrt(m * n)

    def interpolation(N: int) -> float:
        return size * _interpolation_bound(N, h, T)

    hi_N = 8
    while interpolation(hi_N) > target:
        hi_N *= 2
        if hi_N + 1 > max_nodes:
            return None
    lo_N = hi_N // 2
    while hi_N - lo_N > 1:
        mid = (lo_N + hi_N) // 2
        lo_N, hi_N = (lo_N, mid) if interpolation(mid) <= target else (mid, hi_N)
    N = hi_N
    rounding = size * 8.0 * _EPS * (1.0 + 2.0 / math.pi * math.log(N + 1.0)) * gmax
    nodes = 0.5 * (a + b) + h * np.cos(np.pi * np.arange(N + 1) / N)
    C = (sensors[:, None] - nodes[None, :]) ** 2
    C *= -1.0 / (4.0 * T)
    np.exp(C, out=C)
    C *= gmax
    return KernelFactors(C=C, L=_lagrange_basis(nodes, sources), error=interpolation(N) + rounding)

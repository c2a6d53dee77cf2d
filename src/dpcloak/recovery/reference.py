"""Reference path: basis pursuit denoising through CVXPY (needs the ``reference`` extra).

Used by the tests and benchmarks as the independent oracle for :func:`dpcloak.recovery.bpdn`.
It mirrors the fast solver's contract: when the ball is out of reach within the box it first
minimises the residual, then minimises ``Σ f`` within ``(1 + slack)`` of that minimum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak.errors import InvalidParameterError, MissingExtraError

__all__ = ["ReferenceSolution", "bpdn_cvxpy"]


@dataclass(frozen=True)
class ReferenceSolution:
    """CVXPY's answer: the point, CVXPY's status, whether the ball was reachable, iterations and time.

    ``min_residual`` is CVXPY's smallest residual in the box when the ball is out of reach, else ``nan``.

    Examples
    --------
    Returned by :func:`bpdn_cvxpy`:

    >>> import numpy as np
    >>> sol = bpdn_cvxpy(np.eye(2), np.array([1.0, 2.0]), np.zeros(2), np.full(2, 5.0), 0.5)
    >>> isinstance(sol, ReferenceSolution), sol.status, sol.feasible
    (True, 'optimal', True)
    """

    x: NDArray[np.float64]
    status: str
    feasible: bool
    n_iter: int
    solve_time: float
    min_residual: float = float("nan")


def import_cvxpy() -> Any:
    """Import CVXPY or raise :class:`MissingExtraError` naming the extra to install."""
    try:
        import cvxpy
    except ImportError:
        raise MissingExtraError(
            "the CVXPY reference solver needs the 'reference' extra: pip install 'dpcloak[reference]'"
        ) from None
    return cvxpy


def bpdn_cvxpy(
    matrix: NDArray[np.float64], y: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64],
    radius: float, *, solver: str = "CLARABEL", unreachable_slack: float = 1e-4,
) -> ReferenceSolution:
    """``min Σ f`` subject to ``‖A f − y‖₂ ≤ radius, lo ≤ f ≤ hi`` with CVXPY (inputs already validated).

    Examples
    --------
    The smallest total mass within distance 0.5 of ``y = (1, 2)``: shrink ``y`` towards 0 along ``(1, 1)``:

    >>> import numpy as np
    >>> sol = bpdn_cvxpy(np.eye(2), np.array([1.0, 2.0]), np.zeros(2), np.full(2, 5.0), 0.5)
    >>> np.round(sol.x, 4).tolist(), round(float(sol.x.sum()), 4), round(3 - 0.5 * 2**0.5, 4)
    ([0.6464, 1.6464], 2.2929, 2.2929)
    """
    cp = import_cvxpy()
    if solver not in cp.installed_solvers():
        raise InvalidParameterError(
            f"cvxpy_solver must be one of the installed CVXPY solvers {cp.installed_solvers()}, got {solver!r}",
            parameter="cvxpy_solver"
        )
    n = matrix.shape[1]
    f = cp.Variable(n)
    box = [f >= lo]
    finite = np.isfinite(hi)
    if np.any(finite):
        box.append(f[np.flatnonzero(finite)] <= hi[finite])
    start = time.perf_counter()
    problem = cp.Problem(cp.Minimize(cp.sum(f)), [*box, cp.norm(matrix @ f - y, 2) <= radius])
    problem.solve(solver=solver)
    iters = int(problem.solver_stats.num_iters or 0)
    feasible = problem.status in ("optimal", "optimal_inaccurate")
    r_min = float("nan")
    if not feasible and problem.status in ("infeasible", "infeasible_inaccurate"):
        closest = cp.Problem(cp.Minimize(cp.norm(matrix @ f - y, 2)), box)
        closest.solve(solver=solver)
        iters += int(closest.solver_stats.num_iters or 0)
        r_min = float(closest.value)
        ball = cp.norm(matrix @ f - y, 2) <= r_min * (1 + unreachable_slack)
        problem = cp.Problem(cp.Minimize(cp.sum(f)), [*box, ball])
        problem.solve(solver=solver)
        iters += int(problem.solver_stats.num_iters or 0)
    x = np.asarray(f.value if f.value is not None else np.full(n, np.nan), dtype=float)
    return ReferenceSolution(x=x, status=str(problem.status), feasible=feasible, n_iter=iters,
                             solve_time=time.perf_counter() - start, min_residual=r_min)

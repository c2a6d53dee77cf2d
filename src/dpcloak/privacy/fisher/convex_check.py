r"""Problem 2 of Farokhi & Sandberg solved directly as a finite-dimensional convex program.

An independent check of Corollaries 1/3: discretise a density on ``[low, high]`` by its values
:math:`\gamma_i` at ``n_points`` interior grid points (spacing ``h``, :math:`\gamma_0 = \gamma_{N+1} = 0`
at the ends, Assumption 2 (iii)) and minimise the discretised Fisher information

.. math:: \sum_{i=0}^{N} \frac{(\gamma_{i+1}-\gamma_i)^2/h^2}{(\gamma_{i+1}+\gamma_i)/2}\,h
          = \frac{2}{h}\sum_{i=0}^{N}\frac{(\gamma_{i+1}-\gamma_i)^2}{\gamma_{i+1}+\gamma_i}
   \quad\text{s.t.}\quad h\sum_i \gamma_i = 1,\ \gamma \ge 0 .

Each term is a quadratic-over-linear (perspective) function, so the program is convex (the
discrete analogue of Proposition 2) and is written as rotated second-order cones. It needs CVXPY
(``dpcloak[reference]``), imported lazily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_int, check_real
from dpcloak.errors import ConvergenceError, InvalidParameterError, MissingExtraError

__all__ = ["DiscretisedOptimum", "solve_discretised_problem2"]


@dataclass(frozen=True)
class DiscretisedOptimum:
    """Optimum of the discretised Problem 2.

    Attributes
    ----------
    grid : ndarray
        Interior grid points.
    density : ndarray
        Optimal density values on ``grid``.
    fisher_information : float
        Optimal value of the discretised Fisher information.
    cos2_density : ndarray
        The cos² density of Corollary 1 on ``grid`` (the claimed continuum optimum).
    max_abs_error : float
        ``max |density − cos2_density|``.
    relative_l2_error : float
        ``‖density − cos2_density‖₂ / ‖cos2_density‖₂``.
    status : str
        Solver status.

    Examples
    --------
    Returned by :func:`solve_discretised_problem2` (needs CVXPY, the ``reference`` extra):

    >>> opt = solve_discretised_problem2(low=-1.0, high=1.0, n_points=60)
    >>> isinstance(opt, DiscretisedOptimum), opt.density.shape == opt.cos2_density.shape == opt.grid.shape
    (True, True)
    """

    grid: NDArray[np.float64]
    density: NDArray[np.float64]
    fisher_information: float
    cos2_density: NDArray[np.float64]
    max_abs_error: float
    relative_l2_error: float
    status: str


def _cvxpy() -> Any:
    try:
        import cvxpy
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise MissingExtraError("solve_discretised_problem2 needs CVXPY: pip install 'dpcloak[reference]'") from err
    return cvxpy


def solve_discretised_problem2(*, low: float, high: float, n_points: int = 100,
                               solver: str | None = None) -> DiscretisedOptimum:
    """Minimise the discretised Fisher information over densities on ``[low, high]`` (CVXPY).

    Parameters
    ----------
    low, high : float
        The support (``low < high``).
    n_points : int
        Number of interior grid points (≥ 3).
    solver : str, optional
        CVXPY solver name (default: Clarabel when installed, else CVXPY's choice).

    Examples
    --------
    The discretised optimum approaches the cos² density of Corollary 1 (needs CVXPY):

    >>> opt = solve_discretised_problem2(low=-1.0, high=1.0, n_points=60)
    >>> opt.status, bool(opt.relative_l2_error < 0.05)
    ('optimal', True)
    """
    lo = check_real("low", low)
    hi = check_real("high", high)
    if not lo < hi:
        raise InvalidParameterError(f"low must be < high, got low={lo:g}, high={hi:g}", parameter="low")
    n = check_int("n_points", n_points, minimum=3)
    cp = _cvxpy()
    h = (hi - lo) / (n + 1)
    grid = np.asarray(lo + h * np.arange(1, n + 1), dtype=np.float64)
    gamma = cp.Variable(n, nonneg=True)
    padded = cp.hstack([np.zeros(1), gamma, np.zeros(1)])
    diff = padded[1:] - padded[:-1]
    total = padded[1:] + padded[:-1]
    t = cp.Variable(n + 1)
    # rotated cone t_i * s_i >= d_i^2  <=>  ||(2 d_i, t_i - s_i)|| <= t_i + s_i
    cones = cp.SOC(t + total, cp.vstack([2 * diff, t - total]), axis=0)
    problem = cp.Problem(cp.Minimize((2.0 / h) * cp.sum(t)), [cones, h * cp.sum(gamma) == 1])
    chosen = solver if solver is not None else ("CLARABEL" if "CLARABEL" in cp.installed_solvers() else None)
    problem.solve(solver=chosen)
    if problem.status not in ("optimal", "optimal_inaccurate") or gamma.value is None:
        raise ConvergenceError(f"the discretised Problem 2 was not solved: status {problem.status}")
    dens = np.asarray(gamma.value, dtype=float)
    width = hi - lo
    cos2 = 2.0 / width * np.cos(math.pi * (grid - 0.5 * (lo + hi)) / width) ** 2
    return DiscretisedOptimum(
        grid=grid,
        density=dens,
        fisher_information=float(problem.value),
        cos2_density=cos2,
        max_abs_error=float(np.max(np.abs(dens - cos2))),
        relative_l2_error=float(np.linalg.norm(dens - cos2) / np.linalg.norm(cos2)),
        status=str(problem.status),
    )

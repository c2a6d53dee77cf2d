r"""Exact Earth Mover's Distance on lines, floor grids, graphs and explicit ground costs.

Definition (seed 000, Definition 7, after Rubner et al. 2000; seed 003, section 2.1): for
non-negative ``p, q`` of equal mass on the locations of a finite metric space ``(Ω, d)``,

.. math:: \mathrm{EMD}(p, q) = \min_{\gamma \ge 0,\ \gamma 1 = p,\ \gamma^T 1 = q} \sum_{x, y} \gamma(x, y)\, d(x, y).

Seed 000 (section 5) compares ``f₀/‖f₀‖₁`` with ``f̂/‖f̂‖₁``; :func:`emd` does the same by default.

Solvers (all exact up to floating-point rounding):

* :class:`~dpcloak.domains.Line` — closed form ``h Σ |P_i − Q_i|`` over cumulative sums, O(n).
* :class:`~dpcloak.domains.Grid` with the L1 metric and :class:`~dpcloak.domains.GraphDomain` —
  min-cost flow over the domain's edges (moving mass one edge at a time is exact for the L1
  metric on the grid and for the shortest-path metric on a graph).
* :class:`~dpcloak.domains.Grid` with the L2 metric, or an explicit ``(n, n)`` ground-cost
  matrix — POT's network simplex with a raised iteration cap and a checked result code.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak.domains import Domain, GraphDomain, Grid, Line
from dpcloak.errors import InvalidParameterError
from dpcloak.metrics._dense import dense_plan
from dpcloak.metrics._flow import edge_flow
from dpcloak.metrics._masses import as_cost_matrix, as_masses, total_mass

__all__ = ["emd"]

#: Relative tolerance for "equal total mass" when ``normalize=False``.
MASS_RTOL = 1e-9


def _edges(domain: Domain) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Edges of a domain whose ground metric is the shortest-path metric of those edges."""
    if isinstance(domain, GraphDomain):
        domain.require_connected("the EMD")
        return domain.neighbours(), domain.neighbour_steps()
    edges = domain.neighbours()
    xy = np.asarray(domain.coordinates())
    return edges, np.abs(xy[edges[:, 0]] - xy[edges[:, 1]]).sum(axis=1)


def _uses_edges(domain: Domain | NDArray[np.float64]) -> bool:
    return isinstance(domain, GraphDomain) or (isinstance(domain, Grid) and domain.metric == "l1")


def _unit_emd(p: NDArray[np.float64], q: NDArray[np.float64], domain: Domain | NDArray[np.float64]) -> float:
    """EMD between two unit-mass vectors."""
    if len(p) == 1:
        return 0.0
    if isinstance(domain, Line):
        from dpcloak.metrics._line import line_emd

        return line_emd(p, q, domain.spacing)
    if isinstance(domain, Domain) and _uses_edges(domain):
        edges, weights = _edges(domain)
        return edge_flow(p - q, edges, weights)[0]
    cost = domain if not isinstance(domain, Domain) else domain.distances()
    return dense_plan(p, q, cost)[0]


def _domain(domain: Domain | ArrayLike) -> Domain | NDArray[np.float64]:
    if isinstance(domain, Domain):
        return domain
    return as_cost_matrix(domain)


def emd(p: ArrayLike, q: ArrayLike, domain: Domain | ArrayLike, *, normalize: bool = True) -> float:
    r"""Exact Earth Mover's Distance between two non-negative mass vectors on ``domain``.

    Parameters
    ----------
    p, q : array_like
        Non-negative, finite masses, one per location (``domain.size``; a
        :class:`~dpcloak.domains.Grid` also accepts 2-D arrays of its ``shape``, row-major).
        Each must have positive total mass.
    domain : Domain or array_like
        A :class:`~dpcloak.domains.Line`, :class:`~dpcloak.domains.Grid`,
        :class:`~dpcloak.domains.GraphDomain` or an explicit non-negative ``(n, n)`` ground-cost
        matrix.
    normalize : bool, default True
        Scale ``p`` and ``q`` to unit mass first (seed 000, section 5: ``EMD(f₀/‖f₀‖₁, f̂/‖f̂‖₁)``).
        With ``False`` the masses must agree to a relative ``1e-9`` and the result is the
        unnormalised transport cost; for unequal masses use :func:`emd_norm`.

    Returns
    -------
    float
        The minimal transport cost in the domain's distance unit times mass: ``Line(n)`` — the
        unit interval (adjacent points ``1/n`` apart); ``Grid`` — physical units of ``extent``
        (cells ``extent/shape`` apart, L1 or L2 between cell centres); ``GraphDomain`` — the
        edge ``weight`` unit (shortest paths); a matrix — its entries. With ``normalize=True``
        the mass is 1, so the value is an average distance.

    Raises
    ------
    InvalidParameterError
        Negative, NaN or infinite entries, a shape not matching the domain, empty vectors, zero
        total mass, or (``normalize=False``) unequal total masses.
    ConvergenceError
        The general solver could not certify optimality (never returned silently).

    Examples
    --------
    >>> from dpcloak.domains import Grid
    >>> p = [[1, 0, 0], [0, 0, 0]]; q = [[0, 0, 0], [0, 0, 1]]
    >>> round(emd(p, q, Grid((2, 3), extent=(2.0, 3.0))), 12)  # one unit moved 1 down, 2 right
    3.0
    """
    dom = _domain(domain)
    pv = as_masses("p", p, dom)
    qv = as_masses("q", q, dom)
    mp, mq = total_mass("p", pv), total_mass("q", qv)
    if not normalize and abs(mp - mq) > MASS_RTOL * max(mp, mq):
        raise InvalidParameterError(
            f"p and q must have equal total mass when normalize=False, got {mp:g} and {mq:g}; "
            "use normalize=True or emd_norm for unequal masses"
        )
    value = _unit_emd(pv / mp, qv / mq, dom)
    return value if normalize else value * mp

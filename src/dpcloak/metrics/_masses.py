"""Validation and normalisation of the mass vectors handed to the EMD functions."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array
from dpcloak.domains import Domain, Grid
from dpcloak.errors import InvalidParameterError

__all__ = ["as_cost_matrix", "as_masses", "domain_size", "total_mass"]


def domain_size(domain: Domain | NDArray[np.float64]) -> int:
    """Number of locations of a domain or of a square ground-cost matrix."""
    return domain.size if isinstance(domain, Domain) else int(domain.shape[0])


def as_cost_matrix(cost: Any) -> NDArray[np.float64]:
    """Validate an explicit ground-cost matrix: square, finite, non-negative."""
    m = check_array("domain (ground-cost matrix)", cost, ndim=2, nonnegative=True)
    if m.shape[0] != m.shape[1]:
        raise InvalidParameterError(f"domain (ground-cost matrix) must be square, got shape {m.shape}",
                                    parameter="domain")
    return m


def as_masses(
    name: str, value: ArrayLike, domain: Domain | NDArray[np.float64], *, nonnegative: bool = True
) -> NDArray[np.float64]:
    """Return ``value`` as a flat float vector with one entry per location of ``domain``.

    A :class:`~dpcloak.domains.Grid` also accepts a 2-D array of the grid's ``shape`` (row-major).
    """
    n = domain_size(domain)
    arr = check_array(name, value, nonnegative=nonnegative)
    if isinstance(domain, Grid) and arr.shape == domain.shape:
        return arr.ravel()
    if arr.shape != (n,):
        want = f"({n},)" + (f" or {domain.shape}" if isinstance(domain, Grid) else "")
        raise InvalidParameterError(f"{name} must have shape {want} to match the domain, got {arr.shape}",
                                    parameter=name)
    return arr


def total_mass(name: str, value: NDArray[np.float64]) -> float:
    """Total mass of a non-negative vector, which must be positive."""
    total = float(np.sum(value))
    if not total > 0.0:
        raise InvalidParameterError(f"{name} must have positive total mass, got {total:g}", parameter=name)
    return total

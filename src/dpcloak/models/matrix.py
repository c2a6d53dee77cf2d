"""Any user-supplied matrix as a forward model."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpcloak._validation import check_array
from dpcloak.domains.base import Domain
from dpcloak.domains.line import Line
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import DenseModel

__all__ = ["matrix_model"]


def matrix_model(matrix: ArrayLike, domain: Domain | None = None, *, sensor_positions: Any = None) -> DenseModel:
    """Wrap a dense ``(m, n)`` matrix as a :class:`~dpcloak.models.base.LinearModel`.

    Parameters
    ----------
    matrix : array_like, shape (m, n)
        Finite matrix; column ``i`` is the reading pattern of a unit source at location ``i``.
    domain : Domain, optional
        Source domain with ``n`` locations; defaults to ``Line(n)``.
    sensor_positions : array_like, optional
        Recorded as metadata.

    Examples
    --------
    >>> model = matrix_model([[1.0, 0.0], [0.0, 0.5]])
    >>> model.matvec([1.0, 1.0]).tolist()
    [1.0, 0.5]
    """
    arr = check_array("matrix", matrix, ndim=2)
    if domain is None:
        domain = Line(arr.shape[1])
    if not isinstance(domain, Domain):
        raise InvalidParameterError(f"domain must be a dpcloak Domain, got {type(domain).__name__}", parameter="domain")
    return DenseModel(
        arr, domain=domain, sensor_positions=None if sensor_positions is None else np.asarray(sensor_positions)
    )

"""Input handling shared by the recovery solvers: models, readings and box bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_vector
from dpcloak.errors import InvalidParameterError
from dpcloak.models import LinearModel, matrix_model

__all__ = ["as_model", "readings", "box_bounds"]


def as_model(model: LinearModel | ArrayLike) -> LinearModel:
    """A :class:`LinearModel` as is; a 2-D array wrapped by :func:`~dpcloak.models.matrix_model`."""
    if isinstance(model, LinearModel):
        return model
    return matrix_model(check_array("model", model, ndim=2))


def readings(model: LinearModel, y: ArrayLike) -> NDArray[np.float64]:
    """The readings as a finite vector with one entry per sensor (row of the model)."""
    return check_vector("y", y, length=model.shape[0])


def box_bounds(bounds: Any, n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(lo, hi)`` vectors from ``(lower, upper)`` scalars or length-``n`` arrays.

    ``lower`` must be finite and ≥ 0 (sources are non-negative intensities, which makes ``‖f‖₁``
    the linear function ``Σ f``); ``upper`` may be ``None`` or ``inf`` and must exceed ``lower``.
    """
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise InvalidParameterError(f"bounds must be a pair (lower, upper), got {bounds!r}", parameter="bounds")
    lower, upper = bounds
    lo_arr = check_array("bounds[0]", np.atleast_1d(lower), ndim=1, nonnegative=True)
    if lo_arr.size not in (1, n):
        raise InvalidParameterError(f"bounds[0] must be a scalar or have length {n}, got {lo_arr.size} values",
                                    parameter="bounds[0]")
    lo = np.broadcast_to(lo_arr, (n,)).astype(float)
    if upper is None:
        hi = np.full(n, np.inf)
    else:
        try:
            up = np.asarray(upper, dtype=float)
        except (TypeError, ValueError):
            raise InvalidParameterError(f"bounds[1] must be a number, an array or None, got {upper!r}",
                                        parameter="bounds[1]") from None
        if np.any(np.isnan(up)) or np.any(up == -np.inf):
            raise InvalidParameterError(f"bounds[1] must be a number or +inf, got {upper!r}", parameter="bounds[1]")
        if up.ndim not in (0, 1) or (up.ndim == 1 and up.size != n):
            raise InvalidParameterError(f"bounds[1] must be a scalar or have length {n}, got shape {up.shape}",
                                        parameter="bounds[1]")
        hi = np.broadcast_to(up, (n,)).astype(float)
    if np.any(hi <= lo):
        raise InvalidParameterError(
            f"bounds must satisfy lower < upper for every location; got lower={lower!r}, upper={upper!r}",
            parameter="bounds"
        )
    return lo, hi

"""The one rule for turning an estimate into a distribution, including the empty answer.

A private recovery can legitimately return *nothing*: the all-zero estimate (BPDN returns it
whenever ``‖ỹ‖₂`` is within the data-fit radius; a heatmap's noisy counts can all be clipped
away). dpcloak reads the empty answer everywhere the same way: **it carries no information about
where the mass is, so it is the uniform distribution over the domain, flagged ``degenerate``**.
Scoring it as uniform is what a user who received it can do; the flag keeps it from passing as
a real answer. :func:`as_distribution` implements the rule; :func:`dpcloak.metrics.emd` applies
it to its inputs (``empty="uniform"``, the default) or refuses them (``empty="raise"``); the sensor
flow (:class:`dpcloak.sensors.NetworkRecovery`) and the heatmap front end report the flag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array

__all__ = ["Distribution", "as_distribution", "EMPTY_POLICIES"]

#: What :func:`dpcloak.metrics.emd` does with an all-zero input.
EMPTY_POLICIES = ("uniform", "raise")


@dataclass(frozen=True)
class Distribution:
    """An estimate as a probability distribution.

    Attributes
    ----------
    p : ndarray
        Non-negative, sums to 1, same shape as the estimate.
    mass : float
        Total mass of the estimate after clipping negatives to 0 (0 for the empty answer).
    degenerate : bool
        True for the empty answer (``p`` is then uniform).

    Examples
    --------
    Returned by :func:`as_distribution`:

    >>> d = as_distribution([0.0, 3.0, 1.0])
    >>> isinstance(d, Distribution), d.p.tolist(), d.mass, d.degenerate
    (True, [0.0, 0.75, 0.25], 4.0, False)
    """

    p: NDArray[np.float64]
    mass: float
    degenerate: bool


def as_distribution(estimate: ArrayLike) -> Distribution:
    """Clip at 0 and scale to unit mass; the all-zero estimate becomes uniform, flagged ``degenerate``.

    Examples
    --------
    >>> as_distribution([0.0, 3.0, 1.0]).p.tolist()
    [0.0, 0.75, 0.25]
    >>> d = as_distribution([0.0, -1.0])
    >>> d.p.tolist(), d.degenerate
    ([0.5, 0.5], True)
    """
    est = np.maximum(check_array("estimate", estimate), 0.0)
    total = float(est.sum())
    if not total > 0.0:
        return Distribution(np.full(est.shape, 1.0 / est.size), 0.0, True)
    return Distribution(est / total, total, False)

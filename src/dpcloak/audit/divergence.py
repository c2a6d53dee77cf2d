r"""Exact privacy parameters of a pair of discrete output distributions.

For a mechanism run on two neighbouring databases with output distributions ``P`` and ``Q`` on
``[n] = {0, …, n-1}`` (thesis Part IV restricts to this "two database setting", §9.1 and §10.2):

* the approximate-DP parameter at ``ε`` is (thesis eq. 10.1)

  .. math:: \delta_\epsilon(P\,\|\,Q) = \max_E P(E) - e^\epsilon Q(E)
            = \sum_i \max\{0,\ p_i - e^\epsilon q_i\},

  the maximum being attained by the event ``E = {i : p_i > e^ε q_i}``; ``(P, Q)`` is
  ``(ε, δ)``-DP iff ``δ ≥ max{δ_ε(P‖Q), δ_ε(Q‖P)}`` (both orders, because neighbouring is symmetric);
* the pure-DP parameter is ``ε(P, Q) = max_i |ln(p_i / q_i)|`` over outcomes with positive
  probability, ``+∞`` when one distribution puts mass where the other puts none.

These are the quantities the testers of :mod:`dpcloak.audit.testers` estimate from samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_real, check_vector
from dpcloak.errors import InvalidParameterError

__all__ = [
    "DeltaEpsilon",
    "check_distribution",
    "check_pair",
    "delta_epsilon",
    "pure_epsilon",
    "total_variation",
]

#: Largest tolerated ``|Σ p_i − 1|`` of a probability vector.
SUM_TOLERANCE = 1e-8


@dataclass(frozen=True)
class DeltaEpsilon:
    """``δ_ε`` of a pair of discrete distributions, in both orders.

    Attributes
    ----------
    epsilon : float
        The ``ε`` at which ``δ`` is evaluated.
    forward : float
        ``δ_ε(P‖Q) = max_E P(E) − e^ε Q(E)``.
    backward : float
        ``δ_ε(Q‖P) = max_E Q(E) − e^ε P(E)``.
    value : float
        ``max(forward, backward)``: the smallest ``δ`` for which ``(P, Q)`` is ``(ε, δ)``-DP.
    event : tuple of int
        The outcomes of the maximising event of the worse order (``{i : p_i > e^ε q_i}`` when
        ``forward ≥ backward``).

    Examples
    --------
    >>> d = delta_epsilon([0.5, 0.5], [0.25, 0.75], 0.0)
    >>> isinstance(d, DeltaEpsilon), d.forward, d.backward, d.value, d.event
    (True, 0.25, 0.25, 0.25, (0,))
    """

    epsilon: float
    forward: float
    backward: float
    value: float
    event: tuple[int, ...]


def check_distribution(name: str, p: ArrayLike, *, length: int | None = None) -> NDArray[np.float64]:
    """Return ``p`` as a probability vector: finite, non-negative, 1-D, summing to 1 within 1e-8.

    Examples
    --------
    >>> check_distribution("P", [0.25, 0.75]).tolist()
    [0.25, 0.75]
    >>> check_distribution("P", [0.5, 0.6])
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: P must sum to 1 (within 1e-08), got a sum of 1.1
    """
    arr = check_vector(name, p, length=length, nonnegative=True)
    total = float(arr.sum())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise InvalidParameterError(f"{name} must sum to 1 (within {SUM_TOLERANCE:g}), got a sum of {total:.12g}",
                                    parameter=name)
    return arr


def check_pair(P: ArrayLike, Q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate two distributions on the same support ``[n]`` (same length).

    Examples
    --------
    >>> P, Q = check_pair([0.5, 0.5], [0.25, 0.75])
    >>> P.tolist(), Q.tolist()
    ([0.5, 0.5], [0.25, 0.75])
    >>> check_pair([0.5, 0.5], [1.0])
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: P and Q must be distributions on the same support; got lengths 2 and 1
    """
    p = check_distribution("P", P)
    q = check_distribution("Q", Q)
    if p.shape != q.shape:
        raise InvalidParameterError(
            f"P and Q must be distributions on the same support; got lengths {p.size} and {q.size}",
            parameter="Q", allowed=f"length {p.size}", got=q.size
        )
    return p, q


def _one_sided(p: NDArray[np.float64], q: NDArray[np.float64], factor: float) -> tuple[float, NDArray[np.bool_]]:
    excess = p - factor * q
    # An excess within a few ulps of the terms is rounding (e.g. p = e^ε q computed in floating point).
    event = excess > 8 * np.finfo(float).eps * (p + factor * q)
    return min(1.0, max(0.0, float(excess[event].sum()))), event


def delta_epsilon(P: ArrayLike, Q: ArrayLike, epsilon: float) -> DeltaEpsilon:
    r"""``δ_ε`` of the pair ``(P, Q)`` in both orders (thesis eq. 10.1).

    Parameters
    ----------
    P, Q : array_like, shape (n,)
        Probability vectors on the same support (non-negative, summing to 1).
    epsilon : float
        ``ε ≥ 0``.

    Returns
    -------
    DeltaEpsilon
        ``forward = Σ_i max{0, p_i − e^ε q_i}``, ``backward`` with ``P`` and ``Q`` swapped, and
        ``value = max(forward, backward)``.

    Raises
    ------
    InvalidParameterError
        If ``ε < 0`` or not finite, or ``P``/``Q`` are not distributions on the same support.

    Examples
    --------
    At ``ε = 0`` it is the total variation; at ``ε = ln 2`` this pair needs no ``δ`` at all:

    >>> delta_epsilon([0.5, 0.5], [0.25, 0.75], 0.0).value
    0.25
    >>> delta_epsilon([0.5, 0.5], [0.25, 0.75], np.log(2)).value
    0.0
    """
    eps = check_real("epsilon", epsilon, low=0.0, low_inclusive=True)
    p, q = check_pair(P, Q)
    factor = math.exp(eps)
    fwd, fwd_event = _one_sided(p, q, factor)
    bwd, bwd_event = _one_sided(q, p, factor)
    event = fwd_event if fwd >= bwd else bwd_event
    return DeltaEpsilon(eps, fwd, bwd, max(fwd, bwd), tuple(int(i) for i in np.flatnonzero(event)))


def pure_epsilon(P: ArrayLike, Q: ArrayLike) -> float:
    r"""The pure-DP parameter ``max_i |ln(p_i / q_i)|`` of ``(P, Q)``.

    Outcomes with ``p_i = q_i = 0`` are ignored; an outcome with exactly one of them zero gives
    ``+∞`` (no finite ``ε`` makes the pair ``ε``-DP). This is why pure DP cannot be verified from
    samples without side information (thesis Theorem 10.5): a mass too small to be sampled can make
    ``ε`` arbitrarily large.

    Examples
    --------
    >>> bool(np.isclose(pure_epsilon([0.5, 0.5], [0.25, 0.75]), np.log(2)))  # the ratio 0.5/0.25
    True
    >>> pure_epsilon([0.5, 0.5, 0.0], [0.5, 0.25, 0.25])  # an outcome only one side can produce
    inf
    """
    p, q = check_pair(P, Q)
    both = (p > 0) & (q > 0)
    if np.any((p > 0) != (q > 0)):
        return math.inf
    if not np.any(both):
        return 0.0
    return float(np.max(np.abs(np.log(p[both]) - np.log(q[both]))))


def total_variation(P: ArrayLike, Q: ArrayLike) -> float:
    """Total-variation distance ``½ Σ_i |p_i − q_i|`` (the metric of thesis Lemma 10.6).

    Examples
    --------
    >>> total_variation([0.5, 0.5], [0.25, 0.75])
    0.25
    """
    p, q = check_pair(P, Q)
    return 0.5 * float(np.abs(p - q).sum())

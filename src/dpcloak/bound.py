"""The result type shared by every published bound dpcloak implements."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Bound"]


@dataclass(frozen=True)
class Bound:
    """A bound from a paper, evaluated at given parameters.

    Attributes
    ----------
    value : float
        The bound's value (``nan`` when it does not apply).
    kind : {"upper", "lower"}
        Which side it bounds.
    source : str
        Where it comes from (paper, result number, and "corrected" when dpcloak fixed a typo).
    applies : bool
        Whether its assumptions hold at these parameters.
    reason : str
        Why it does not apply (empty when it does), or a note on unspecified constants.

    Examples
    --------
    >>> b = Bound(0.25, "upper", "Gilbert & McMillan, Theorem 8")
    >>> b.value, b.kind, b.applies
    (0.25, 'upper', True)
    >>> Bound(float("nan"), "lower", "Gilbert & McMillan, Lemma 5", False, "needs n <= m").reason
    'needs n <= m'
    """

    value: float
    kind: str
    source: str
    applies: bool = True
    reason: str = ""

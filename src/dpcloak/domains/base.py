"""The :class:`Domain` interface: where sources live and how far apart they are."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import NDArray

__all__ = ["Domain"]


class Domain(ABC):
    """A finite set of source locations with a ground metric and a neighbour relation.

    Locations are indexed ``0 .. size-1``. Two locations are *neighbours* when a unit of mass can
    move between them in one step; the privacy relation of the thesis (Definition 6.2,
    α-neighbours) is built from these steps, see :func:`dpcloak.privacy.sensitivity.l2_sensitivity`.

    Examples
    --------
    Every concrete domain answers the same questions:

    >>> from dpcloak.domains import Domain, Line
    >>> line = Line(3)
    >>> isinstance(line, Domain), line.size
    (True, 3)
    >>> line.neighbours().tolist(), line.neighbour_steps().tolist()
    ([[0, 1], [1, 2]], [1.0, 1.0])
    >>> line.diameter()  # from the first cell centre (1/3) to the last (1)
    0.6666666666666666
    """

    @property
    @abstractmethod
    def size(self) -> int:
        """Number of locations (the ``n`` of the papers)."""

    @abstractmethod
    def neighbours(self) -> NDArray[np.intp]:
        """Neighbouring pairs as an ``(p, 2)`` integer array with ``i < j`` in each row."""

    def neighbour_steps(self) -> NDArray[np.float64]:
        """Length of each neighbouring pair in privacy steps (1 unless the domain is weighted)."""
        return np.ones(len(self.neighbours()))

    @abstractmethod
    def coordinates(self) -> NDArray[np.float64] | None:
        """Coordinates of the locations as ``(size, d)``, or ``None`` where they are not meaningful."""

    @abstractmethod
    def distances(self) -> NDArray[np.float64]:
        """The dense ``(size, size)`` ground-metric matrix."""

    def diameter(self) -> float:
        """Largest ground distance between two locations."""
        return float(np.max(self.distances()))

    def __len__(self) -> int:
        return self.size

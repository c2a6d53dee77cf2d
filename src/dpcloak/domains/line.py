"""The unit interval discretised as in Gilbert & McMillan, section 2.1."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_int
from dpcloak.domains.base import Domain

__all__ = ["Line"]


@dataclass(frozen=True)
class Line(Domain):
    """``n`` points ``i/n`` for ``i = 1..n`` on [0, 1]; adjacent points are neighbours.

    The ground metric is ``|i - j| / n`` (Gilbert & McMillan, Definition 7 on the support ``{1/n, ..., 1}``).
    Neighbouring pairs are ``(i, i+1)``: swapping the entries of two adjacent points is the
    neighbouring relation of Gilbert & McMillan, Definition 2.

    Examples
    --------
    >>> Line(4).coordinates().ravel().tolist()
    [0.25, 0.5, 0.75, 1.0]
    """

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=1))

    @property
    def size(self) -> int:
        return self.n

    @property
    def spacing(self) -> float:
        """Distance between adjacent points, ``1/n``."""
        return 1.0 / self.n

    def points(self) -> NDArray[np.float64]:
        """The positions ``i/n``, ``i = 1..n``, as a 1-D array."""
        return np.arange(1, self.n + 1, dtype=float) / self.n

    def coordinates(self) -> NDArray[np.float64]:
        return self.points()[:, None]

    def neighbours(self) -> NDArray[np.intp]:
        i = np.arange(self.n - 1, dtype=np.intp)
        return np.stack([i, i + 1], axis=1)

    def distances(self) -> NDArray[np.float64]:
        p = self.points()
        return np.abs(p[:, None] - p[None, :])

    def diameter(self) -> float:
        return (self.n - 1) / self.n

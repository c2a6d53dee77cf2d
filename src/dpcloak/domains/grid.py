"""Rectangular floor grids."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.domains.base import Domain
from dpcloak.errors import InvalidParameterError

__all__ = ["Grid"]


@dataclass(frozen=True)
class Grid(Domain):
    """Cells of a ``rows x cols`` floor plan covering ``[0, height] x [0, width]``.

    Parameters
    ----------
    shape : (rows, cols)
        Number of cells along y and x.
    extent : (height, width), default (1.0, 1.0)
        Physical size of the floor.
    metric : {"l1", "l2"}, default "l1"
        Ground metric between cell centres. L1 is the metric of Ghazi et al. (EMD on the Δ x Δ grid).

    Notes
    -----
    Cells are indexed row-major: cell ``(r, c)`` has index ``r * cols + c`` and centre
    ``((r + 1/2) h_y, (c + 1/2) h_x)`` with ``h_y = height / rows``, ``h_x = width / cols``.
    Neighbours share an edge (4-neighbourhood).

    Examples
    --------
    >>> g = Grid((2, 3), extent=(2.0, 3.0))
    >>> g.size, g.spacing
    (6, (1.0, 1.0))
    >>> g.coordinates()[4].tolist()  # cell (1, 1): centre (y, x)
    [1.5, 1.5]
    >>> len(g.neighbours())  # 3 vertical + 4 horizontal edges
    7
    >>> float(g.distances()[0, 5]), g.diameter()  # L1: 1 down + 2 right
    (3.0, 3.0)
    """

    shape: tuple[int, int]
    extent: tuple[float, float] = (1.0, 1.0)
    metric: str = "l1"

    def __post_init__(self) -> None:
        try:
            rows, cols = self.shape
        except (TypeError, ValueError):
            raise InvalidParameterError(f"shape must be a pair (rows, cols), got {self.shape!r}",
                                        parameter="shape") from None
        try:
            height, width = self.extent
        except (TypeError, ValueError):
            raise InvalidParameterError(f"extent must be a pair (height, width), got {self.extent!r}",
                                        parameter="extent") from None
        object.__setattr__(
            self, "shape", (check_int("shape[0]", rows, minimum=1), check_int("shape[1]", cols, minimum=1))
        )
        object.__setattr__(
            self, "extent", (check_real("extent[0]", height, low=0.0), check_real("extent[1]", width, low=0.0))
        )
        check_choice("metric", self.metric, ("l1", "l2"))

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def spacing(self) -> tuple[float, float]:
        """Cell size ``(h_y, h_x)``."""
        return (self.extent[0] / self.shape[0], self.extent[1] / self.shape[1])

    def axes(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Cell-centre coordinates along y (rows) and x (columns)."""
        hy, hx = self.spacing
        ys = (np.arange(self.shape[0], dtype=np.float64) + 0.5) * hy
        xs = (np.arange(self.shape[1], dtype=np.float64) + 0.5) * hx
        return ys, xs

    def coordinates(self) -> NDArray[np.float64]:
        ys, xs = self.axes()
        yy, xx = np.meshgrid(ys, xs, indexing="ij")
        return np.stack([yy.ravel(), xx.ravel()], axis=1)

    def neighbours(self) -> NDArray[np.intp]:
        rows, cols = self.shape
        idx = np.arange(self.size, dtype=np.intp).reshape(rows, cols)
        horizontal = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
        vertical = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
        return np.concatenate([horizontal, vertical]).astype(np.intp)

    def distances(self) -> NDArray[np.float64]:
        xy = self.coordinates()
        diff = np.abs(xy[:, None, :] - xy[None, :, :])
        if self.metric == "l1":
            return np.asarray(diff.sum(axis=2))
        return np.asarray(np.sqrt((diff**2).sum(axis=2)))

    def diameter(self) -> float:
        ys, xs = self.axes()
        dy, dx = ys[-1] - ys[0], xs[-1] - xs[0]
        return float(dy + dx) if self.metric == "l1" else float(np.hypot(dy, dx))

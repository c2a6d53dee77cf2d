"""Source locations at arbitrary points in the plane, in metres (sensor sites, landmarks)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array
from dpcloak.domains.base import Domain
from dpcloak.errors import InvalidParameterError

__all__ = ["Sites", "closest_pair"]


def closest_pair(positions: NDArray[np.float64]) -> tuple[int, int, float]:
    """The two closest of ``positions`` (``(n, d)``, n ≥ 2) and their Euclidean distance (k-d tree).

    Examples
    --------
    >>> import numpy as np
    >>> closest_pair(np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 5.0]]))
    (1, 2, 1.0)
    """
    from scipy.spatial import cKDTree

    dist, idx = cKDTree(positions).query(positions, k=2)
    i = int(np.argmin(dist[:, 1]))
    j = int(idx[i, 1]) if idx[i, 1] != i else int(idx[i, 0])  # a duplicate may come first
    return min(i, j), max(i, j), float(dist[i, 1])


@dataclass(frozen=True, eq=False)
class Sites(Domain):
    """``n`` distinct points of the plane with the Euclidean metric, in metres.

    Parameters
    ----------
    positions : array_like, shape (n, 2)
        ``(x, y)`` = metres east and north in a local frame (e.g. from
        :class:`dpcloak.geo.LocalProjection`). Two points at the same place are refused: merge
        them first (they would be one location).

    Notes
    -----
    Every pair of sites is a neighbouring pair whose length (:meth:`neighbour_steps`) is its
    Euclidean distance, so the ground metric is the Euclidean distance itself (the EMD moves mass
    straight from site to site). Meant for up to a few thousand sites (the pairs are enumerated).

    Examples
    --------
    >>> Sites([[0.0, 0.0], [30.0, 40.0]]).distances()[0, 1]
    np.float64(50.0)
    """

    positions: NDArray[np.float64]

    def __post_init__(self) -> None:
        pos = check_array("positions", self.positions, shape=(None, 2)).copy()
        if len(pos) >= 2:
            i, j, d = closest_pair(pos)
            if d == 0.0:
                raise InvalidParameterError(
                    f"positions must be distinct; points {i} and {j} are both at {tuple(pos[i].tolist())}: "
                    "merge co-located points into one site", parameter="positions"
                )
        pos.setflags(write=False)
        object.__setattr__(self, "positions", pos)

    @property
    def size(self) -> int:
        return len(self.positions)

    def neighbours(self) -> NDArray[np.intp]:
        i, j = np.triu_indices(self.size, k=1)
        return np.stack([i, j], axis=1).astype(np.intp)

    def neighbour_steps(self) -> NDArray[np.float64]:
        """Euclidean length of every pair, in metres."""
        pairs = self.neighbours()
        return np.asarray(np.linalg.norm(self.positions[pairs[:, 0]] - self.positions[pairs[:, 1]], axis=1))

    def coordinates(self) -> NDArray[np.float64]:
        return np.array(self.positions)

    def distances(self) -> NDArray[np.float64]:
        """The Euclidean distance matrix, computed once and kept (read-only): every EMD on the sites uses it."""
        return self._distance_matrix

    def __getstate__(self) -> dict[str, object]:
        # pickle restores arrays writeable: leave the cache out, the copy computes its own read-only one
        return {k: v for k, v in self.__dict__.items() if k != "_distance_matrix"}

    @cached_property
    def _distance_matrix(self) -> NDArray[np.float64]:
        diff = self.positions[:, None, :] - self.positions[None, :, :]
        matrix = np.sqrt((diff**2).sum(axis=2))
        matrix.setflags(write=False)
        return matrix


def as_sites(positions: ArrayLike | Sites) -> Sites:
    """``positions`` as :class:`Sites` (unchanged if it already is one)."""
    return positions if isinstance(positions, Sites) else Sites(np.asarray(positions, dtype=float))

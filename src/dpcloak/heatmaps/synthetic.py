"""Synthetic location data: uniform mixtures of random 2-D Gaussians (Ghazi et al., Appendix E.3).

Each component has a mean uniform in [0.1, 0.9]² and a random covariance R diag(s₁², s₂²) Rᵀ (R a
random rotation, s_j log-uniform in ``spread``). Every user draws ``points_per_user`` i.i.d. points from
the uniform mixture; points falling outside [0, 1)² are redrawn (truncated mixture). The number of
components, the spread and the number of points control the sparsity (fraction of non-empty cells).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_int, check_real
from dpcloak.errors import InvalidParameterError

__all__ = ["PointSet", "gaussian_mixture_points"]


@dataclass(frozen=True)
class PointSet:
    """Points of many users in [0, 1)².

    Attributes
    ----------
    users : ndarray, shape (N,)
        User id of each point.
    x, y : ndarray, shape (N,)
        Coordinates in [0, 1).

    Examples
    --------
    >>> pts = gaussian_mixture_points(n_users=20, n_components=2, points_per_user=3, rng=0)
    >>> isinstance(pts, PointSet), pts.n_users, pts.x.shape, pts.users.shape
    (True, 20, (60,), (60,))
    >>> pts.sample_users(5, rng=0).n_users
    5
    """

    users: NDArray[Any]
    x: NDArray[np.float64]
    y: NDArray[np.float64]

    @property
    def n_users(self) -> int:
        """Number of distinct users."""
        return int(np.unique(self.users).size)

    def sample_users(self, k: int, *, rng: RngLike = None) -> PointSet:
        """The points of k users drawn uniformly without replacement."""
        ids = np.unique(self.users)
        k = check_int("k", k, minimum=1, maximum=ids.size)
        keep = as_generator(rng).choice(ids, size=k, replace=False)
        mask = np.isin(self.users, keep)
        return PointSet(users=self.users[mask], x=self.x[mask], y=self.y[mask])


def gaussian_mixture_points(
    *,
    n_users: int = 200,
    n_components: int = 20,
    points_per_user: int = 10,
    spread: tuple[float, float] = (0.002, 0.02),
    rng: RngLike = None,
) -> PointSet:
    """Users' points drawn from a uniform mixture of random 2-D Gaussians (Appendix E.3).

    Parameters
    ----------
    n_users : int
        Number of users.
    n_components : int
        Number of Gaussians in the mixture.
    points_per_user : int
        Points drawn per user.
    spread : (float, float)
        Range (low, high) of the per-axis standard deviations, sampled log-uniformly.
    rng : Generator, int or None
        Randomness.

    Examples
    --------
    >>> pts = gaussian_mixture_points(n_users=20, n_components=2, points_per_user=3, rng=0)
    >>> len(pts.x), bool(np.all((pts.x >= 0) & (pts.x < 1) & (pts.y >= 0) & (pts.y < 1)))
    (60, True)
    """
    n = check_int("n_users", n_users, minimum=1)
    k = check_int("n_components", n_components, minimum=1)
    m = check_int("points_per_user", points_per_user, minimum=1)
    lo = check_real("spread[0]", spread[0], low=0.0)
    hi = check_real("spread[1]", spread[1], low=0.0)
    if hi < lo:
        raise InvalidParameterError(f"spread must be (low, high) with low <= high, got {spread}",
                                    parameter="spread", allowed="(low, high) with low <= high", got=spread)
    gen = as_generator(rng)
    means = gen.uniform(0.1, 0.9, size=(k, 2))
    scales = np.exp(gen.uniform(np.log(lo), np.log(hi), size=(k, 2)))
    angles = gen.uniform(0.0, np.pi, size=k)
    rot = np.stack([np.stack([np.cos(angles), -np.sin(angles)], axis=1),
                    np.stack([np.sin(angles), np.cos(angles)], axis=1)], axis=1)  # (k, 2, 2)
    total = n * m
    xy = np.empty((total, 2))
    todo = np.arange(total)
    while todo.size:
        comp = gen.integers(0, k, size=todo.size)
        z = gen.standard_normal((todo.size, 2)) * scales[comp]
        pts = means[comp] + np.einsum("nij,nj->ni", rot[comp], z)
        ok = np.all((pts >= 0.0) & (pts < 1.0), axis=1)
        xy[todo[ok]] = pts[ok]
        todo = todo[~ok]
    return PointSet(users=np.repeat(np.arange(n, dtype=np.int64), m), x=xy[:, 0].copy(), y=xy[:, 1].copy())

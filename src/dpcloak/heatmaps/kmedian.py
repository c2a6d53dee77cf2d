"""Private planar k-median via a private coreset (Ghazi et al., Appendix A, Corollaries A.1–A.2).

Each input point x_i ∈ [0, 1)² is a user with p_i = 1_{x_i}; Algorithm 1 + RECONSTRUCT give ŝ
(unnormalised), which is a (λ, O(√k/ε)) coreset: for every set C of k centres,
|cost_C(X) − cost_C(ŝ)| ≤ ‖s − ŝ‖_EMD ≤ λ cost_C(X) + O(√k/ε), with
cost_C(X) = Σ_x min_{c ∈ C} ‖c − x‖₁. Any non-private k-median algorithm run on the coreset then
gives the approximation of Corollary A.2; here a weighted ℓ1 Lloyd iteration (assign to the nearest
centre in ℓ1, move each centre to the coordinate-wise weighted median of its cluster, which is the
exact ℓ1 minimiser for a fixed assignment), started k-means++-style, best of ``n_init`` starts.

The coreset's points are the centres of RECONSTRUCT's regions (left-out cells and finest selected
cells) weighted by their masses: O(wℓ) weighted points.

Paper note: Appendix A sets "Δ = ⌈log(ε/(n√k))⌉", which is not a grid size (it is negative whenever
n√k > ε). Snapping moves each point by at most 2/Δ in ℓ1, changing any cost by at most 2n/Δ, which is
O(√k/ε) once Δ ≥ εn/√k; the intended choice is presumably Δ = 2^⌈log₂(εn/√k)⌉. dpcloak leaves
``resolution`` to the caller and reports the cost on the original points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_array, check_int
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.aggregate import hierarchical_laplace
from dpcloak.heatmaps.data import bound_users
from dpcloak.heatmaps.reconstruct import reconstruct
from dpcloak.heatmaps.release import release_randomness
from dpcloak.privacy.mechanisms import PrivacyGuarantee

__all__ = ["Coreset", "KMedianResult", "private_coreset", "kmedian", "kmedian_cost", "private_kmedian"]


@dataclass(frozen=True)
class Coreset:
    """Weighted points (x, y) in [0, 1)² whose k-median costs approximate the input's.

    Privacy guarantee
    -----------------
    ε-DP under add/remove-one-point (each point is a user; see :func:`private_coreset`).

    Examples
    --------
    Returned by :func:`private_coreset`:

    >>> pts = np.random.default_rng(0).uniform(0, 1, (40, 2))
    >>> coreset = private_coreset(pts, epsilon=1.0, resolution=8)  # exact noise from the OS CSPRNG
    >>> isinstance(coreset, Coreset), len(coreset.points) == len(coreset.weights), coreset.guarantee().kind
    (True, True, 'ε-DP')
    """

    points: NDArray[np.float64]
    weights: NDArray[np.float64]
    privacy: PrivacyGuarantee

    def guarantee(self) -> PrivacyGuarantee:
        """The guarantee of the release."""
        return self.privacy


@dataclass(frozen=True)
class KMedianResult:
    """k centres and their costs.

    Attributes
    ----------
    centers : ndarray, shape (k, 2)
        Centres (x, y).
    cost : float
        cost_C(X) on the original points (not private; for evaluation).
    coreset_cost : float
        cost_C(ŝ) on the coreset.
    coreset : Coreset
        The private coreset the centres were computed from (the only thing that touched the data).

    Examples
    --------
    Returned by :func:`private_kmedian`:

    >>> pts = np.random.default_rng(0).uniform(0, 1, (40, 2))
    >>> result = private_kmedian(pts, k=2, epsilon=1.0, resolution=8)
    >>> isinstance(result, KMedianResult), result.centers.shape, isinstance(result.coreset, Coreset)
    (True, (2, 2), True)
    """

    centers: NDArray[np.float64]
    cost: float
    coreset_cost: float
    coreset: Coreset


def _points(name: str, points: ArrayLike) -> NDArray[np.float64]:
    return check_array(name, points, shape=(None, 2))


def kmedian_cost(points: ArrayLike, centers: ArrayLike, weights: ArrayLike | None = None) -> float:
    """cost_C(X) = Σ_x w_x min_{c ∈ C} ‖c − x‖₁.

    Examples
    --------
    >>> kmedian_cost([[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0]])  # ℓ1 distance 2 to the only centre
    2.0
    >>> kmedian_cost([[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0]], weights=[1.0, 3.0])
    6.0
    """
    p = _points("points", points)
    c = _points("centers", centers)
    d = np.abs(p[:, None, :] - c[None, :, :]).sum(axis=2).min(axis=1)
    w = np.ones(p.shape[0]) if weights is None else check_array("weights", weights, shape=(p.shape[0],),
                                                                 nonnegative=True)
    return float(w @ d)


def _weighted_median(values: NDArray[np.float64], weights: NDArray[np.float64]) -> float:
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, 0.5 * cum[-1])])


def kmedian(
    points: ArrayLike, *, k: int, weights: ArrayLike | None = None, n_init: int = 5, max_iter: int = 100,
    rng: RngLike = None,
) -> NDArray[np.float64]:
    """Non-private weighted ℓ1 k-median (Lloyd iterations with weighted medians, k-means++ starts).

    Examples
    --------
    Two tight pairs of points, two centres (one of each pair: weighted medians of two points):

    >>> pts = np.array([[0.1, 0.1], [0.12, 0.1], [0.9, 0.9], [0.88, 0.9]])
    >>> centers = kmedian(pts, k=2, rng=0)
    >>> sorted(round(float(c), 2) for c in centers[:, 0]), round(kmedian_cost(pts, centers), 2)
    ([0.1, 0.88], 0.04)
    """
    p = _points("points", points)
    kk = check_int("k", k, minimum=1, maximum=p.shape[0])
    w = np.ones(p.shape[0]) if weights is None else check_array("weights", weights, shape=(p.shape[0],),
                                                                 nonnegative=True)
    if not w.sum() > 0:
        raise InvalidParameterError("weights must have positive total", parameter="weights")
    gen = as_generator(rng)
    best, best_cost = p[:kk].copy(), np.inf
    for _ in range(check_int("n_init", n_init, minimum=1)):
        centers = p[[gen.choice(p.shape[0], p=w / w.sum())]]
        while centers.shape[0] < kk:
            d = np.abs(p[:, None, :] - centers[None]).sum(axis=2).min(axis=1) * w
            nxt = gen.choice(p.shape[0], p=d / d.sum()) if d.sum() > 0 else gen.integers(p.shape[0])
            centers = np.vstack([centers, p[nxt]])
        for _ in range(check_int("max_iter", max_iter, minimum=1)):
            assign = np.abs(p[:, None, :] - centers[None]).sum(axis=2).argmin(axis=1)
            new = centers.copy()
            for j in range(kk):
                mine = (assign == j) & (w > 0)
                if mine.any():
                    new[j] = [_weighted_median(p[mine, a], w[mine]) for a in (0, 1)]
            if np.array_equal(new, centers):
                break
            centers = new
        cost = kmedian_cost(p, centers, w)
        if cost < best_cost:
            best, best_cost = centers, cost
    return best


def private_coreset(
    points: ArrayLike, *, epsilon: float, resolution: int, w: int = 20, gamma: float = 2**-0.5, rng: RngLike = None,
    noise: str = "secure", simulation: bool = False,
) -> Coreset:
    """Corollary A.1: Algorithm 1 + RECONSTRUCT on p_i = 1_{x_i}, output ŝ unnormalised as weighted points.

    ``noise`` and ``simulation`` as in :func:`~dpcloak.heatmaps.api.private_heatmap`: exact discrete
    Laplace from the OS CSPRNG by default, a seed refused unless ``simulation=True``.

    Privacy guarantee
    -----------------
    ε-DP under adding/removing one point (one point = one user, ℓ1 sensitivity 1 per level); with
    ``noise="float"`` for idealised real-valued noise only.

    Examples
    --------
    A few weighted points stand in for the 40 input points (released with exact noise, no seed):

    >>> pts = np.random.default_rng(0).uniform(0, 1, (40, 2))
    >>> coreset = private_coreset(pts, epsilon=1.0, resolution=8)
    >>> coreset.points.shape[1], bool(np.all(coreset.weights > 0))
    (2, True)
    >>> private_coreset(pts, epsilon=1.0, resolution=8, rng=0)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rng must be None for a release with noise='secure' ...
    """
    p = _points("points", points)
    release_randomness(rng, noise, simulation=simulation)
    agg = bound_users(np.arange(p.shape[0]), p[:, 0], p[:, 1], resolution=resolution)
    noisy = hierarchical_laplace(agg, epsilon=epsilon, w=w, gamma=gamma, rng=rng, noise=noise, simulation=simulation)
    rec = reconstruct(noisy, w=w)
    keep = rec.region_masses > 0
    side = np.left_shift(1, rec.region_levels[keep]).astype(float)
    rows, cols = np.divmod(rec.region_cells[keep], np.left_shift(1, rec.region_levels[keep]))
    centres = np.stack([(cols + 0.5) / side, (rows + 0.5) / side], axis=1)
    return Coreset(points=centres, weights=rec.region_masses[keep], privacy=noisy.guarantee())


def private_kmedian(
    points: ArrayLike, *, k: int, epsilon: float, resolution: int, w: int = 20, gamma: float = 2**-0.5,
    rng: RngLike = None, noise: str = "secure", simulation: bool = False,
) -> KMedianResult:
    """Corollary A.2: non-private k-median on the private coreset; costs reported on both.

    ``rng``, ``noise`` and ``simulation`` as in :func:`private_coreset` (the k-median step is
    post-processing and takes fresh OS entropy when ``rng`` is ``None``). ``cost`` is computed on the
    true points: a curator-side evaluation, not private.

    Privacy guarantee
    -----------------
    That of :func:`private_coreset` for ``centers`` and ``coreset``; ``cost`` is not private.

    Examples
    --------
    >>> pts = np.random.default_rng(0).uniform(0, 1, (40, 2))
    >>> result = private_kmedian(pts, k=2, epsilon=1.0, resolution=8)
    >>> result.centers.shape, bool(result.cost > 0), result.coreset.guarantee().epsilon
    ((2, 2), True, 1.0)
    """
    p = _points("points", points)
    release_randomness(rng, noise, simulation=simulation)
    gen = None if rng is None else as_generator(rng)
    core = private_coreset(p, epsilon=epsilon, resolution=resolution, w=w, gamma=gamma, rng=gen, noise=noise,
                           simulation=simulation)
    if core.points.shape[0] == 0:
        raise InvalidParameterError("the private coreset is empty (all noisy mass negative); increase epsilon",
                                    parameter="epsilon")
    kk = min(check_int("k", k, minimum=1), core.points.shape[0])
    centers = kmedian(core.points, k=kk, weights=core.weights, rng=gen)
    return KMedianResult(centers=centers, cost=kmedian_cost(p, centers),
                         coreset_cost=kmedian_cost(core.points, centers, core.weights), coreset=core)

"""Algorithm 1's measurements in the shuffle model (Ghazi et al., Appendix F, after [BBGN20]), simulated.

Each user j holds its bounded distribution p_j and, for every measured level i, computes
y^j_i = P_i p_j, scales and rounds z^j = ⌊B y^j⌋, adds Pólya noise, splits the result into r additive
shares modulo q and sends the r·m messages (coordinate, share) to the shuffler. The analyzer adds up,
per coordinate, all the shares it receives (mod q), maps residues to signed integers and divides by
B, obtaining y'_i ≈ P_i s + noise; RECONSTRUCT then runs unchanged. Summation is invariant under
the shuffler's permutation, so the simulation adds the shares without permuting them.

Parameters (App. F with [BBGN20] Corollary 6 / Lemma 5.2): m = Σ_i m_i coordinates, and

    r = ⌈(2 ln(e^ε + 1) + 2 ln(m/δ) + ln q) / ln n + 1⌉,

each message costing ⌈log₂(m q)⌉ bits (r·m·⌈log₂(m q)⌉ bits per user).

Discrepancies with the printed protocol (each checked by the tests):

* Noise. Appendix F adds ``Polya(1/n, e^{-ε_i})`` once per coordinate. A single Pólya term is
  non-negative, so the sum over users would be one-sided (negative-binomial/geometric) noise, which
  is not ε-DP; [BBGN20] uses the *difference* of two Pólya(1/n, α) terms, whose sum over n users is
  the discrete Laplace distribution DLap(α). Moreover the values are scaled by B, so a user moves
  Σ_c z(c) by up to B and the discrete Laplace parameter must be α_i = e^{−ε_i/B} for ε_i-DP per level;
  e^{−ε_i} would give only (B ε_i)-DP. dpcloak uses the difference of two Pólya(1/n, e^{−ε_i/B}).
* The split step writes w^r = z^j − w^1 − … − w^{r−1} with the noiseless z^j; the noisy z'^j is meant
  (otherwise no noise is ever sent).
* The modulus q = Bn cannot hold a coordinate whose true sum is Bn (it wraps to 0). dpcloak uses
  q = 4Bn and decodes residues ≥ q/2 as negative, which is exact while |sum + noise| < 2Bn.
* The vector y^j is printed as [P_0 p_j, P_2 p_j, …] (P_1 missing); all measured levels are used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_int, check_probability, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.aggregate import USER_NEIGHBOURING, LevelBudget, NoisyPyramid, level_budget
from dpcloak.heatmaps.data import _coordinates, _snap_unchecked, check_resolution, user_codes
from dpcloak.privacy.mechanisms import PrivacyGuarantee

__all__ = ["ShuffleRelease", "shuffle_pyramid", "shuffle_messages"]

_MAX_CHUNK = 1 << 22


def shuffle_messages(*, epsilon: float, delta: float, n_users: int, n_coordinates: int, modulus: int) -> int:
    """r = ⌈(2 ln(e^ε + 1) + 2 ln(m/δ) + ln q) / ln n + 1⌉ messages per coordinate and user.

    Examples
    --------
    >>> import math
    >>> r = shuffle_messages(epsilon=1.0, delta=1e-6, n_users=10_000, n_coordinates=64, modulus=2**20)
    >>> r, r == math.ceil((2 * math.log(math.e + 1) + 2 * math.log(64 / 1e-6) + math.log(2**20)) / math.log(10_000) + 1)
    (7, True)
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    dlt = check_probability("delta", delta)
    n = check_int("n_users", n_users, minimum=2)
    m = check_int("n_coordinates", n_coordinates, minimum=1)
    q = check_int("modulus", modulus, minimum=2)
    log_e = eps + math.log1p(math.exp(-eps))  # ln(e^ε + 1) without overflow
    return math.ceil((2 * log_e + 2 * math.log(m / dlt) + math.log(q)) / math.log(n) + 1)


@dataclass(frozen=True)
class ShuffleRelease:
    """What the analyzer obtains in the shuffle model, ready for RECONSTRUCT.

    Attributes
    ----------
    pyramid : NoisyPyramid
        Decoded y'_i · 2^i = z'_i / B per measured level (``pyramid.guarantee()`` is the shuffle one).
    scale_factor, modulus, messages_per_user_coordinate : int
        B, q and r.
    bits_per_user : int
        r · m · ⌈log₂(m q)⌉.
    alphas : tuple of float
        Discrete Laplace parameters α_i = e^{−ε_i/B} of the summed noise.

    Privacy guarantee
    -----------------
    (ε, δ)-DP in the shuffle model under add/remove-one-user ([BBGN20] Corollary 6 and Lemma 5.2 with
    the parameters above; per level the summed noise is DLap(e^{−ε_i/B}) on values with sensitivity B,
    and Σ ε_i = ε).

    Examples
    --------
    Returned by :func:`shuffle_pyramid`:

    >>> release = shuffle_pyramid([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], epsilon=1.0, delta=1e-6,
    ...                           resolution=4, rng=0)
    >>> isinstance(release, ShuffleRelease), release.scale_factor, release.pyramid.resolution
    (True, 256, 4)
    """

    pyramid: NoisyPyramid
    scale_factor: int
    modulus: int
    messages_per_user_coordinate: int
    bits_per_user: int
    alphas: tuple[float, ...]

    def guarantee(self) -> PrivacyGuarantee:
        """(ε, δ)-DP in the shuffle model."""
        return self.pyramid.guarantee()


def _polya_difference(gen: np.random.Generator, r: float, alpha: float, shape: tuple[int, ...]) -> NDArray[np.int64]:
    """Pólya(r, α) − Pólya(r, α): negative binomial with r 'successes' of probability 1 − α, twice."""
    if alpha == 0.0:
        return np.zeros(shape, dtype=np.int64)
    p = 1.0 - alpha
    return (gen.negative_binomial(r, p, size=shape) - gen.negative_binomial(r, p, size=shape)).astype(np.int64)


def shuffle_pyramid(
    users: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    *,
    epsilon: float,
    delta: float,
    resolution: int,
    scale_factor: int = 256,
    w: int = 20,
    gamma: float = 2**-0.5,
    rng: RngLike = None,
) -> ShuffleRelease:
    """Simulate Appendix F: every user's noisy, secret-shared level vectors, summed by the analyzer.

    Parameters
    ----------
    users, x, y : array_like
        Points (x, y in [0, 1)); each user's points form its distribution p_j (1/c per point).
    epsilon, delta : float
        Target (ε, δ); the level budgets ε_i are those of Algorithm 1.
    resolution : int
        Δ = 2^ℓ.
    scale_factor : int
        B (rounding granularity; B → ∞ recovers the central mechanism).
    w, gamma : int, float
        As in :func:`~dpcloak.heatmaps.aggregate.hierarchical_laplace`.
    rng : Generator, int or None
        Randomness of all users (noise and shares).

    Examples
    --------
    The analyzer's sums feed RECONSTRUCT like Algorithm 1's release:

    >>> from dpcloak.heatmaps import reconstruct
    >>> release = shuffle_pyramid([0, 1, 2], [0.1, 0.6, 0.9], [0.1, 0.6, 0.9], epsilon=1.0, delta=1e-6,
    ...                           resolution=4, rng=0)
    >>> g = release.guarantee()
    >>> g.kind, g.epsilon, g.delta
    ('(ε, δ)-DP', 1.0, 1e-06)
    >>> reconstruct(release.pyramid, w=4).estimate.shape
    (4, 4)
    """
    ell = check_resolution(resolution)
    b = check_int("scale_factor", scale_factor, minimum=1)
    dlt = check_probability("delta", delta)
    xa, ya = _coordinates(x, y)
    codes, counts = user_codes(users, xa.size)
    present = counts > 0
    compact = np.cumsum(present) - 1
    codes, counts = compact[codes], counts[present]
    n = int(counts.size)
    if n < 2:
        raise InvalidParameterError(f"the shuffle protocol needs at least 2 users, got {n}",
                                    parameter="users", allowed="at least 2 users", got=n)
    budget: LevelBudget = level_budget(epsilon, depth=ell, w=w, gamma=gamma)
    q = 4 * b * n
    m = sum(4**i for i in budget.levels)
    r = shuffle_messages(epsilon=budget.epsilon, delta=dlt, n_users=n, n_coordinates=m, modulus=q)
    gen = as_generator(rng)
    finest = _snap_unchecked(xa, ya, ell)
    alphas = tuple(math.exp(-e / b) for e in budget.epsilons)
    levels = []
    for i, alpha in zip(budget.levels, alphas, strict=True):
        side = 1 << i
        shift = ell - i
        rows, cols = np.divmod(finest, 1 << ell)
        cell = (rows >> shift) * side + (cols >> shift)
        # z^j = ⌊B · (points of j in the cell) / c_j⌋ for every (user, cell) pair with points.
        pair, k = np.unique(codes * (side * side) + cell, return_counts=True)
        pu, pc = np.divmod(pair, side * side)
        z_vals = (b * k) // counts[pu]
        total = np.zeros(side * side, dtype=np.int64)
        chunk = max(1, _MAX_CHUNK // (r * side * side))
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            z = np.zeros((hi - lo, side * side), dtype=np.int64)
            sel = (pu >= lo) & (pu < hi)
            z[pu[sel] - lo, pc[sel]] = z_vals[sel]
            noisy = (z + _polya_difference(gen, 1.0 / n, alpha, z.shape)) % q
            shares = gen.integers(0, q, size=(hi - lo, r - 1, side * side), dtype=np.int64)
            last = (noisy - shares.sum(axis=1)) % q
            # The analyzer receives every (coordinate, share) message and adds them per coordinate mod q.
            total = (total + shares.sum(axis=(0, 1)) % q + last.sum(axis=0)) % q
        signed = np.where(total >= q // 2, total - q, total)
        levels.append((signed.astype(np.float64) / b).reshape(side, side))
    bits = r * m * math.ceil(math.log2(m * q))
    privacy = PrivacyGuarantee(
        kind="(ε, δ)-DP", epsilon=budget.epsilon, delta=dlt, neighbouring=USER_NEIGHBOURING + ", shuffle model",
        sensitivity=float(b), norm="l1",
        mechanism=f"shuffle model [BBGN20]: Pólya-difference noise, DLap(e^(-ε_i/B)), B={b}, q={q}, r={r}",
        source="Ghazi et al. Appendix F; Balle, Bell, Gascón & Nissim 2020, Corollary 6 and Lemma 5.2",
    )
    pyramid = NoisyPyramid(levels=tuple(levels), budget=budget, scales=tuple(1.0 / e for e in budget.epsilons),
                           resolution=1 << ell, privacy=privacy)
    return ShuffleRelease(pyramid=pyramid, scale_factor=b, modulus=q, messages_per_user_coordinate=r,
                          bits_per_user=bits, alphas=alphas)

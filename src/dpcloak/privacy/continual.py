r"""Continual release of running totals with correlated exact integer noise (tree and matrix factorisation).

A sensor that counts (people past a door, occupancy) reports one count per window for months. Releasing
each window with independent noise makes the running total after T windows carry √T times the noise of one
release (93.6 σ₁ after a year of hourly windows). The mechanisms here release, in each window, one noisy
integer whose noise is correlated across windows so that every running total carries O(log T) noise, and
the guarantee is stated for one *event*: one window's count changed by at most ``sensitivity``.

Every method is a factorisation of the prefix-sum matrix A (lower-triangular ones) as A = B·C: the node
releases V = C·x + Z (a streaming encoder: window t needs only a small state), the collector computes the
running totals B·V = A·x + B·Z (post-processing). The error of the running total at t has standard
deviation ‖B_t‖₂·σ, and σ is set by the ℓ2 sensitivity max_s ‖C e_s‖₂.

* ``"independent"``: C = I, B = A. Error √(t+1)·σ₁ (the baseline).
* ``"tree"``: the binary mechanism (Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011). In
  window t (1-based) the node releases the sum of the dyadic block (t − 2^ℓ, t], ℓ the number of trailing
  zero bits of t; a count lies in at most ⌊log₂ T⌋ + 1 released blocks, and the running total at t is
  the sum of popcount(t) blocks. State: one partial sum per level (O(log T) integers).
* ``"factorization"`` (default): a buffered linear Toeplitz (BLT) factor (Dvijotham, McMahan, Pillutla,
  Steinke & Thakurta 2024) with a time-dependent noise scale. The Toeplitz factor has generating function
  :math:`C(z) = 1 + \sum_{i=1}^{d} \omega_i z / (1 - \theta_i z)` (d = 4 buffers), so
  :math:`(Cx)_t = x_t + \sum_i \omega_i s_i(t)` with buffers :math:`s_i(t+1) = \theta_i s_i(t) + x_t`
  (O(d) state). The noise of window t has standard deviation :math:`\sigma_t = \sigma/(1+t)^{\alpha}`,
  which is the factorisation :math:`A = (B_{BLT} D^{-1})(D C_{BLT})` with D = diag((1+t)^α): it evens
  out the column norms of C (the first windows' columns are the longest) against the row norms of B.
  The parameters θ, ω (dyadic rationals, :data:`BLT_THETA_NUMERATORS`, :data:`BLT_OMEGA_NUMERATORS` over
  2^:data:`BLT_BITS`) and α (:data:`BLT_ALPHA`) were optimised once, numerically, for T = 8,760 hourly
  windows (the loss max_t ‖B_t‖₂ · max_s ‖C e_s‖₂, computed by O(T·d) recurrences, minimised by
  Nelder–Mead) and are fixed here: a node never optimises. They are valid for every horizon (the
  guarantee is computed for the horizon declared); they are near-optimal around a year of hourly windows.

Privacy guarantee
-----------------
What is sampled and released (``simulation=False``, the default), for counts :math:`x_t` and a declared
horizon T:

1. **Grid.** Counts are rounded exactly to the grid g = ``sensitivity``·2⁻²⁰ (:data:`GRID_BITS`),
   :math:`n_t = \mathrm{round}(x_t/g)` (exact rational rounding, :func:`dpcloak.privacy.discrete.grid_indices`).
   A change of one count by at most Δ changes one :math:`n_s` by at most k = ⌊Δ/g⌋ + 1 = 2²⁰ + 1.
2. **Integer encoder.** The node computes integers :math:`w_t` from :math:`n_{\le t}` with integer
   arithmetic only. Tree and independent: exact integer sums (C has 0/1 entries). Factorisation: the
   buffers are integers updated as :math:`s_i \leftarrow R(a_i s_i / 2^{Q}) + n_t` and
   :math:`w_t = n_t + R(\sum_i b_i s_i / 2^{Q})` with θ_i = a_i/2^Q, ω_i = b_i/2^Q and R(u) = ⌊u + ½⌋
   (exact integer shifts). The rounding makes the encoder nonlinear, so its sensitivity is bounded
   directly: as :math:`|R(u) - R(v)| \le |u - v| + 1` and the differences are integers, neighbouring inputs
   (differing at window s) give buffers differing by at most :math:`E_i(1) = k`,
   :math:`E_i(j+1) = \lfloor a_i E_i(j)/2^Q \rfloor + 1`, and outputs differing by :math:`D_0 = k` at
   window s and :math:`D_j = \lfloor \sum_i b_i E_i(j) / 2^Q \rfloor + 1` at window s + j (nothing before
   s). These integers are computed exactly.
3. **Noise.** :math:`V_t = w_t + Z_t` with independent discrete Gaussians :math:`Z_t` on ℤ of variance
   parameter :math:`\sigma_t^2` (exact rationals; Canonne, Kamath & Steinke 2020, Algorithm 3, from the
   OS-keyed ChaCha20 stream, :mod:`dpcloak.privacy.discrete`). Each coordinate is
   :math:`D^2/(2\sigma_t^2)`-zCDP for an integer shift of size D (CKS Theorem 14) and zCDP adds up over
   the independent coordinates (Bun & Steinke 2016, Lemma 2.3), so the release of all T windows is
   ρ-zCDP with

   .. math:: \rho = \tfrac12 \max_{s < T} \sum_{j=0}^{T-1-s} D_j^2 / \sigma_{s+j}^2 .

   For a constant σ_t this is exact integer arithmetic (tree: :math:`k^2 (\lfloor\log_2 T\rfloor + 1)`,
   the largest number of released blocks containing one window). For the factorisation's varying σ_t
   it is evaluated in float64 with every term positive and the result multiplied by
   1 + 4(T + 4)·2⁻⁵³, which bounds the rounding error of any summation order (Higham, *Accuracy and
   Stability of Numerical Algorithms*, §4.2), so ρ is an upper bound. Beyond 2¹⁴ windows the columns s
   are bounded by blocks (each term by the largest 1/σ² of its block, about 0.1 % looser).
4. **Conversion.** ε at δ is :func:`dpcloak.privacy.accounting.zcdp_epsilon` (CKS 2020 Proposition 12
   at the optimal Rényi order); the noise is calibrated so that this ε is at most the requested one and
   re-checked before anything is released.
5. **Post-processing.** The released integers :math:`V_t` (times g) are the whole output; the running
   totals :math:`g\,B V` are computed from them in float64 and add no privacy loss. Unlike releasing
   :math:`A x + B Z` with real B directly (whose support, a shifted lattice :math:`B\mathbb{Z}^T`,
   depends on x: an infinite privacy loss), nothing real-valued touches the noise.

Guarantee: (ε, δ)-DP for one event over the declared horizon (event level); a node holding a
:class:`PrefixSumStream` refuses windows past its horizon. A pattern of m events (m windows changed) is
m²ρ-zCDP: the privacy loss of a shift u is governed by the norm :math:`(\sum_t u_t^2/\sigma_t^2)^{1/2}`,
and the shift of m events is at most the sum of m single-event shifts (chain of neighbours, triangle
inequality).

With ``simulation=True`` the noise is numpy's Gaussian rounded to integers (seeded, fast, *not* the exact
discrete Gaussian and not secure): for experiments and for checking the error empirically.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import ndimage, signal

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_choice, check_int, check_probability, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.accounting import ReleaseEvent, _float_at_least, zcdp_epsilon
from dpcloak.privacy.bulk import WordSource, discrete_gaussian
from dpcloak.privacy.discrete import discrete_gaussian_noise, grid_index, grid_indices
from dpcloak.privacy.mechanisms import PrivacyGuarantee

__all__ = [
    "METHODS",
    "GRID_BITS",
    "MAX_HORIZON",
    "MAX_FACTORIZATION_HORIZON",
    "NOISE_AHEAD",
    "BLT_BITS",
    "BLT_THETA_NUMERATORS",
    "BLT_OMEGA_NUMERATORS",
    "BLT_ALPHA",
    "ContinualCounter",
    "ContinualCountingEvent",
    "PrefixSumRelease",
    "PrefixSumStream",
    "release_prefix_sums",
]

METHODS = ("factorization", "tree", "independent")

GRID_BITS = 20
"""Counts are rounded to the grid ``sensitivity · 2**-GRID_BITS``."""

BLT_BITS = 24
"""θ_i and ω_i of the BLT factor are ``numerator / 2**BLT_BITS``."""

BLT_THETA_NUMERATORS = (8386994, 16071623, 16775529, 16737712)
"""Numerators a_i of the buffers' decay rates θ_i = a_i / 2²⁴ (optimised for T = 8,760)."""

BLT_OMEGA_NUMERATORS = (4620178, 3042262, 233622, 742987)
"""Numerators b_i of the buffers' weights ω_i = b_i / 2²⁴ (optimised for T = 8,760)."""

BLT_ALPHA = 0.038
"""Exponent of the time-dependent noise scale σ_t = σ / (1 + t)^α (optimised for T = 8,760)."""

MAX_HORIZON = 2**24
"""Largest horizon (windows) of the tree and independent methods."""

MAX_FACTORIZATION_HORIZON = 2**17
"""Largest horizon of the factorisation (15 years of hourly windows): its plan holds T exact rational noise variances
and computes the zCDP bound by O(64 T ln T) blocked sums (a few seconds and a few tens of MB at the cap); run
longer streams as consecutive periods (they compose) or use the tree."""

_DIRECT_RHO_HORIZON = 2**14
"""Up to this horizon the factorisation's zCDP bound sums every column (O(T²)); beyond, by blocks."""
NOISE_AHEAD = 128
"""Windows of noise a :class:`PrefixSumStream` draws at once (in memory only: a restored stream draws afresh)."""
_METHOD_CODES = {name: code for code, name in enumerate(METHODS)}
_STATE_MAGIC = b"DPCS\x01"
_HEADER = struct.Struct("<BIIddd")  # method, horizon, windows done, epsilon, delta, sensitivity


def _round_shift(value: Any, bits: int) -> Any:
    """R(value / 2^bits) = ⌊value/2^bits + ½⌋ for Python or numpy integers (exact)."""
    return (value + (1 << (bits - 1))) >> bits


def _levels(horizon: int) -> int:
    """Levels of the binary mechanism over ``horizon`` windows: ⌊log₂ T⌋ + 1."""
    return horizon.bit_length()


def _blt_lag_bounds(horizon: int, k: int) -> list[int]:
    """D_j (module docstring, step 2): integer bounds on |w_{s+j} − w'_{s+j}| for one count changed by ≤ k."""
    bounds = [k]
    spread = [k] * len(BLT_THETA_NUMERATORS)
    for _ in range(1, horizon):
        bounds.append((sum(b * e for b, e in zip(BLT_OMEGA_NUMERATORS, spread, strict=True)) >> BLT_BITS) + 1)
        spread = [((a * e) >> BLT_BITS) + 1 for a, e in zip(BLT_THETA_NUMERATORS, spread, strict=True)]
    return bounds


def _blt_span_lag_bounds(horizon: int, k: int, span: int, parts: int = 1) -> list[int]:
    """D⁽ʷ⁾_j: integer bounds on |w_{s+j} − w'_{s+j}| when the counts of windows s … s + w − 1 each change by ≤ k.

    The recurrence of :func:`_blt_lag_bounds` with an input difference of k in each of the first ``span``
    windows: a buffer's difference E_i is 0 until the first changed window (R(0) = 0 exactly), then
    :math:`E_i \\leftarrow \\lfloor a_i E_i / 2^Q \rfloor + 1 + k\\,[j < w]` (|R(u) − R(v)| ≤ ⌊|u − v|⌋ + 1 for
    integer differences), and the output differs by at most :math:`k\\,[j < w] + \\lfloor \\sum_i b_i E_i / 2^Q
    \rfloor + 1` (the +1 only once a buffer differs). With ``span=1`` these are :func:`_blt_lag_bounds`.

    ``parts`` = p > 1: the changed windows are split among up to p streams with independent noise (sensors;
    each window's change in one of them). The bounds then hold for the **sum** over the streams of their output
    differences: with the +1 of each rounding counted p times (Σ_i ⌊x_i⌋ ≤ ⌊Σ_i x_i⌋, and each stream adds at
    most its own +1), so Σ_streams Σ_j Δ_j² / σ_j² ≤ Σ_j D_j² / σ_j² (squares of non-negative parts sum to at
    most the square of their sum).
    """
    bounds, spread = [], [0] * len(BLT_THETA_NUMERATORS)
    for j in range(horizon):
        change = k if j < span else 0
        mixed = (sum(b * e for b, e in zip(BLT_OMEGA_NUMERATORS, spread, strict=True)) >> BLT_BITS) + parts if any(
            spread) else 0
        bounds.append(change + mixed)
        spread = [(((a * e) >> BLT_BITS) + parts if e else 0) + change
                  for a, e in zip(BLT_THETA_NUMERATORS, spread, strict=True)]
    return bounds


def _tree_span_square_sum(horizon: int, span: int) -> int:
    """max_s Σ_t |block_t ∩ [s, s + w)|²: the tree's released blocks (window t, 1-based, sums (t − lowbit(t), t])
    overlapping w consecutive windows, each overlap the number of changed counts in that block (exact integers)."""
    starts = np.arange(horizon - span + 1 if span <= horizon else 1, dtype=np.int64)  # s, 0-based
    lo, hi = starts, np.minimum(starts + span, horizon)  # the changed windows (lo, hi] in 1-based block terms
    total = np.zeros(starts.size, dtype=np.int64)
    for level in range(_levels(horizon)):
        size, step = 1 << level, 1 << (level + 1)
        first = lo // step - 1  # the level's blocks (m·step + size − size, m·step + size]: m from first on
        for q in range(span // step + 3):
            end = (first + q) * step + size
            overlap = np.minimum(end, hi) - np.maximum(end - size, lo)
            total += np.where((end >= 1) & (end <= horizon) & (overlap > 0), overlap, 0) ** 2
    return int(total.max())


def _blt_inverse_prefix(horizon: int) -> NDArray[np.float64]:
    """β_m = Σ_{i≤m} (C⁻¹)_i: the Toeplitz coefficients of B = A·C⁻¹ for the BLT factor (float64)."""
    impulse = np.zeros(horizon)
    impulse[0] = 1.0
    return np.cumsum(_blt_decode_linear(impulse[None, :])[0])


def _blt_decode_linear(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """y = C⁻¹ v for the exact (dyadic) BLT factor, row by row: y_t = v_t − Σ ω_i S_i, S_i ← θ_i S_i + y_t."""
    theta = np.array(BLT_THETA_NUMERATORS, dtype=float) / 2.0**BLT_BITS
    omega = np.array(BLT_OMEGA_NUMERATORS, dtype=float) / 2.0**BLT_BITS
    columns = np.ascontiguousarray(values.T)  # one contiguous row per window
    out = np.empty_like(columns)
    buffers = np.zeros((theta.size, values.shape[0]))
    for t in range(columns.shape[0]):
        out[t] = columns[t] - omega @ buffers
        buffers *= theta[:, None]
        buffers += out[t]
    return out.T


def _rho_target(epsilon: float, delta: float) -> float:
    """The largest ρ (bisection on doubles) with zcdp_epsilon(ρ, δ) ≤ ε."""
    lo, hi = 0.0, 1.0
    while zcdp_epsilon(rho=hi, delta=delta) <= epsilon:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if zcdp_epsilon(rho=mid, delta=delta) <= epsilon else (lo, mid)
    if lo <= 0.0:
        raise InvalidParameterError(f"epsilon={epsilon:g} is too small for delta={delta:g}: no zCDP level fits",
                                    parameter="epsilon")
    return lo


def _dyadic_up(value: Fraction) -> Fraction:
    """The smallest m/2^j ≥ value with a 62-bit numerator m (a short rational for the sampler)."""
    j = 61 - max(math.floor(value).bit_length(), 1)
    return Fraction(math.ceil(value * 2**j), 2**j)


def _rho_bound(lags: Sequence[int], sigma2: Sequence[Fraction]) -> float:
    """Upper bound on ½ max_s Σ_j D_j² / σ²_{s+j} (float64, inflated by 1 + 4(T+4)·2⁻⁵³; module docstring).

    Up to :data:`_DIRECT_RHO_HORIZON` windows every column s is summed (an O(T²) convolution); beyond, by
    blocks of s (:func:`_blocked_column_max`).
    """
    horizon = len(sigma2)
    lag2 = np.array([float(d * d) for d in lags])  # exact: D_j < 2^26
    inverse = 1.0 / np.array([float(s) for s in sigma2])
    if horizon <= _DIRECT_RHO_HORIZON:
        worst = float(np.convolve(inverse[::-1], lag2)[:horizon].max())  # column s is entry T − 1 − s
    else:
        worst = _blocked_column_max(lag2, inverse)
    return worst * (1.0 + 4.0 * (horizon + 4) * 2.0**-53) / 2.0


def _blocked_column_max(lag2: NDArray[np.float64], inverse: NDArray[np.float64]) -> float:
    """An upper bound on max_s Σ_{j ≤ T−1−s} lag2_j · inverse_{s+j}, one dot product per block of columns s.

    For the columns s ∈ [s₀, s₀ + B) every term is at most lag2_j · M_{s₀+j} with M_t the largest of
    inverse over [t, t + B) (s + j lies there), and the sum over j ≤ T − 1 − s₀ only adds non-negative
    terms: so Σ_j lag2_j M_{s₀+j} bounds the whole block. Blocks have B = max(1, ⌊s₀/64⌋) columns; as
    1/σ_t² grows like (1 + t)^{2α}, a block loosens the bound by at most about (1 + 1/64)^{2α} − 1 ≈ 0.1 %,
    and there are O(64 ln T) of them. Every term is positive: the rounding is covered as in the direct sum.
    """
    horizon = inverse.size
    worst, start = 0.0, 0
    while start < horizon:
        size = max(1, start // 64)
        tail = inverse[start:]  # M_t = max(inverse[t : t + size]), the window cut at the end (zeros beyond)
        peak = tail if size == 1 else ndimage.maximum_filter1d(tail, size, mode="constant", cval=0.0,
                                                                 origin=-(size // 2))
        worst = max(worst, float(np.dot(lag2[:tail.size], peak)))
        start += size
    return worst


@dataclass(frozen=True)
class _Plan:
    """The calibrated mechanism for one (method, horizon, ε, δ, Δ): noise variances and the stated ρ."""

    method: str
    horizon: int
    grid: float
    shift: int  # k = ⌊Δ/g⌋ + 1
    sigma2: tuple[Fraction, ...]  # per window, grid units²
    rho: float
    epsilon: float
    variance: NDArray[np.float64] = field(repr=False)  # of the running total at each window, grid units²
    bias: float  # bound on the running totals' rounding bias, grid units
    beta: NDArray[np.float64] | None = field(default=None, repr=False)  # factorisation: B's Toeplitz coefficients


def _plan_rho_exact(lag_square_sum: int, sigma2: Fraction) -> Fraction:
    return Fraction(lag_square_sum) / (2 * sigma2)


@lru_cache(maxsize=32)
def _plan(method: str, horizon: int, epsilon: float, delta: float, sensitivity: float) -> _Plan:
    grid = math.ldexp(sensitivity, -GRID_BITS)
    k = math.floor(Fraction(sensitivity) / Fraction(grid)) + 1
    target = _rho_target(epsilon, delta)
    t = np.arange(horizon, dtype=float)
    if method != "factorization":
        square_sum = k * k * (_levels(horizon) if method == "tree" else 1)
        s2 = _dyadic_up(Fraction(square_sum) / (2 * Fraction(target)))
        while _plan_rho_exact(square_sum, s2) > Fraction(target):  # cannot happen: rounded up; re-checked anyway
            s2 = _dyadic_up(s2 * Fraction(1 + 2**-40))
        rho = float(_plan_rho_exact(square_sum, s2))
        rho = rho if Fraction(rho) >= _plan_rho_exact(square_sum, s2) else math.nextafter(rho, math.inf)
        counts = t + 1 if method == "independent" else np.array([bin(i + 1).count("1") for i in range(horizon)], float)
        return _Plan(method, horizon, grid, k, (s2,) * horizon, rho, zcdp_epsilon(rho=rho, delta=delta),
                     counts * float(s2), 0.0)
    lags = _blt_lag_bounds(horizon, k)
    weight = (1.0 + t) ** (2.0 * BLT_ALPHA)  # σ_t² = σ² / weight_t
    lag2 = np.array([float(d * d) for d in lags])
    # first guess with room for the bound's inflation and the FFT's error, so one rigorous check usually suffices
    base = float(signal.fftconvolve(weight[::-1], lag2)[:horizon].max()) / (2 * target) * (1.0 + 1e-9)
    while True:
        sigma2 = tuple(_dyadic_up(Fraction(base / w)) for w in weight)
        rho = _rho_bound(lags, sigma2)
        if rho <= target:
            break
        base *= (rho / target) * (1.0 + 1e-9)
    beta = _blt_inverse_prefix(horizon)
    variance = signal.fftconvolve(beta**2, np.array([float(s) for s in sigma2]))[:horizon]  # reported, not a bound
    theta = np.array(BLT_THETA_NUMERATORS) / 2.0**BLT_BITS
    omega = np.array(BLT_OMEGA_NUMERATORS) / 2.0**BLT_BITS
    slack = 0.5 + float(np.sum(omega / (2.0 * (1.0 - theta))))  # |w_t − (C n)_t| ≤ slack (rounding drift)
    bias = slack * float(np.max(np.cumsum(np.abs(beta))))
    return _Plan(method, horizon, grid, k, sigma2, rho, zcdp_epsilon(rho=rho, delta=delta), variance, bias, beta)


@lru_cache(maxsize=64)
def _span_rho(method: str, horizon: int, epsilon: float, delta: float, sensitivity: float, span: int,
              parts: int) -> float:
    """:meth:`ContinualCounter.span_rho` for a validated span (cached: a deployment asks for the same span often)."""
    plan = _plan(method, horizon, epsilon, delta, sensitivity)
    if span == 1:
        return plan.rho
    if method == "factorization":
        return _rho_bound(_blt_span_lag_bounds(horizon, plan.shift, span, parts), plan.sigma2)
    square_sum = span if method == "independent" else _tree_span_square_sum(horizon, span)
    exact = _plan_rho_exact(plan.shift * plan.shift * square_sum, plan.sigma2[0])
    rho = float(exact)
    return rho if Fraction(rho) >= exact else math.nextafter(rho, math.inf)


class _Encoder:
    """The node's integer state for one method; ``step`` works on Python ints or numpy integer arrays alike."""

    def __init__(self, method: str, state: list[Any], done: int) -> None:
        self.method, self.state, self.done = method, state, done

    def step(self, n: Any) -> Any:
        """Consume window ``done``'s grid count(s) ``n``; return the integer(s) w to which noise is added."""
        self.done += 1
        if self.method == "independent":
            return n
        if self.method == "tree":
            level = (self.done & -self.done).bit_length() - 1  # trailing zeros of the 1-based window
            for i in range(len(self.state)):
                self.state[i] = self.state[i] + n
            out = self.state[level]
            for i in range(level + 1):
                self.state[i] = self.state[i] * 0
            return out
        mixed = sum(b * s for b, s in zip(BLT_OMEGA_NUMERATORS, self.state, strict=True))
        out = n + _round_shift(mixed, BLT_BITS)
        self.state = [_round_shift(a * s, BLT_BITS) + n for a, s in zip(BLT_THETA_NUMERATORS, self.state, strict=True)]
        return out


@lru_cache(maxsize=64)
def _constant_run_range(method: str, horizon: int, n: int) -> tuple[int, int]:
    """(min, max) over the horizon of the encoder's outputs when every window's count is ``n`` grid units."""
    if method == "independent":
        return n, n
    if method == "tree":
        ends = (n, n << (_levels(horizon) - 1))  # n · lowbit(t): every block length 1 … 2^⌊log₂ T⌋ occurs
        return min(ends), max(ends)
    encoder = _Encoder(method, _fresh_state(method, horizon), 0)
    outputs = [encoder.step(n) for _ in range(horizon)]
    return min(outputs), max(outputs)


def _fresh_state(method: str, horizon: int, zero: Any = 0) -> list[Any]:
    if method == "tree":
        return [zero] * _levels(horizon)
    if method == "factorization":
        return [zero] * len(BLT_THETA_NUMERATORS)
    return []


def _blocks(count: int) -> set[int]:
    """The binary mechanism's blocks (by 1-based end window) summed for the running total of ``count`` windows."""
    ends = set()
    while count:
        ends.add(count)
        count -= count & -count
    return ends


def _decode(method: str, released: NDArray[Any]) -> NDArray[np.float64]:
    """Running totals (grid units) from released integers V (rows: streams): B·V for the method's factor."""
    values = np.asarray(released, dtype=float)
    if method == "independent":
        return np.cumsum(values, axis=1)
    if method == "factorization":
        return np.cumsum(_blt_decode_linear(values), axis=1)
    totals = np.empty_like(values)
    for t in range(1, values.shape[1] + 1):  # P(t) = V_t + P(t − lowbit(t)), P(0) = 0
        rest = t - (t & -t)
        totals[:, t - 1] = values[:, t - 1] + (totals[:, rest - 1] if rest else 0.0)
    return totals


def _int_dtype(method: str, max_grid: int) -> Any:
    """int64 when no intermediate can reach 2⁶² (else Python integers in object arrays)."""
    if method == "factorization":
        span = max(2**BLT_BITS / (2**BLT_BITS - a) for a in BLT_THETA_NUMERATORS)
        bound = 2**BLT_BITS * (max_grid + 2) * (span + 1) * (len(BLT_THETA_NUMERATORS) + 1)
    else:
        bound = (max_grid + 1) * MAX_HORIZON
    return np.int64 if bound < 2**62 else object


@dataclass(frozen=True)
class PrefixSumRelease:
    """Released running totals of one or several streams of counts, with their error and guarantee.

    Attributes
    ----------
    totals : numpy.ndarray
        Released running totals, shape (T,) or (n_streams, T), in count units.
    released : numpy.ndarray
        What the node actually released: the noisy integers V_t (grid units), same shape. ``totals`` is
        computed from them (post-processing).
    std : numpy.ndarray
        Standard deviation of the error of the running total at each window, shape (T,), count units.
    counter : ContinualCounter
        The calibrated mechanism (method, horizon, ε, δ, sensitivity).
    simulation : bool
        True when the noise came from numpy (seeded, not exact, not secure).

    Examples
    --------
    >>> r = release_prefix_sums([3, 0, 2, 5], epsilon=1.0, delta=1e-6, method="tree")
    >>> r.totals.shape, r.std.shape, r.guarantee().epsilon <= 1.0
    ((4,), (4,), True)
    """

    totals: NDArray[np.float64]
    released: NDArray[Any]
    std: NDArray[np.float64]
    counter: ContinualCounter
    simulation: bool

    def guarantee(self) -> PrivacyGuarantee:
        """The counter's guarantee for one event (one window's count changed by ``sensitivity``)."""
        return self.counter.guarantee()

    @property
    def worst_std(self) -> float:
        """max_t of :attr:`std`."""
        return float(self.std.max())


@dataclass(frozen=True)
class ContinualCountingEvent(ReleaseEvent):
    """A continual counter's whole release: T windows of correlated exact discrete Gaussian noise, ρ-zCDP.

    ``sensitivity`` is Δ (count units, one window's count), ``scale`` the first window's σ (grid units),
    ``dimension`` the horizon T, ``rho`` the stated ρ (module docstring, step 3) and ``method`` the
    factorisation. The accountant composes it through :meth:`zcdp_rho` like any other event.

    Examples
    --------
    >>> from fractions import Fraction
    >>> ContinualCountingEvent(sensitivity=1.0, scale=5.0, dimension=24, rho=Fraction(1, 8)).zcdp_rho()
    Fraction(1, 8)
    """

    rho: Fraction = Fraction(0)
    method: str = "factorization"
    kind: ClassVar[str] = "continual-counting"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not Fraction(self.rho) > 0:
            raise InvalidParameterError(f"rho must be > 0, got {self.rho!r}", parameter="rho")
        check_choice("method", self.method, METHODS)

    def zcdp_rho(self) -> Fraction:
        return Fraction(self.rho)

    def _dp_accounting(self, dpa: Any) -> Any:
        return dpa.ZCDpEvent(_float_at_least(Fraction(self.rho)))


class ContinualCounter:
    r"""A calibrated continual counting mechanism: one method, horizon and (ε, δ) for one event.

    Parameters
    ----------
    horizon : int
        Number of windows T the guarantee covers (1 ≤ T ≤ 2²⁴; at most 2¹⁷ for the factorisation).
    epsilon, delta : float
        Target (ε, δ) for one event over the whole horizon; the stated ε is at most ``epsilon``.
    sensitivity : float
        Largest change Δ of one window's count by one event (> 0).
    method : {"factorization", "tree", "independent"}
        See the module docstring.

    Attributes
    ----------
    rho : float
        The zCDP level of the release of all T windows (an upper bound, module docstring).
    sigma_one : float
        σ₁: the noise (count units) of a single release at sensitivity Δ at the same (ε, δ) (the
        independent mechanism's per-window σ): the unit in which errors are compared.

    Examples
    --------
    >>> c = ContinualCounter(horizon=8760, epsilon=1.0, delta=1e-6)
    >>> round(c.worst_std / c.sigma_one, 2) < 3.92  # running totals over a year of hourly windows
    True
    >>> stream = c.stream()
    >>> v = stream.push(4)  # the node: one integer (grid units) per window
    >>> len(stream.to_bytes()) <= 1024
    True
    """

    def __init__(self, *, horizon: int, epsilon: float, delta: float, sensitivity: float = 1.0,
                 method: str = "factorization") -> None:
        self.horizon = check_int("horizon", horizon, minimum=1, maximum=MAX_HORIZON)
        self.epsilon = check_real("epsilon", epsilon, low=0.0)
        self.delta = check_probability("delta", delta)
        self.sensitivity = check_real("sensitivity", sensitivity, low=0.0)
        if not 2.0**-900 < self.sensitivity < 2.0**900:
            raise InvalidParameterError(f"sensitivity must lie in (2^-900, 2^900), got {self.sensitivity:g}",
                                        parameter="sensitivity")
        self.method = check_choice("method", method, METHODS)
        if self.method == "factorization" and self.horizon > MAX_FACTORIZATION_HORIZON:
            raise InvalidParameterError(
                f"horizon must be at most {MAX_FACTORIZATION_HORIZON} windows for method='factorization' (its "
                f"plan holds T exact noise variances), got {self.horizon}; release longer streams as "
                "consecutive periods, or use method='tree'", parameter="horizon")
        self._plan = _plan(self.method, self.horizon, self.epsilon, self.delta, self.sensitivity)
        if not self._plan.epsilon <= self.epsilon:  # re-check before anything is released
            raise InvalidParameterError("continual counter calibration overspends epsilon", parameter="epsilon",
                                        got=self.epsilon)

    @property
    def grid(self) -> float:
        """Grid step g (count units): released integers are in units of g."""
        return self._plan.grid

    @property
    def rho(self) -> float:
        """zCDP level ρ of the whole release (upper bound)."""
        return self._plan.rho

    @property
    def std(self) -> NDArray[np.float64]:
        """Standard deviation of the running total's error at each window (count units)."""
        return np.sqrt(self._plan.variance) * self.grid

    @property
    def worst_std(self) -> float:
        """max_t of :attr:`std`."""
        return float(self.std.max())

    @property
    def sigma_one(self) -> float:
        """σ₁ (count units): one release at sensitivity Δ at the same (ε, δ) (see class docstring)."""
        one = _plan("independent", 1, self.epsilon, self.delta, self.sensitivity)
        return math.sqrt(one.sigma2[0]) * one.grid

    def range_std(self, start: int, stop: int) -> float:
        """Standard deviation (count units) of the error of the released total of windows ``start … stop − 1``.

        That total is the difference of two released running totals, S_{stop−1} − S_{start−1} (S_{−1} = 0),
        e.g. a day (24 windows) or a week; its noise is :math:`g^2 \\sum_j (B_{stop-1,j} - B_{start-1,j})^2
        \\sigma_j^2` (correlated noise partly cancels).

        Examples
        --------
        >>> c = ContinualCounter(horizon=8760, epsilon=1.0, delta=1e-6, method="tree")
        >>> bool(c.range_std(0, 24) == c.std[23])  # from the start: the running total itself
        True
        >>> round(c.range_std(24, 48) / c.sigma_one, 2)  # day 2: S_47 − S_23, blocks ending at 48, 32 and 24, 16
        7.48
        """
        first = check_int("start", start, minimum=0, maximum=self.horizon - 1)
        last = check_int("stop", stop, minimum=first + 1, maximum=self.horizon)
        plan = self._plan
        s2 = float(plan.sigma2[0])
        if self.method == "independent":
            return math.sqrt((last - first) * s2) * self.grid
        if self.method == "tree":
            return math.sqrt(len(_blocks(last) ^ _blocks(first)) * s2) * self.grid
        assert plan.beta is not None
        coeff = plan.beta[last - 1::-1].copy()  # B_{stop−1, j} for j = 0 … stop − 1
        coeff[:first] -= plan.beta[first - 1::-1] if first else 0.0
        weights = np.array([float(v) for v in plan.sigma2[:last]])
        return math.sqrt(float(np.dot(coeff**2, weights))) * self.grid

    @property
    def bias_bound(self) -> float:
        """Bound (count units) on the running totals' deterministic rounding error (0 except factorisation)."""
        return self._plan.bias * self.grid

    def span_rho(self, windows: int, *, streams: int = 1) -> float:
        r"""zCDP level of the whole release for a change of the counts of any ``windows`` consecutive windows.

        The w-event cost (Kellaris et al. 2014): every count in some w consecutive windows changed by at
        most ``sensitivity``. Computed from the factorisation, not from the loose w²ρ of w chained events:

        * ``"independent"``: :math:`w k^2 / (2\sigma^2)` (exact rationals, k the grid shift of one event);
        * ``"tree"``: :math:`k^2 \max_s \sum_t |\mathrm{block}_t \cap [s, s+w)|^2 / (2\sigma^2)`: the norm of the
          sum of w consecutive columns of the 0/1 factor C, exact integers (:func:`_tree_span_square_sum`);
        * ``"factorization"``: :math:`	frac12 \max_s \sum_j (D^{(w)}_j)^2 / \sigma^2_{s+j}` with the integer
          bounds :math:`D^{(w)}_j` on the output difference of the integer encoder (the norm of the sum of w
          consecutive columns of C, plus the rounding drift; :func:`_blt_span_lag_bounds`), evaluated as
          the single-event ρ is (an upper bound, module docstring step 3).

        ``windows`` = 1 is :attr:`rho`. Windows beyond the horizon change nothing released.

        ``streams`` = p: the changed windows are spread over up to p independent streams of this counter (the
        sensors of a deployment, each window's change in one of them); the level bounds their joint release.
        Tree and independent are linear with non-negative factors, so splitting never costs more than one
        stream; the factorisation's rounding drift is counted once per stream (:func:`_blt_span_lag_bounds`).

        Examples
        --------
        >>> c = ContinualCounter(horizon=8760, epsilon=1.0, delta=1e-6)
        >>> day = c.span_rho(24)
        >>> c.span_rho(1) == c.rho, c.rho * 24 < day < c.rho * 24**2  # below w² events, above w independent ones
        (True, True)
        """
        w = min(check_int("windows", windows, minimum=1), self.horizon)
        parts = min(check_int("streams", streams, minimum=1), w)
        return _span_rho(self.method, self.horizon, self.epsilon, self.delta, self.sensitivity, w, parts)

    def span_guarantee(self, windows: int) -> PrivacyGuarantee:
        """(ε, δ)-DP of the whole release for the counts of any ``windows`` consecutive windows (:meth:`span_rho`).

        Examples
        --------
        >>> c = ContinualCounter(horizon=168, epsilon=1.0, delta=1e-6)
        >>> g = c.span_guarantee(24)
        >>> g.epsilon > c.guarantee().epsilon, g.neighbouring
        (True, 'w-event: the counts of any 24 consecutive windows each changed by at most 1, over 168 windows')
        """
        w = check_int("windows", windows, minimum=1)
        rho = self.span_rho(w)
        return self._stated(zcdp_epsilon(rho=rho, delta=self.delta), rho,
                            f"w-event: the counts of any {w} consecutive windows each changed by at most "
                            f"{self.sensitivity:g}, over {self.horizon} windows",
                            "Kellaris et al. 2014 (w-event); Canonne, Kamath & Steinke 2020 (Thm 14, Prop 12)")

    def _stated(self, epsilon: float, rho: float, neighbouring: str, source: str) -> PrivacyGuarantee:
        return PrivacyGuarantee(kind="(ε, δ)-DP", epsilon=epsilon, delta=self.delta, neighbouring=neighbouring,
                                sensitivity=self.sensitivity, norm="l2", source=source,
                                mechanism=f"continual counting ({self.method}), exact discrete Gaussian noise, "
                                          f"rho={rho:.6g}")

    def noise_variances(self) -> tuple[Fraction, ...]:
        """The exact variance parameters σ_t² (grid units²) of the discrete Gaussian noise of each window."""
        return self._plan.sigma2

    def encoded_range(self, low: float, high: float | None) -> tuple[int, int | None]:
        """Exact bounds (grid units) on the integer w_t the node adds noise to, at every window of the horizon,
        when every window's count lies in ``[low, high]`` (``high=None``: no upper limit, and none on w_t).

        Each method's encoder is non-decreasing in every count: the tree's and independent outputs are sums of
        counts; the factorisation's buffers are :math:`R(a_i s_i / 2^Q) + n` and its output :math:`n + R(\\sum_i
        b_i s_i / 2^Q)` with :math:`a_i, b_i \\ge 0` and the rounding R non-decreasing. So at every window w_t
        lies between its value on the all-``low`` and on the all-``high`` stream, and the bounds are the least
        and the largest of those two runs over the horizon (for the tree, :math:`n \\cdot \\mathrm{lowbit}(t)`
        with lowbit(t) from 1 to :math:`2^{\\lfloor \\log_2 T \\rfloor}`). The collector checks received outputs
        against them widened by the noise's tail (:func:`dpcloak.service.poisoning.counter_acceptance_interval`).

        Examples
        --------
        >>> c = ContinualCounter(horizon=24, epsilon=1.0, delta=1e-6, method="tree")
        >>> n = round(50 / c.grid)  # 50 people in one window, in grid units
        >>> c.encoded_range(0.0, 50.0) == (0, 16 * n), c.encoded_range(0.0, None)  # a block of 16 windows
        (True, (0, None))
        """
        low = check_real("low", low)
        if high is not None and not check_real("high", high) >= low:
            raise InvalidParameterError(f"high must be at least low = {low:g}, got {high:g}", parameter="high",
                                        got=high)
        n_low = grid_index(low, self.grid, name="low")
        n_high = None if high is None else grid_index(high, self.grid, name="high")
        ends = [_constant_run_range(self.method, self.horizon, n) for n in (n_low, n_high) if n is not None]
        return ends[0][0], None if n_high is None else ends[-1][1]

    def guarantee(self) -> PrivacyGuarantee:
        """(ε, δ)-DP for one event over the horizon, via ρ-zCDP (module docstring, "Privacy guarantee")."""
        return self._stated(self._plan.epsilon, self.rho, f"event level: one window's count changed by at most "
                            f"{self.sensitivity:g}, over {self.horizon} windows",
                            "Canonne, Kamath & Steinke 2020 (Thm 14, Prop 12); Dwork et al. 2010 / Chan et al. 2011 "
                            "(tree); Dvijotham et al. 2024 (BLT)")

    def release_event(self) -> ContinualCountingEvent:
        """The whole release (all T windows) as the accountant's event: ρ-zCDP for one event (the stated ρ, exactly).

        :func:`dpcloak.privacy.accounting.compose`, :func:`~dpcloak.privacy.accounting.privacy_spent` and the
        ledgers take it like any other mechanism's event (e.g. k periods of T windows, or a counter next to
        the network's per-window releases).

        Examples
        --------
        >>> from dpcloak.privacy.accounting import privacy_spent
        >>> c = ContinualCounter(horizon=24, epsilon=1.0, delta=1e-6, method="tree")
        >>> event = c.release_event()
        >>> event.kind, event.dimension, float(event.zcdp_rho()) == c.rho
        ('continual-counting', 24, True)
        >>> privacy_spent(c, readings=1, delta=1e-6).epsilon == c.guarantee().epsilon  # one ε for one release
        True
        """
        return ContinualCountingEvent(sensitivity=self.sensitivity, scale=math.sqrt(float(self._plan.sigma2[0])),
                                      dimension=self.horizon, rho=Fraction(self.rho), method=self.method)

    def dp_event(self) -> Any:
        """The ``dp_accounting`` event of the whole release: ``ZCDpEvent(rho)`` (one event, the whole horizon).

        Examples
        --------
        >>> ContinualCounter(horizon=24, epsilon=1.0, delta=1e-6, method="tree").dp_event().__class__.__name__
        'ZCDpEvent'
        """
        return self.release_event().dp_accounting_event()

    def stream(self) -> PrefixSumStream:
        """A fresh node-side stream (window 0, empty state)."""
        return PrefixSumStream(self)

    def decode(self, released: ArrayLike) -> NDArray[np.float64]:
        """Running totals (count units) from released integers (grid units), shape (T,) or (n_streams, T).

        Post-processing of the released values; fewer than T windows are fine (a prefix of the stream).
        """
        values = np.asarray(released)
        rows = np.atleast_2d(values)
        if rows.ndim != 2 or rows.shape[1] > self.horizon:
            raise InvalidParameterError(f"released must have shape (T,) or (n_streams, T) with T <= horizon="
                                        f"{self.horizon}, got shape {values.shape}", parameter="released",
                                        got=values.shape)
        totals = _decode(self.method, rows) * self.grid
        return totals[0] if values.ndim == 1 else totals

    def release(self, counts: ArrayLike, *, simulation: bool = False, rng: RngLike = None) -> PrefixSumRelease:
        """Release the running totals of ``counts`` (shape (T,) or (n_streams, T), T = horizon).

        ``simulation=False``: exact discrete Gaussian noise from the OS CSPRNG, ``rng`` must be ``None``.
        ``simulation=True``: numpy Gaussian noise rounded to integers, from ``rng`` (seeded, fast, not exact).
        """
        values = np.asarray(counts, dtype=float)
        rows = np.atleast_2d(values)
        if rows.ndim != 2 or rows.shape[1] != self.horizon:
            raise InvalidParameterError(f"counts must have shape ({self.horizon},) or (n_streams, {self.horizon}), "
                                        f"got shape {values.shape}", parameter="counts")
        if not simulation and rng is not None:
            raise InvalidParameterError(f"rng must be None on a release path (the OS CSPRNG is used; a fixed seed "
                                        f"is only accepted with simulation=True), got {rng!r}", parameter="rng")
        grid = grid_indices(rows, self.grid, name="counts")
        dtype = _int_dtype(self.method, int(np.abs(grid).max(initial=0)))
        columns = np.ascontiguousarray(grid.T, dtype=dtype)  # one contiguous row per window
        encoder = _Encoder(self.method, _fresh_state(self.method, self.horizon, np.zeros(rows.shape[0], dtype)), 0)
        out = np.empty(columns.shape, dtype=dtype)
        for t in range(self.horizon):
            out[t] = encoder.step(columns[t])
        released = out.T + self._noise(rows.shape[0], simulation, rng).astype(dtype)
        totals = self.decode(released)
        shape = values.shape
        return PrefixSumRelease(totals=totals.reshape(shape), released=released.reshape(shape), std=self.std,
                                counter=self, simulation=bool(simulation))

    def _noise(self, n_streams: int, simulation: bool, rng: RngLike) -> NDArray[Any]:
        """Noise for every stream and window (grid units), shape (n_streams, T)."""
        sigma2 = self._plan.sigma2
        if simulation:
            scale = np.sqrt(np.array([float(s) for s in sigma2]))
            return np.rint(as_generator(rng).normal(size=(n_streams, self.horizon)) * scale).astype(np.int64)
        if self.method != "factorization":
            return discrete_gaussian_noise(sigma2[0], n_streams * self.horizon).reshape(n_streams, self.horizon)
        which = np.tile(np.arange(self.horizon, dtype=np.intp), n_streams)
        return discrete_gaussian(sigma2, which, WordSource(None)).reshape(n_streams, self.horizon)

    def __repr__(self) -> str:
        return (f"ContinualCounter(horizon={self.horizon}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"sensitivity={self.sensitivity:g}, method={self.method!r})")


class PrefixSumStream:
    """The node's side of continual counting: O(d) or O(log T) integers of state, one release per window.

    Parameters
    ----------
    counter : ContinualCounter
        The calibrated mechanism.

    Notes
    -----
    :meth:`push` returns the integer V_t (grid units, ``counter.grid``) that the node sends; the collector
    turns the received values into running totals with :meth:`ContinualCounter.decode`. :meth:`to_bytes`
    serialises everything needed to resume (method, horizon, ε, δ, Δ, the window count and the integer
    state) in at most a few hundred bytes, for a ledger; the randomness source is not state (each process
    keys its own from the OS). The noise of the next :data:`NOISE_AHEAD` windows is drawn at once (the
    vectorised exact sampler, :func:`dpcloak.privacy.bulk.discrete_gaussian`) and kept in memory only, each
    value used for exactly one window: it is independent of the counts, so drawing it early changes nothing,
    and a restored stream (after a crash) discards what was not used and draws afresh — noise is never
    reused. A stream refuses windows past its horizon: the guarantee covers T windows.

    Examples
    --------
    >>> c = ContinualCounter(horizon=24, epsilon=1.0, delta=1e-6, method="tree")
    >>> s = c.stream()
    >>> released = [s.push(x) for x in [1, 0, 2]]
    >>> restored = PrefixSumStream.from_bytes(s.to_bytes())
    >>> restored.windows, restored.to_bytes() == s.to_bytes()
    (3, True)
    >>> c.decode(released).shape
    (3,)
    """

    def __init__(self, counter: ContinualCounter) -> None:
        self.counter = counter
        self._encoder = _Encoder(counter.method, _fresh_state(counter.method, counter.horizon), 0)
        self._source: WordSource | None = None
        self._noise: list[int] = []  # drawn ahead for windows windows, windows + 1, …; never serialised

    @property
    def windows(self) -> int:
        """Windows released so far."""
        return int(self._encoder.done)

    def push(self, count: float) -> int:
        """Encode one window's count and add exact discrete Gaussian noise (OS CSPRNG): the integer to release."""
        t = self.windows
        if t >= self.counter.horizon:
            raise InvalidParameterError(f"the stream's horizon of {self.counter.horizon} windows is used up "
                                        f"(its guarantee covers {self.counter.horizon} windows); start a new period",
                                        parameter="horizon", got=self.counter.horizon)
        n = grid_index(count, self.counter.grid, name="count")
        if not self._noise:
            if self._source is None:
                self._source = WordSource(None)
            ahead = self.counter.noise_variances()[t:t + NOISE_AHEAD]
            self._noise = discrete_gaussian(ahead, np.arange(len(ahead), dtype=np.intp), self._source).tolist()[::-1]
        return int(self._encoder.step(n)) + self._noise.pop()

    def to_bytes(self) -> bytes:
        """The stream's parameters and integer state (for a ledger; see :meth:`from_bytes`)."""
        c = self.counter
        head = _HEADER.pack(_METHOD_CODES[c.method], c.horizon, self.windows, c.epsilon, c.delta, c.sensitivity)
        body = b"".join(_varint(int(v)) for v in self._encoder.state)
        return _STATE_MAGIC + head + bytes([len(self._encoder.state)]) + body

    @classmethod
    def from_bytes(cls, data: bytes) -> PrefixSumStream:
        """Rebuild a stream saved by :meth:`to_bytes` (raises :class:`InvalidParameterError` on malformed data)."""
        raw = bytes(data)
        start = len(_STATE_MAGIC) + _HEADER.size + 1
        if not raw.startswith(_STATE_MAGIC) or len(raw) < start:
            raise InvalidParameterError("data is not a serialised PrefixSumStream (bad magic or too short)",
                                        parameter="data")
        code, horizon, done, eps, dlt, sens = _HEADER.unpack_from(raw, len(_STATE_MAGIC))
        if code >= len(METHODS):
            raise InvalidParameterError(f"data has an unknown method code {code}", parameter="data")
        counter = ContinualCounter(horizon=horizon, epsilon=eps, delta=dlt, sensitivity=sens, method=METHODS[code])
        size, state, pos = raw[start - 1], [], start
        for _ in range(size):
            value, pos = _read_varint(raw, pos)
            state.append(value)
        if pos != len(raw) or size != len(_fresh_state(counter.method, horizon)) or done > horizon:
            raise InvalidParameterError("data has a state that does not match its method and horizon", parameter="data")
        stream = cls(counter)
        stream._encoder = _Encoder(counter.method, state, done)
        return stream


def _varint(value: int) -> bytes:
    """Zig-zag LEB128 encoding of a signed integer."""
    v = value * 2 if value >= 0 else -value * 2 - 1
    out = bytearray()
    while True:
        byte, v = v & 0x7F, v >> 7
        out.append(byte | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _read_varint(raw: bytes, pos: int) -> tuple[int, int]:
    v, shift = 0, 0
    while True:
        if pos >= len(raw) or shift > 700:
            raise InvalidParameterError("data has a truncated or oversized integer in its state", parameter="data")
        byte = raw[pos]
        v |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return (v >> 1 if v % 2 == 0 else -(v >> 1) - 1), pos


def release_prefix_sums(counts: ArrayLike, *, epsilon: float, delta: float, sensitivity: float = 1.0,
                        method: str = "factorization", simulation: bool = False,
                        rng: RngLike = None) -> PrefixSumRelease:
    r"""Release the running totals of one sensor's stream of counts (or several) under event-level (ε, δ)-DP.

    Parameters
    ----------
    counts : array_like
        Counts per window, shape (T,) or (n_streams, T) (each row one sensor; each has the guarantee).
    epsilon, delta : float
        (ε, δ) for one event over the T windows (ε > 0, δ in (0, 1)).
    sensitivity : float
        Largest change Δ of one window's count by one event.
    method : {"factorization", "tree", "independent"}
        How the noise is correlated (module docstring).
    simulation : bool
        False (default): exact discrete Gaussian noise from the OS CSPRNG, and ``rng`` must be None.
        True: seeded numpy noise, for experiments only.
    rng : numpy.random.Generator, int or None
        Only with ``simulation=True``.

    Returns
    -------
    PrefixSumRelease
        ``totals`` (the released running totals), ``std`` (per window) and ``guarantee()``.

    Privacy guarantee
    -----------------
    See the module docstring: the node releases integers V = w(n) + Z with exact discrete Gaussian Z whose
    zCDP level is bounded exactly (integer encoder, exact sensitivity bounds); the running totals are
    post-processing. (ε, δ)-DP for one window's count changed by at most ``sensitivity``.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.ones(8760)
    >>> r = release_prefix_sums(counts, epsilon=1.0, delta=1e-6, simulation=True, rng=0)
    >>> r.totals.shape, round(r.worst_std / r.counter.sigma_one, 2) <= 3.92
    ((8760,), True)
    >>> release_prefix_sums(counts, epsilon=1.0, delta=1e-6, rng=0)  # a seed on a release path is refused
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rng must be None on a release path ...
    """
    values = np.asarray(counts, dtype=float)
    if values.ndim not in (1, 2) or values.shape[-1] < 1:
        raise InvalidParameterError(f"counts must have shape (T,) or (n_streams, T) with T >= 1, got {values.shape}",
                                    parameter="counts")
    counter = ContinualCounter(horizon=values.shape[-1], epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                               method=method)
    return counter.release(values, simulation=simulation, rng=rng)

r"""Vectorised exact discrete Laplace and discrete Gaussian sampling from bulk random words.

The pure-Python samplers of :mod:`dpcloak.privacy.discrete` make one Python-level draw at a time;
a heatmap at Δ = 1024 needs 1.4 million. This module draws them all at once with numpy integer
arithmetic on 64-bit words, and still samples **exactly**

.. math:: P(Y = y) = \frac{1 - r}{1 + r}\, r^{|y|}, \qquad r = e^{-1/b}, \quad y \in \mathbb{Z},

for a rational scale b = t/s (grid steps), with no floating point anywhere on the path from random
bits to the integer.

Algorithm and proof
-------------------
1. **Magnitude.** Let X ≥ 0 with :math:`P(X \ge k) = r^k` (geometric). For an integer block length
   m ≥ 1 write X = mA + B, A = ⌊X/m⌋, B = X mod m. Then A and B are independent,
   :math:`P(A \ge a) = r^{ma}` and :math:`P(B = \beta) \propto r^\beta` on {0, …, m−1}, because
   :math:`P(A = a, B = \beta) \propto r^{ma + \beta} = (r^m)^a r^\beta` factorises. Here m = 2^j is
   the largest power of two ≤ max(1, b/4), so m/b ∈ (1/8, 1/4] (m = 1 when b < 8).
2. **A by an exact inverse CDF.** With U uniform on [0, 1), A = #{a ≥ 1 : U < r^{ma}} has exactly
   :math:`P(A \ge a) = r^{ma}`. The thresholds :math:`c_a = 2^{64} r^{ma}` are enclosed in integers
   :math:`L_a \le c_a \le G_a \le L_a + 2` (interval arithmetic, mpmath ``iv``, then directed
   fixed-point products, for a = 1 … a_max, the first a with :math:`G_a \le 1`; construction checks
   the width). A 64-bit word w gives U ∈ [w, w+1)/2⁶⁴: every a with w < L_a certainly counts
   (U < (w+1)/2⁶⁴ ≤ c_a/2⁶⁴) and every a with w ≥ G_a certainly does not, so A = #{a : w < L_a}
   unless some :math:`L_a \le w < G_a`. The count is read from a table: the key is the exponent and
   three leading mantissa bits of the double ``w >> 11`` (an exact conversion), a bucket of words
   whose ends differ by a factor ≤ 9/8 < e^{1/8} < e^{m/b} = c_a/c_{a+1}, so a bucket holds at most
   one :math:`L_a` (checked when the table is built); A = base[key] + [w < L_key]. Words within 2 of
   that threshold, and w < 2¹⁶, are *unsure* (probability about 2⁻⁴⁸) and are finished exactly:
   more words extend U's binary expansion, and A = ⌊−(b/m) ln U⌋ is decided as soon as the interval
   of −(b/m) ln U over U's current dyadic interval (mpmath ``iv`` at ever higher precision) contains
   no integer — almost surely after the first extra word. Nothing is truncated: A is unbounded
   (magnitudes past 2⁶² come back as Python integers).
3. **B by rejection.** β = the top j bits of a word (uniform on {0, …, m−1}), accepted with
   probability :math:`r^\beta = e^{-\beta s/t}` by Canonne, Kamath & Steinke's Algorithm 1
   (Bernoulli(exp(−γ)), γ = βs/t ≤ 1/4: K ← 1, while Bernoulli(γ/K): K ← K+1; accept iff K odd; each
   Bernoulli(γ/K) is ``uniform_below(tK) < βs`` on integers, ``uniform_below(n)`` = w mod n for
   words w ≥ 2⁶⁴ mod n). Accepted β has :math:`P(\beta) \propto r^\beta`; at least e^{−1/4} ≈ 78 %
   of proposals are accepted. Loops whose K reaches 2⁶³/t continue in Python integers.
4. **Sign.** Y = ±X with a fair sign bit, rejecting (−, 0) and redrawing: this gives
   :math:`P(Y = y) \propto r^{|y|}` on ℤ (CKS Algorithm 2's last step).

Discrete Gaussian
-----------------
:func:`discrete_gaussian` draws :math:`P(Y = y) \propto e^{-y^2/(2\sigma^2)}` on ℤ, each element with its own
rational σ² (the windows of a continual counter have different noise), by Canonne, Kamath & Steinke's
Algorithm 3 vectorised:

5. **Proposal.** Y ~ discrete Laplace with an integer scale t (steps 1–4), t = ⌊σ_max⌋ + 1 rounded up to
   4 significant bits (:func:`gaussian_proposal_scale`; few distinct t, so few cached tables). For any t > 0,
   :math:`e^{-|y|/t} e^{-(|y| - \sigma^2/t)^2/(2\sigma^2)} = e^{-y^2/(2\sigma^2)} e^{-\sigma^2/(2t^2)}`, so
   accepting y with probability :math:`e^{-\gamma}`, :math:`\gamma = (|y| - \sigma^2/t)^2/(2\sigma^2)`
   (with σ² = a/b: the exact rational :math:`(|y|bt - a)^2 / (2abt^2)`), and proposing again otherwise, gives
   exactly the discrete Gaussian; with t/σ in [1, 9/8] about 3/4 of the proposals are accepted. With one σ² for
   all elements the accepted proposals, in proposal order, are the output (proposals and acceptances are i.i.d.,
   so the accepted values are i.i.d. draws of the target whatever the pattern of acceptances), in rounds of at
   most 2¹⁵ draws with 3/2 · need + 16 proposals each; with per-element σ² each element keeps its first accepted
   proposal (small batches propose 4 candidates per element at once).
6. **Bernoulli(e^{−γ}) from one word.** Accept iff U < e^{−γ}, U uniform on [0, 1), U ∈ [w, w + 1)/2⁶⁴ for a
   fresh word w. e^{−γ} is enclosed in doubles :math:`p^- \le e^{-\gamma} \le p^+` with IEEE operations only
   (+, −, ×, ÷, each correctly rounded, relative error ≤ u = 2⁻⁵³):

   * γ ∈ [γ⁻, γ⁺]: c = fl(fl(σ²)/t) is within 2⁻⁵²·c of σ²/t, so d = fl(|y| − c) is within 2⁻⁵¹·⁴(|y| + c) of
     |y| − σ²/t (the cancellation is covered by this absolute bound, widened to 2⁻⁴⁹); squaring, dividing
     by 2σ² and widening by 1 ± 2⁻⁴⁸ (and +2⁻⁹⁰⁰ for underflow) covers the remaining ≤ 7 roundings.
   * For x = min(γ^±, 37)/64 ≤ 0.58, e^{−x} is the alternating Taylor series to degree 16 (truncation
     < 2⁻⁶¹), evaluated as 1 − x(1 − x/2(1 − …)/16): every intermediate lies in [0, 1] and each step adds at
     most 3u to an error multiplied by x/k < 1, so the absolute error stays ≤ 3u/(1 − x) < 7.2u,
     relative < 14.3u (e^{−x} > 0.56); six squarings give (e^{−x})⁶⁴ with relative error < 64·14.3u + 63u
     < 2⁻⁴³, widened to 2⁻³⁶: p⁺ from x = min(γ⁻, 37)/64, and p⁻ = p⁺'s lower end times
     1 − 2(γ⁺ − γ⁻) (e^{−δ} ≥ 1 − δ; one series per proposal). If γ⁺ > 37, p⁻ = 0; if γ⁻ > 37,
     p⁺ = e^{−37}'s enclosure < 2⁻⁵³.
   * Word thresholds: L = ⌊2⁶⁴ p⁻⌋ (at most 2⁶⁴ − 2048) and H = min(⌈2⁶⁴ p⁺⌉, 2⁶⁴) − 1, exact in doubles and
     uint64 (2⁶⁴ p is a power-of-two scaling of a double, ⌊·⌋/⌈·⌉ of a double are doubles, and doubles below
     2⁶⁴ convert exactly). If w < L, U < (w + 1)/2⁶⁴ ≤ p⁻ ≤ e^{−γ}: accept; if w > H, U ≥ w/2⁶⁴ ≥ p⁺ ≥ e^{−γ}:
     reject.

   Otherwise (L ≤ w ≤ H: probability about 2⁻³⁵·e^{−γ} + 2⁻⁶³) the comparison is finished exactly: U is
   refined with further words and e^{−γ} of the exact rational γ is enclosed by mpmath interval arithmetic at
   ever higher precision until they separate (almost surely soon). Proposals with |y| ≥ 2⁵², or σ² outside
   [2⁻⁴⁰⁰, 2⁴⁰⁰], go to this exact comparison directly (from the same word w). So each proposal is
   accepted with exactly probability e^{−γ}, and only the exact integer y is ever output.
7. **Bucketed thresholds (many draws per σ²).** With at least 2¹³ draws per σ² (and σ² in [2⁻⁴⁰⁰, 2⁸⁰]),
   the word thresholds are looked up instead of computed per proposal. Magnitudes fall in K = 2¹⁴ buckets
   [k h, (k + 1) h − 1], h = 2^shift the smallest power of two with (K − 1) h ≥ σ²/t + 13σ (checked against
   the exact σ²/t); the last bucket is [(K − 1) h, ∞). γ is convex in |y| with its minimum at σ²/t, so e^{−γ}
   is unimodal: over the integers of a bucket its minimum is at an end and its maximum at ⌊σ²/t⌋ or ⌈σ²/t⌉
   clipped into the bucket (both among ⌊fl(σ²/t)⌋ − 1, …, + 2, as fl(σ²/t) is within 2⁻⁵² σ²/t < 1 of σ²/t;
   σ²/t < 2⁵²). The bucket's thresholds are step 6's L of the smaller p⁻ at the two ends and H of the largest
   p⁺ at the ends and those clipped centres; the last bucket has L = 0 and the H of its start (e^{−γ} decreases
   beyond σ²/t). So L_k ≤ 2⁶⁴ e^{−γ(y)} ≤ H_k + 1 for every y in bucket k (any |y|, also beyond 2⁵²), and
   w < L_k accepts, w > H_k rejects, exactly as in step 6; a word in between (probability about the variation
   of e^{−γ} over one bucket, ≲ 14/K·0.6 ≈ 5·10⁻⁴, and ≈ 2⁻³⁵ when h = 1) is decided by step 6 for its own y
   with the same word (any proposal may be, without bias: step 6 is exact for every word). The
   tables (256 KiB per σ², built in tens of milliseconds) are cached per (σ², t).
8. **One compiled pass (many draws for one σ²).** When step 7's table is used for a single σ², the proposals and
   their acceptances are not materialised array by array: :mod:`dpcloak.privacy._gauss_kernel` (numba) runs, slot
   by slot, the rejection sampler of step 5 to its first accepted proposal, each proposal by steps 2–4 (the same
   tables, words and integer comparisons) and step 7's one-word decision, reading a buffer of words in order, each
   word at most once (unread words are discarded unread). Every case the tables do not decide, and a proposal whose
   words run out, is **handed over** with the state of that proposal (the word of an undecided A; A, β and the
   CKS counter of step 3; the magnitude before its sign; the proposal and, if drawn, its acceptance word) and
   finished here with the exact paths above and fresh words: from each such state the rest of the computation
   depends only on the state and on fresh randomness, so resuming it with fresh words has exactly the same
   distribution, and a rejected slot simply starts again (the draws of a slot are i.i.d.). Nothing is dropped
   or retried on the basis of what it would have drawn.

Randomness
----------
:class:`WordSource` supplies uniform 64-bit words: with ``rng=None`` the ChaCha20 keystream under
a fresh 256-bit key and 96-bit nonce from :func:`os.urandom` for each release (a cryptographically secure
generator: the construction of Linux's own ``getrandom``; computational assumption: ChaCha20 is a
PRF) — 3–4× faster here than reading as many bytes from ``os.urandom``; with a seed or
``numpy.random.Generator``, its uniform 64-bit integers (reproducible, not secure: tests and
experiments).
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from numpy.typing import NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak.errors import InvalidParameterError

__all__ = ["WordSource", "bernoulli_exp_unit", "discrete_laplace", "discrete_gaussian",
           "gaussian_proposal_scale"]

_MAX_WORD = 2**64 - 1
_ZEROS = memoryview(bytes(2**19))  # plaintext of the keystream (ChaCha20 encrypts zeros into its keystream)
_SLACK_WORDS = 8  # update_into wants room for a block beyond the data
_POOL_WORDS = 512  # words per refill of the byte pool behind WordSource.randbelow
_INT64_SAFE = 2**62  # magnitudes below this are kept in int64 (sums with inputs up to 2^62 stay in range)
_FIXED_BITS = 192  # fractional bits of the fixed-point threshold products
_BUCKET_BITS = 3  # buckets: binades of w split in 2^3 (ratio ≤ 1 + 2^-3 < e^{m/b}, m/b > 1/8)
_FIRST_FAST_EXPONENT = 5  # buckets of w >> 11 below 2^5 (w < 2^16) go to the exact path
_SMALLEST_FAST_WORD = 2**16
_UNSURE_WIDTH = 2  # G_a − L_a ≤ 2: words in [L_a, L_a + 2) are decided exactly
_CANCEL = 2.0**-49  # |fl(|y| − fl(fl(σ²)/t)) − (|y| − σ²/t)| ≤ 2^-51.4 (|y| + σ²/t) < this · fl(|y| + c)
_GAMMA_WIDEN = 2.0**-48  # relative widening of the enclosure of γ (≤ 7 roundings of 2^-53 inside)
_TINY = 2.0**-900  # absolute widening of γ's upper end (underflow)
_GAMMA_CAP = 37.0  # e^-37 < 2^-53: beyond it only v = 0 can accept, and γ's enclosure stays in range
_HALVINGS = 6  # e^-γ = (e^-x)^64, x = γ/64 ≤ 37/64
_TAYLOR_TERMS = 16  # terms of e^-x beyond 1 (truncation < 0.58^17/17! < 2^-61)
_EXP_WIDEN = 2.0**-36  # relative widening of e^-γ's enclosure (the rounding error is below 2^-43)
_FAST_SIGMA2 = (2.0**-400, 2.0**400)  # σ² whose double and squares stay far from under/overflow
_FAST_MAGNITUDE = 2**52  # proposals at or beyond this are accepted or rejected in Python integers
_SMALL_BATCH, _SMALL_BATCH_TRIES = 4096, 4  # below this many draws, 4 independent proposals each per round
_SPARE_PROPOSALS = 16  # one variance: need · 3/2 + 16 proposals per round (≥ 1/2 accepted: one round, usually)
_CHUNK = 2**15  # draws per round of the one-variance path
_WORD_CAP = float(2**64 - 2048)  # the largest double below 2^64
_TABLE_BUCKETS = 2**14  # acceptance thresholds per σ² (step 7): 256 KiB
_TABLE_SIGMAS = 13.0  # the last bucket starts ≥ σ²/t + 13σ: e^{−γ} < e^{−84} < 2^-121 there
_TABLE_MIN_DRAWS = 2**13  # draws per variance from which a table is built (10-50 ms, then cached)
_CENTRE_OFFSETS = (-1, 0, 1, 2)  # ⌊fl(σ²/t)⌋ + these include ⌊σ²/t⌋ and ⌈σ²/t⌉
_TABLE_MAX_SIGMA2 = 2.0**80  # tables keep every bucket end (≤ 14σ + σ²/t) below 2^52
_KERNEL_WORDS = 2**16  # words per buffer of the compiled pass (512 KiB: stays in cache)
_KERNEL_RESERVE = 64  # the compiled pass starts a proposal only with this many words left in its buffer
_WORDS_PER_DRAW = 6  # words drawn per missing draw, up to _KERNEL_WORDS (about 5 are used at t/σ ≤ 9/8)
_HANDOVER_ROWS = 4096  # slots the compiled pass hands over before it returns (step 8)


def bernoulli_exp_unit(num: int, den: int, randbelow: Any, k: int = 1) -> bool:
    """Bernoulli(exp(−num/den)) for 0 ≤ num ≤ den (CKS 2020 Algorithm 1), continuing from counter ``k``.

    K ← k; while Bernoulli(num/(den K)): K ← K + 1; return K odd. ``k = 1`` is the algorithm itself;
    the vectorised sampler hands over elements whose counter has grown past the 64-bit range.

    Examples
    --------
    Bernoulli(e⁰) is always 1; with a seeded source the draws are reproducible:

    >>> import random
    >>> import numpy as np
    >>> bernoulli_exp_unit(0, 1, random.Random(0).randrange)
    True
    >>> draws = [bernoulli_exp_unit(1, 1, random.Random(s).randrange) for s in range(2000)]
    >>> bool(abs(sum(draws) / 2000 - np.exp(-1)) < 0.05)
    True
    """
    while randbelow(den * k) < num:  # Bernoulli(num / (den k)) exactly
        k += 1
    return k % 2 == 1


class WordSource:
    """Uniform 64-bit words, bits and integers below n: ChaCha20 keyed from the OS (``rng=None``) or a Generator.

    Examples
    --------
    >>> import numpy as np
    >>> src = WordSource(np.random.default_rng(0))  # reproducible; WordSource() draws its key from the OS
    >>> src.words(3).dtype, src.words(3).shape
    (dtype('uint64'), (3,))
    >>> draws = [src.randbelow(10) for _ in range(200)]
    >>> min(draws) >= 0 and max(draws) < 10
    True
    """

    def __init__(self, rng: RngLike = None) -> None:
        self._pool, self._offset = b"", 0
        if rng is None:
            # fresh 256-bit key and 96-bit nonce; block counter from 0 (2^32 blocks = 256 GiB per source)
            cipher = Cipher(algorithms.ChaCha20(os.urandom(32), bytes(4) + os.urandom(12)), mode=None)
            self._stream: Any = cipher.encryptor()
            self._gen: np.random.Generator | None = None
        else:
            self._gen = as_generator(rng)

    @property
    def secure(self) -> bool:
        """True when the words come from the OS-keyed ChaCha20 stream."""
        return self._gen is None

    def words(self, n: int) -> NDArray[np.uint64]:
        """``n`` independent uniform words on {0, …, 2⁶⁴ − 1}."""
        if self._gen is None:  # the keystream written straight into the array, a block of zeros at a time
            out = np.empty(n + _SLACK_WORDS, dtype="<u8")
            raw = memoryview(out.data).cast("B")
            for start in range(0, 8 * n, len(_ZEROS)):
                self._stream.update_into(_ZEROS[:min(len(_ZEROS), 8 * n - start)], raw[start:])
            return out[:n].view(np.uint64)
        return self._gen.integers(0, _MAX_WORD, size=n, dtype=np.uint64, endpoint=True)  # 64 bits whatever the engine

    def bits(self, n: int) -> NDArray[np.bool_]:
        """``n`` independent fair bits."""
        raw = self.words((n + 63) // 64).view(np.uint8)
        return np.unpackbits(raw)[:n].astype(bool)

    def randbelow(self, n: int) -> int:
        """Uniform integer on {0, …, n − 1} for any n ≥ 1: the top ⌈log₂ n⌉ bits of whole bytes, rejection.

        Bytes come from a pool refilled with whole words, so one-at-a-time samplers (CKS Algorithms
        1–3) cost a slice of a buffer per call rather than a system call.
        """
        width = (n - 1).bit_length()
        size = (width + 7) // 8
        while True:
            if self._offset + size > len(self._pool):
                self._pool = self._pool[self._offset:] + self.words(_POOL_WORDS).tobytes()
                self._offset = 0
            chunk = self._pool[self._offset:self._offset + size]
            self._offset += size
            r = int.from_bytes(chunk, "little") >> (8 * size - width)
            if r < n:
                return r


def _uniform_below(n: int, size: int, src: WordSource) -> NDArray[np.uint64]:
    """``size`` uniform integers on {0, …, n − 1}, 1 ≤ n < 2⁶⁴: w mod n for words w ≥ 2⁶⁴ mod n."""
    threshold = np.uint64((2**64) % n)
    w = src.words(size)
    redo = np.flatnonzero(w < threshold)
    while redo.size:  # rare: probability (2^64 mod n) / 2^64 < n / 2^64 per word
        w[redo] = src.words(redo.size)
        redo = redo[w[redo] < threshold]
    return w % np.uint64(n)


def _bernoulli_exp(num: NDArray[np.uint64], t: int, src: WordSource) -> NDArray[np.bool_]:
    """Element-wise Bernoulli(exp(−num/t)) for 0 ≤ num ≤ t < 2⁵⁷ (CKS Algorithm 1, all elements in lockstep)."""
    hit = _uniform_below(t, num.size, src) < num
    result = ~hit  # K = 1 is odd: the elements whose first Bernoulli(γ) fails are accepted
    active = np.flatnonzero(hit)
    k = 2
    while active.size:
        if t * k >= 2**63:  # counter beyond the 64-bit fast path: finish in Python integers
            for i in active:
                result[i] = bernoulli_exp_unit(int(num[i]), t, src.randbelow, k)
            break
        hit = _uniform_below(t * k, active.size, src) < num[active]
        result[active[~hit]] = k % 2 == 1
        active = active[hit]
        k += 1
    return result


@dataclass(frozen=True)
class _Tables:
    """Block length m = 2^j and the per-bucket tables of the inverse CDF of A (module docstring, step 2)."""

    t: int
    s: int
    j: int
    base: NDArray[np.int64]  # #{a : L_a ≥ bucket end}
    threshold: NDArray[np.uint64]  # the only L_a in [bucket start − 1, bucket end), or 0


def _iv_context(prec: int) -> Any:
    """A private mpmath interval-arithmetic context (rigorous enclosures) at ``prec`` bits."""
    from mpmath.ctx_iv import MPIntervalContext  # lazy: only tables and the rare exact refinements need it

    ctx = MPIntervalContext()
    ctx.prec = prec
    return ctx


def _interval_fraction(raw: tuple[int, int, int, int]) -> Fraction:
    sign, man, exp, _ = raw
    return (-1) ** sign * Fraction(man) * Fraction(2) ** exp


def _enclosures(t: int, s: int, m: int) -> tuple[list[int], list[int]]:
    """Integers L_a ≤ 2⁶⁴ e^{−ams/t} ≤ G_a for a = 1, 2, … until G_a ≤ 1 (interval + directed fixed point)."""
    iv = _iv_context(_FIXED_BITS + 64)
    rho = iv.exp(-iv.mpf(m * s) / t)
    rho_lo, rho_hi = (_interval_fraction(end) for end in rho._mpi_)
    lo_step, hi_step = math.floor(rho_lo * 2**_FIXED_BITS), math.ceil(rho_hi * 2**_FIXED_BITS)
    lo = hi = 1 << (64 + _FIXED_BITS)  # c_0 = 2^64 in fixed point
    lower: list[int] = []
    upper: list[int] = []
    while not upper or upper[-1] > 1:
        lo = (lo * lo_step) >> _FIXED_BITS  # rounded down: stays ≤ c_a · 2^FIXED
        hi = -((-hi * hi_step) >> _FIXED_BITS)  # rounded up: stays ≥ c_a · 2^FIXED
        lower.append(lo >> _FIXED_BITS)
        upper.append(-((-hi) >> _FIXED_BITS))
        if upper[-1] - lower[-1] > _UNSURE_WIDTH:
            raise RuntimeError("threshold enclosure wider than expected")  # pragma: no cover (192-bit products)
    return lower, upper


@lru_cache(maxsize=128)
def _tables(t: int, s: int) -> _Tables:
    j = max(0, (t // (4 * s)).bit_length() - 1)  # m = 2^j: the largest power of two ≤ max(1, b/4)
    lower, _ = _enclosures(t, s, 1 << j)
    ascending = lower[::-1]
    buckets = 64 << _BUCKET_BITS
    base = np.zeros(buckets, dtype=np.int64)
    threshold = np.zeros(buckets, dtype=np.uint64)
    for key in range(_FIRST_FAST_EXPONENT << _BUCKET_BITS, (53 << _BUCKET_BITS)):
        exponent, frac = divmod(key, 1 << _BUCKET_BITS)
        start = ((1 << _BUCKET_BITS) + frac) << (exponent + 11 - _BUCKET_BITS)
        end = ((1 << _BUCKET_BITS) + frac + 1) << (exponent + 11 - _BUCKET_BITS)
        first, stop = bisect.bisect_left(ascending, start - 1), bisect.bisect_left(ascending, end)
        if stop - first > 1:
            raise RuntimeError("two thresholds in one bucket")  # pragma: no cover (ratio e^{m/b} > 1 + 2^-3)
        base[key] = len(ascending) - stop  # L_a ≥ end
        threshold[key] = ascending[first] if stop > first else 0
    return _Tables(t=t, s=s, j=j, base=base, threshold=threshold)


def _block_count_exact(w: int, tab: _Tables, src: WordSource) -> int:
    """A = ⌊−(b/m) ln U⌋ for U uniform on [w, w + 1)/2⁶⁴, refining U with further words until decided."""
    numerator, bits = w, 64
    while True:
        if numerator > 0:
            iv = _iv_context(bits + 64)
            u = iv.mpf([numerator, numerator + 1]) / iv.mpf(2) ** bits
            level = -iv.log(u) * tab.t / (iv.mpf(tab.s) * 2**tab.j)
            low, high = (math.floor(_interval_fraction(end)) for end in level._mpi_)
            if low == high:
                return low
        numerator = (numerator << 64) | int(src.words(1)[0])
        bits += 64


def _block_counts(tab: _Tables, size: int, src: WordSource) -> NDArray[Any]:
    """``size`` exact draws of A, P(A ≥ a) = e^{−a m s/t}: bucket lookup, exact refinement when unsure."""
    w = src.words(size)
    key = (((w >> np.uint64(11)).astype(np.float64).view(np.int64)) >> (52 - _BUCKET_BITS)) - (1023 << _BUCKET_BITS)
    threshold = tab.threshold.take(key, mode="clip")
    counts: NDArray[Any] = tab.base.take(key, mode="clip") + (w < threshold)
    unsure = np.flatnonzero(((w - threshold) < np.uint64(_UNSURE_WIDTH)) | (w < np.uint64(_SMALLEST_FAST_WORD)))
    if unsure.size:
        exact = [_block_count_exact(int(w[i]), tab, src) for i in unsure]
        if max(exact) >= _INT64_SAFE >> tab.j:
            counts = counts.astype(object)
        counts[unsure] = exact
    return counts


def _within_block(tab: _Tables, size: int, src: WordSource) -> NDArray[np.int64]:
    """``size`` exact draws of B on {0, …, m − 1}, P(B = β) ∝ e^{−βs/t}: uniform β accepted w.p. e^{−βs/t}."""
    if not tab.j:
        return np.zeros(size, dtype=np.int64)
    shift, s = np.uint64(64 - tab.j), np.uint64(tab.s)
    out = src.words(size) >> shift
    todo = np.flatnonzero(~_bernoulli_exp(out * s, tab.t, src))
    while todo.size:  # rejected proposals (≤ 1 − e^{−1/4} of them) are redrawn
        beta = src.words(todo.size) >> shift
        out[todo] = beta
        todo = todo[~_bernoulli_exp(beta * s, tab.t, src)]
    return out.astype(np.int64)


def _magnitudes(tab: _Tables, size: int, src: WordSource) -> NDArray[Any]:
    """``size`` exact draws of X with P(X ≥ k) = r^k: X = m A + B (int64, or object beyond 2⁶²)."""
    counts = _block_counts(tab, size, src)
    if counts.dtype == object:
        return counts * (1 << tab.j) + _within_block(tab, size, src)
    counts <<= tab.j
    counts += _within_block(tab, size, src)
    return counts


def discrete_laplace(scale: Fraction, size: int, src: WordSource) -> NDArray[Any]:
    r"""``size`` i.i.d. exact draws of :math:`P(Y = y) \propto e^{-|y|/b}` on ℤ, b = ``scale`` = t/s.

    Requires t = ``scale.numerator`` < 2⁵⁷ (:func:`dpcloak.privacy.discrete.sampler_scale`). Returns
    int64, or an object array of Python integers in the (astronomically unlikely) event that a
    magnitude reaches 2⁶². The module docstring proves that the distribution is exact.

    Examples
    --------
    >>> from fractions import Fraction
    >>> y = discrete_laplace(Fraction(2), 20000, WordSource(np.random.default_rng(1)))
    >>> y.dtype, y.shape
    (dtype('int64'), (20000,))
    >>> q = np.exp(-1 / 2)  # variance 2q/(1 − q)² for b = 2
    >>> bool(abs(y.var() / (2 * q / (1 - q) ** 2) - 1) < 0.05)
    True
    """
    tab = _tables(scale.numerator, scale.denominator)
    out = _magnitudes(tab, size, src)
    negative = src.bits(size)
    zeros = np.flatnonzero(out == 0)
    np.negative(out, out=out, where=negative)
    todo = zeros[negative[zeros]]
    while todo.size:  # the sign step rejects −0 (CKS Algorithm 2): redraw those
        mag = _magnitudes(tab, todo.size, src)
        negative = src.bits(todo.size)
        if mag.dtype == object and out.dtype != object:
            out = out.astype(object)
        out[todo] = np.where(negative, -mag, mag)
        todo = todo[negative & (mag == 0)]
    return out


def gaussian_proposal_scale(sigma2: Fraction) -> int:
    """The discrete Laplace proposal scale t for σ² (module docstring, step 5): ⌊σ⌋ + 1 up to 4 significant bits.

    Examples
    --------
    >>> from fractions import Fraction
    >>> gaussian_proposal_scale(Fraction(4)), gaussian_proposal_scale(Fraction(1000**2))  # ⌊σ⌋ + 1 = 3, 1001
    (3, 1024)
    """
    sigma2 = Fraction(sigma2)
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # ⌊σ⌋ + 1 (⌊√x⌋ = isqrt(⌊x⌋))
    shift = max(t.bit_length() - 4, 0)
    return -(-t >> shift) << shift


def _dyadic_sign(n: int, bits: int, end: tuple[int, int, int, int]) -> int:
    """The sign of n/2^bits − x for n ≥ 0 and an mpmath endpoint x ≥ 0, without building huge numbers."""
    sign, man, exp, _ = end
    if sign or not man:
        return 1 if n else 0  # x ≤ 0 (an endpoint of e^−γ is never negative; 0 only on an underflowed bound)
    shift = exp + bits  # compare n with man · 2^shift
    if shift >= 0:
        a, b = n, man << shift
    elif n and n.bit_length() + (-shift) > man.bit_length() + 1:
        return 1  # n · 2^−shift has more bits than man: larger (x ≤ 1 keeps the other branch small)
    else:
        a, b = n << -shift, man
    return (a > b) - (a < b)


def _accept_exact(prefix: int, bits: int, num: int, den: int, src: WordSource) -> bool:
    """U < exp(−num/den) exactly, U uniform on [prefix, prefix + 1)/2^bits: refine U and the precision until decided."""
    while True:
        iv = _iv_context(bits + 64)
        lo, hi = iv.exp(-iv.mpf(num) / den)._mpi_
        if _dyadic_sign(prefix + 1, bits, lo) <= 0:
            return True
        if _dyadic_sign(prefix, bits, hi) >= 0:
            return False
        prefix, bits = (prefix << 64) | int(src.words(1)[0]), bits + 64


def _gaussian_exponent(y: int, sigma2: Fraction, t: int) -> tuple[int, int]:
    """γ = (|y| − σ²/t)²/(2σ²) as the exact ratio (|y|bt − a)² / (2abt²), σ² = a/b."""
    a, b = sigma2.numerator, sigma2.denominator
    return (abs(y) * b * t - a) ** 2, 2 * a * b * t * t


def _exp_minus(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """e^{−64x} for 0 ≤ x ≤ 37/64 in doubles, relative error < 2⁻⁴³ (module docstring, step 6)."""
    p = np.ones_like(x)
    for k in range(_TAYLOR_TERMS, 0, -1):  # p ← 1 − x p / k, in place
        p *= x
        p /= k
        np.subtract(1.0, p, out=p)
    for _ in range(_HALVINGS):
        p *= p
    return p


def _acceptance_enclosure(magnitude: NDArray[np.float64], s2: NDArray[np.float64],
                          t: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Doubles p⁻ ≤ e^{−γ} ≤ p⁺, γ = (|y| − σ²/t)²/(2σ²), from |y| < 2⁵² and s2 = fl(σ²) (step 6)."""
    c = s2 / float(t)  # t has 4 significant bits: exact as a double
    d = np.abs(magnitude - c)
    err = (magnitude + c) * _CANCEL
    low, high = np.maximum(d - err, 0.0), d + err
    g_lo = low * low / (2.0 * s2) * (1.0 - _GAMMA_WIDEN)
    g_hi = high * high / (2.0 * s2) * (1.0 + _GAMMA_WIDEN) + _TINY
    e_lo = _exp_minus(np.minimum(g_lo, _GAMMA_CAP) * 2.0**-_HALVINGS)  # e^{−min(γ⁻, 37)} within 2^-43
    p_hi = e_lo * (1.0 + _EXP_WIDEN)
    # e^{−γ⁺} = e^{−γ⁻} e^{−(γ⁺ − γ⁻)} ≥ e^{−γ⁻} (1 − (γ⁺ − γ⁻)); the double difference is within 2u of its value
    p_lo = np.where(g_hi <= _GAMMA_CAP, e_lo * (1.0 - _EXP_WIDEN) * (1.0 - 2.0 * (g_hi - g_lo)), 0.0)
    return p_lo, p_hi


def _word_thresholds(p_lo: NDArray[np.float64],
                     p_hi: NDArray[np.float64]) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """Words L ≤ 2⁶⁴ p⁻ and H = min(⌈2⁶⁴ p⁺⌉, 2⁶⁴) − 1 for doubles 0 ≤ p⁻ ≤ p⁺ (step 6).

    2⁶⁴ p is exact (a power-of-two scaling), ⌊·⌋ and ⌈·⌉ of a double are exact, and doubles below 2⁶⁴
    convert to uint64 exactly (capped at 2⁶⁴ − 2048, the largest double below 2⁶⁴, for L: still ≤ 2⁶⁴ p⁻).
    """
    low = np.clip(np.floor(p_lo * 2.0**64), 0.0, _WORD_CAP).astype(np.uint64)
    ceil = np.maximum(np.ceil(p_hi * 2.0**64), 1.0)  # p⁺ > 0 always (e^{−37}'s enclosure at worst)
    high = np.where(ceil < 2.0**64, ceil, 0.0).astype(np.uint64) - np.uint64(1)
    return low, high  # where ⌈2⁶⁴ p⁺⌉ ≥ 2⁶⁴: 0 − 1 wraps to 2⁶⁴ − 1 (no word is rejected)


@dataclass(frozen=True)
class _AcceptTable:
    """Thresholds of step 7 for one σ² and proposal scale t: bucket k holds magnitudes [k h, (k+1) h), h = 2^shift."""

    shift: int
    low: NDArray[np.uint64]  # L_k ≤ 2⁶⁴ min over the bucket of e^{−γ}
    high: NDArray[np.uint64]  # H_k + 1 ≥ 2⁶⁴ max over the bucket of e^{−γ} (capped at 2⁶⁴)


@lru_cache(maxsize=64)
def _accept_table(sigma2: Fraction, t: int) -> _AcceptTable:
    """The bucketed acceptance thresholds of step 7 (σ² in [2⁻⁴⁰⁰, 2⁸⁰]: every bucket end is below 2⁵²)."""
    s2 = float(sigma2)
    reach = s2 / t + _TABLE_SIGMAS * math.sqrt(s2)  # the last bucket starts at or beyond it: e^{−γ} < 2^-100 there
    shift = max(0, math.ceil(math.log2(reach / (_TABLE_BUCKETS - 1))))
    while (_TABLE_BUCKETS - 1) << shift < sigma2 / t:  # the last bucket [(K−1)h, ∞) must lie beyond σ²/t (exactly)
        shift += 1  # pragma: no cover (reach exceeds σ²/t by 12σ)
    start = np.arange(_TABLE_BUCKETS, dtype=np.float64) * float(1 << shift)
    end = start + float((1 << shift) - 1)
    var = np.full(_TABLE_BUCKETS, s2)
    (start_lo, start_hi), (end_lo, end_hi) = _acceptance_enclosure(start, var, t), _acceptance_enclosure(end, var, t)
    # e^{−γ} is unimodal in |y| (γ convex, least at σ²/t): its minimum over the integers of a bucket is at an end,
    # its maximum at ⌊σ²/t⌋ or ⌈σ²/t⌉ clipped into the bucket; fl(σ²/t) is within 2⁻⁵² σ²/t < 1 of σ²/t, so the
    # integers ⌊fl(σ²/t)⌋ + k, k ∈ _CENTRE_OFFSETS, clipped into the bucket include both
    centre = math.floor(s2 / t)
    peak = np.max([start_hi, end_hi, *(_acceptance_enclosure(np.clip(float(centre + k), start, end), var, t)[1]
                                       for k in _CENTRE_OFFSETS)], axis=0)
    floor = np.minimum(start_lo, end_lo)
    floor[-1] = 0.0  # the last bucket is unbounded: e^{−γ} → 0; its maximum is at its start (beyond σ²/t)
    low, high = _word_thresholds(floor, peak)
    return _AcceptTable(shift=shift, low=low, high=high)


def _gaussian_accept(y: NDArray[Any], variances: Sequence[Fraction], table: NDArray[np.float64],
                     which: NDArray[np.intp], t: int, src: WordSource, *, tables: bool = False) -> NDArray[np.bool_]:
    """Element-wise exact Bernoulli(exp(−γ)) of steps 6–7 for proposals ``y`` with σ² = ``variances[which]``.

    ``table`` holds the correctly rounded doubles of ``variances`` (``Fraction.__float__``); ``tables``: decide
    most proposals by the bucketed thresholds of step 7 (σ² in [2⁻⁴⁰⁰, 2⁸⁰] only).
    """
    magnitude = np.abs(y)
    if magnitude.dtype == object:  # beyond 2^62: clipped to 2^52, which sends them to the exact comparison
        magnitude = np.minimum(magnitude, _FAST_MAGNITUDE).astype(np.int64)
    w = src.words(y.size)  # U ∈ [w, w + 1)/2^64
    if tables:
        rows = [_accept_table(variances[i], t) for i in range(len(variances))]
        if len(rows) == 1:  # one variance: a plain lookup
            index = np.minimum(magnitude >> rows[0].shift, _TABLE_BUCKETS - 1)
            low, high = rows[0].low, rows[0].high
        else:
            shifts = np.array([r.shift for r in rows])
            index = np.minimum(magnitude >> shifts[which], _TABLE_BUCKETS - 1) + which * _TABLE_BUCKETS
            low, high = np.concatenate([r.low for r in rows]), np.concatenate([r.high for r in rows])
        width = np.where(high >= low, high - low, 0)  # H < L (then H = L − 1) leaves no word undecided
        low = low.take(index)
        accept = w < low
        check = np.flatnonzero((w - low) <= width.take(index))  # L ≤ w ≤ H (w < L wraps beyond any width)
    else:
        accept = np.zeros(y.size, dtype=bool)
        check = np.arange(y.size)
    _decide(accept, check, y, magnitude, w, variances, table, which, t, src)
    return accept


def _decide(accept: NDArray[np.bool_], check: NDArray[np.intp], y: NDArray[Any], magnitude: NDArray[np.int64],
            w: NDArray[np.uint64], variances: Sequence[Fraction], table: NDArray[np.float64], which: NDArray[np.intp],
            t: int, src: WordSource) -> None:
    """``accept[check]`` ← U < e^{−γ} for U ∈ [w, w + 1)/2⁶⁴: step 6's double enclosures, then the exact comparison."""
    if _FAST_SIGMA2[0] <= table.min() and table.max() <= _FAST_SIGMA2[1]:
        huge = magnitude[check] >= _FAST_MAGNITUDE
        slow, check = check[huge], check[~huge]
    else:
        slow, check = check, check[:0]
    if check.size:
        low, high = _word_thresholds(*_acceptance_enclosure(magnitude[check].astype(np.float64),
                                                            table[which[check]], t))
        wc = w[check]
        accept[check] = wc < low
        check = check[(wc >= low) & (wc <= high)]
    for el in (*check, *slow):
        num, den = _gaussian_exponent(int(y[el]), variances[which[el]], t)
        accept[el] = _accept_exact(int(w[el]), 64, num, den, src)


def discrete_gaussian(variances: Sequence[Fraction], which: NDArray[np.intp], src: WordSource) -> NDArray[Any]:
    r"""Exact discrete Gaussians :math:`P(Y_i = y) \propto e^{-y^2/(2\sigma_i^2)}`, σ_i² = ``variances[which[i]]``.

    One independent draw per entry of ``which`` (module docstring, steps 5–8: exact for every σ² > 0).
    Returns int64, or an object array of Python integers should a magnitude reach 2⁶².

    Examples
    --------
    >>> from fractions import Fraction
    >>> src = WordSource(np.random.default_rng(0))
    >>> y = discrete_gaussian([Fraction(4), Fraction(100)], np.repeat([0, 1], 20000), src)
    >>> y.dtype, bool(abs(y[:20000].var() / 4 - 1) < 0.05), bool(abs(y[20000:].var() / 100 - 1) < 0.05)
    (dtype('int64'), True, True)
    """
    variances = [v if isinstance(v, Fraction) else Fraction(v) for v in variances]
    table = np.array([float(v) for v in variances])
    if not variances or (table.min() <= 0.0 and min(variances) <= 0):
        raise InvalidParameterError(f"variances must be a non-empty sequence of positive rationals, got "
                                    f"{len(variances)} with minimum {min(variances, default=None)}",
                                    parameter="variances")
    which = np.asarray(which, dtype=np.intp)
    t = gaussian_proposal_scale(variances[int(np.argmax(table))])  # any t > 0 is exact; this one is efficient
    if t >= 2**57:
        raise InvalidParameterError(f"variances must be below 2^112 (sigma below 2^56), got "
                                    f"{float(max(variances)):.6g}", parameter="variances")
    tables = (which.size >= _TABLE_MIN_DRAWS * len(variances)
              and _FAST_SIGMA2[0] <= table.min() and table.max() <= _TABLE_MAX_SIGMA2)
    if tables and len(variances) == 1:
        return _gaussian_compiled(variances[0], which.size, t, src)
    out: NDArray[Any] = np.zeros(which.size, dtype=np.int64)
    if len(variances) == 1:  # i.i.d. elements: the accepted proposals, in order, fill the output
        filled = 0
        while filled < out.size:
            need = min(out.size - filled, _CHUNK)  # chunks that keep the passes in cache
            proposals = discrete_laplace(Fraction(t), need + need // 2 + _SPARE_PROPOSALS, src)
            keep = _gaussian_accept(proposals, variances, table, np.broadcast_to(np.intp(0), proposals.shape), t,
                                    src, tables=tables)
            got = proposals[keep][:need]
            if got.dtype == object and out.dtype != object:
                out = out.astype(object)
            out[filled:filled + got.size] = got
            filled += got.size
        return out
    todo = np.arange(which.size)
    while todo.size:
        tries = _SMALL_BATCH_TRIES if todo.size < _SMALL_BATCH else 1  # fewer rounds of numpy overhead
        proposals = discrete_laplace(Fraction(t), todo.size * tries, src)
        keep = _gaussian_accept(proposals, variances, table, np.repeat(which[todo], tries), t, src,
                                tables=tables).reshape(-1, tries)
        first = np.argmax(keep, axis=1)  # the first accepted proposal of each element: the rejection sampler's
        done = keep[np.arange(todo.size), first]
        if proposals.dtype == object and out.dtype != object:
            out = out.astype(object)
        out[todo[done]] = proposals.reshape(-1, tries)[np.flatnonzero(done), first[done]]
        todo = todo[~done]
    return out


def _finish_proposal(row: NDArray[np.int64], word: int, t: int, tab: _Tables, src: WordSource) -> int:
    """The proposal of a slot the compiled pass handed over before its acceptance word (step 8), from its stage."""
    from dpcloak.privacy import _gauss_kernel as kern

    stage, a, beta, k, y = (int(v) for v in row[1:])
    if stage == kern.STAGE_BLOCK:
        a, stage, k = _block_count_exact(word, tab, src), kern.STAGE_WITHIN, 0
    if stage == kern.STAGE_WITHIN:  # β's CKS loop resumes at counter k (or β is drawn afresh)
        if not (k and bernoulli_exp_unit(beta * tab.s, tab.t, src.randbelow, k)):
            beta = int(_within_block(tab, 1, src)[0])
        y, stage = (a << tab.j) + beta, kern.STAGE_SIGN
    if stage == kern.STAGE_SIGN:
        negative = bool(src.bits(1)[0])
        y = int(discrete_laplace(Fraction(t), 1, src)[0]) if negative and y == 0 else -y if negative else y
    return y


def _finish_slots(out: NDArray[Any], rows: NDArray[np.int64], words: NDArray[np.uint64], sigma2: Fraction, t: int,
                  tab: _Tables, src: WordSource) -> NDArray[Any]:
    """Finish the slots the compiled pass handed over (step 8); returns ``out`` (object dtype if a value needs it)."""
    from dpcloak.privacy import _gauss_kernel as kern

    undecided = rows[:, 1] == kern.STAGE_UNDECIDED
    proposals = [int(r[5]) if u else _finish_proposal(r, int(wd), t, tab, src)
                 for r, wd, u in zip(rows, words, undecided, strict=True)]
    y = np.array(proposals, dtype=object if max(map(abs, proposals)) >= _INT64_SAFE else np.int64)
    w = np.where(undecided, words, src.words(len(proposals)))  # a fresh acceptance word for the others
    which = np.zeros(y.size, dtype=np.intp)
    accept = np.zeros(y.size, dtype=bool)
    magnitude = np.abs(y) if y.dtype != object else np.minimum(np.abs(y), _FAST_MAGNITUDE).astype(np.int64)
    _decide(accept, np.arange(y.size), y, magnitude, w, [sigma2], np.array([float(sigma2)]), which, t, src)
    rejected = np.flatnonzero(~accept)  # those slots start again: fresh exact draws, by the compiled pass again
    fresh = _gaussian_compiled(sigma2, rejected.size, t, src)
    if fresh.dtype == object:
        y = y.astype(object)
    y[rejected] = fresh
    if y.dtype == object and out.dtype != object:
        out = out.astype(object)
    out[rows[:, 0]] = y
    return out


def _gaussian_compiled(sigma2: Fraction, size: int, t: int, src: WordSource) -> NDArray[Any]:
    """``size`` i.i.d. draws for one σ² with step 7's table: the compiled single pass of step 8, then its handovers."""
    from dpcloak.privacy import _gauss_kernel as kern

    tab, acc = _tables(t, 1), _accept_table(sigma2, t)
    width = np.where(acc.high >= acc.low, acc.high - acc.low, np.uint64(0))
    k_limit = (2**63 - 1) // t
    out: NDArray[Any] = np.zeros(size, dtype=np.int64)
    handover = np.zeros((_HANDOVER_ROWS, kern.HANDOVER_COLUMNS), dtype=np.int64)
    handover_word = np.zeros(_HANDOVER_ROWS, dtype=np.uint64)
    slot = rows = 0
    while slot < size:  # the handed-over slots are finished together, when the table is full or at the end
        words = src.words(min(_KERNEL_WORDS, _WORDS_PER_DRAW * (size - slot) + _KERNEL_RESERVE))
        slot, _, added = kern.gaussian_fill(out, slot, words, tab.base, tab.threshold, tab.j, tab.s, tab.t, k_limit,
                                            acc.shift, acc.low, width, _KERNEL_RESERVE, handover[rows:],
                                            handover_word[rows:])
        rows += added
        if rows == _HANDOVER_ROWS or (slot == size and rows):
            out = _finish_slots(out, handover[:rows], handover_word[:rows], sigma2, t, tab, src)
            rows = 0
    return out

"""Compiled single pass of the exact discrete Gaussian sampler (numba): steps 1–4 and 7 of :mod:`dpcloak.privacy.bulk`
fused per output slot, on a buffer of uniform 64-bit words.

For each slot the kernel runs the rejection sampler of step 5 to its first accepted proposal: the discrete Laplace
proposal (A from the bucket table of step 2, B by step 3's uniform β and CKS Bernoulli(e^{−βs/t}) loop, the sign of
step 4 with −0 rejected) and the acceptance of step 7 (one word against the bucket's thresholds L_k, H_k), with the
same integer arithmetic as the vectorised functions of :mod:`dpcloak.privacy.bulk`, so the same proof applies. Each
word of the buffer is used at most once, in order; words the kernel never reads are simply not used.

Whenever a step cannot be decided on the words at hand (a word within 2 of an inverse-CDF threshold or below 2¹⁶,
a word between L_k and H_k, a CKS counter near the 64-bit range, or the buffer running out mid-proposal) the slot is
**handed over**, never dropped: the kernel writes the slot and the state of its current proposal in one row of
``handover`` (:data:`STAGE_BLOCK` … :data:`STAGE_UNDECIDED`) and moves on; :func:`dpcloak.privacy.bulk` finishes that
proposal from exactly that state with the exact Python paths and fresh words, and the slot from its outcome. Every
stage is a point at which the remaining computation is a function of the state and of fresh randomness only, so
the finished slot has exactly the distribution of the uninterrupted sampler.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros
from numpy.typing import NDArray

STAGE_BLOCK, STAGE_WITHIN, STAGE_SIGN, STAGE_ACCEPT, STAGE_UNDECIDED = 0, 1, 2, 3, 4
"""Handover stages: A undecided for word ``w``; B pending (k = 0: draw β afresh, else β's CKS loop at counter k);
the sign of magnitude y pending; the acceptance of proposal y pending (no word drawn); the acceptance of y undecided
for word ``w``."""

HANDOVER_COLUMNS = 6  # slot, stage, A, β, k, y; the word w is in the separate uint64 column
SIGN_BITS = 64
Integer = int | np.integer[Any]


@njit(cache=True, nogil=True, inline="always")
def block_key(w: np.uint64) -> np.int64:
    """Bucket of step 2 for a word w ≥ 2¹⁶: 8·e + the 3 bits after the leading one of v = w >> 11 (2^e ≤ v).

    The same key as the exponent and leading 3 mantissa bits of the double ``float(w >> 11)`` (exact below 2⁵³).
    """
    v = w >> np.uint64(11)
    e = np.int64(63 - leading_zeros(v))  # type: ignore[call-arg]  # numba intrinsic: typing context implied
    return (e << np.int64(3)) + np.int64((v >> np.uint64(e - 3)) & np.uint64(7))


@njit(cache=True, nogil=True, inline="always")
def _hand_over(handover: NDArray[np.int64], handover_word: NDArray[np.uint64], row: int, slot: int, stage: int,
               a: Integer, beta: Integer, k: int, y: Integer, w: np.uint64) -> tuple[int, int]:
    """Row ``row`` of the handover table: the slot, its stage and the state of its current proposal; returns the
    next row and the next slot."""
    handover[row, 0], handover[row, 1], handover[row, 2] = slot, stage, a
    handover[row, 3], handover[row, 4], handover[row, 5] = beta, k, y
    handover_word[row] = w
    return row + 1, slot + 1


@njit(cache=True, nogil=True)
def gaussian_fill(out: NDArray[np.int64], slot: int, words: NDArray[np.uint64], base: NDArray[np.int64],
                  threshold: NDArray[np.uint64], j: int, s: int, t: int, k_limit: int, shift: int,
                  low: NDArray[np.uint64], width: NDArray[np.uint64], reserve: int,
                  handover: NDArray[np.int64], handover_word: NDArray[np.uint64]) -> tuple[int, int, int]:
    """Fill ``out[slot:]`` until it is full, fewer than ``reserve`` words are left at a proposal's start, or
    ``handover`` is full; returns (next slot, words used, handover rows written).

    ``base``, ``threshold``: step 2's tables; m = 2^``j``, the proposal scale ``t`` and ``s`` (b = t/s); CKS counters
    stop at ``k_limit`` (t · k_limit < 2⁶³); ``shift``, ``low``, ``width`` (H − L, or 0 when H < L): step 7's table.
    """
    n_words = words.size
    pos = 0
    bits = np.uint64(0)
    n_bits = 0
    rows = 0
    last = low.size - 1
    unsure = np.uint64(2)
    no_word = np.uint64(0)
    smallest = np.uint64(1 << 16)
    num_scale = np.uint64(s)
    beta_shift = np.uint64(64 - j) if j > 0 else np.uint64(0)
    while slot < out.size and rows < handover.shape[0]:
        if n_words - pos < reserve:
            break
        # step 2: A = base[key] + [w < L_key], unless w is within 2 of the bucket's threshold or below 2^16
        w = words[pos]
        pos += 1
        key = block_key(w) if w >= smallest else np.int64(0)
        thr = threshold[key]
        if w < smallest or (w - thr) < unsure:
            rows, slot = _hand_over(handover, handover_word, rows, slot, STAGE_BLOCK, 0, 0, 0, 0, w)
            continue
        a = base[key] + np.int64(w < thr)
        # step 3: β uniform on {0, …, m − 1}, accepted with probability e^{−βs/t} (CKS Algorithm 1)
        beta = np.int64(0)
        stage = -1
        k = 0
        while j > 0:
            if pos >= n_words:
                stage, k = STAGE_WITHIN, 0
                break
            beta = np.int64(words[pos] >> beta_shift)
            pos += 1
            num = np.uint64(beta) * num_scale
            k = 1
            while True:  # K ← 1; while Bernoulli(βs/(tK)): K ← K + 1; accept iff K odd
                if k >= k_limit:
                    stage = STAGE_WITHIN
                    break
                n = np.uint64(t * k)
                reject_below = (np.uint64(0) - n) % n  # 2^64 mod n
                u = np.uint64(0)
                drawn = False
                while pos < n_words:
                    u = words[pos]
                    pos += 1
                    if u >= reject_below:
                        drawn = True
                        break
                if not drawn:
                    stage = STAGE_WITHIN
                    break
                if u % n < num:
                    k += 1
                else:
                    break
            if stage >= 0 or k % 2 == 1:
                break
        if stage >= 0:
            rows, slot = _hand_over(handover, handover_word, rows, slot, stage, a, beta, k, 0, no_word)
            continue
        # step 4: a fair sign; −0 is rejected and the whole proposal drawn again
        magnitude = (a << np.int64(j)) + beta
        if n_bits == 0:
            if pos >= n_words:
                rows, slot = _hand_over(handover, handover_word, rows, slot, STAGE_SIGN, 0, 0, 0, magnitude, no_word)
                continue
            bits = words[pos]
            pos += 1
            n_bits = SIGN_BITS
        negative = (bits & np.uint64(1)) == np.uint64(1)
        bits >>= np.uint64(1)
        n_bits -= 1
        if negative and magnitude == 0:
            continue
        y = -magnitude if negative else magnitude
        # step 7: accept iff w < L_k; reject iff w > H_k; in between the exact comparison decides
        if pos >= n_words:
            rows, slot = _hand_over(handover, handover_word, rows, slot, STAGE_ACCEPT, 0, 0, 0, y, no_word)
            continue
        w = words[pos]
        pos += 1
        bucket = min(magnitude >> np.int64(shift), last)
        lo = low[bucket]
        if w < lo:
            out[slot] = y
            slot += 1
        elif w - lo <= width[bucket]:
            rows, slot = _hand_over(handover, handover_word, rows, slot, STAGE_UNDECIDED, 0, 0, 0, y, w)
    return slot, pos, rows

"""The compiled single pass of the exact discrete Gaussian sampler (dpcloak.privacy._gauss_kernel, bulk step 8).

Oracles: the double's exponent and mantissa bits (numpy's float conversion) for the bucket key; replayed words
against 200-digit mpmath for A = ⌊−(b/m) ln U⌋ and for U < e^{−γ} with the exact rational γ, word by word at the
thresholds (accept, reject, or hand over); the exact pmf (chi-square of tests/privacy/test_bulk.py) for slots that
are handed over at every stage; and the same chi-square failing for a kernel fed a weakened inverse-CDF table.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from tests.privacy.test_bulk import WIDE, _gauss_pvalue

import dpcloak.privacy.bulk as bulk
from dpcloak.privacy import _gauss_kernel as kern
from dpcloak.privacy.bulk import WordSource

SIGMA2 = Fraction(25)  # t = 6, m = 1: a proposal is three words (A, sign, acceptance)


def _float_key(words: np.ndarray) -> np.ndarray:
    """Step 2's key from the double ``float(w >> 11)``: exponent and 3 leading mantissa bits (the numpy path)."""
    bits = (words >> np.uint64(11)).astype(np.float64).view(np.int64)
    return (bits >> (52 - 3)) - (1023 << 3)


def test_block_key_is_the_doubles_exponent_and_leading_mantissa_bits() -> None:
    rng = np.random.default_rng(40)
    edges = [1 << e for e in range(16, 64)]
    words = np.array([*rng.integers(1 << 16, 2**64 - 1, 4_000, dtype=np.uint64, endpoint=True).tolist(),
                      *edges, *(e - 1 for e in edges[1:]), *(e + 1 for e in edges), 2**64 - 1,
                      *(((8 + f) << e) + d for e in range(16, 60) for f in range(8) for d in (-1, 0, 1))],
                     dtype=np.uint64)
    got = np.array([kern.block_key(w) for w in words])
    np.testing.assert_array_equal(got, _float_key(words))


def _fill(words: list[int], sigma2: Fraction = SIGMA2, reserve: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                                 int]:
    """One slot from exactly these words: (out, handover rows, handover words, words used)."""
    t = bulk.gaussian_proposal_scale(sigma2)
    tab, acc = bulk._tables(t, 1), bulk._accept_table(sigma2, t)
    width = np.where(acc.high >= acc.low, acc.high - acc.low, np.uint64(0))
    out, rows, row_words = np.zeros(1, dtype=np.int64), np.zeros((4, kern.HANDOVER_COLUMNS), dtype=np.int64), \
        np.zeros(4, dtype=np.uint64)
    _, used, n = kern.gaussian_fill(out, 0, np.array(words, dtype=np.uint64), tab.base, tab.threshold, tab.j, tab.s,
                                    tab.t, (2**63 - 1) // t, acc.shift, acc.low, width, reserve, rows, row_words)
    return out, rows[:n], row_words[:n], used


def _u_below_exp(word: int, sigma2: Fraction, t: int, y: int) -> bool:
    """U < e^{−γ} for U uniform on [w, w + 1)/2⁶⁴ when decided by w alone (200-digit mpmath), else None."""
    num, den = bulk._gaussian_exponent(y, sigma2, t)
    with mpmath.workdps(200):
        p = mpmath.exp(-mpmath.mpf(num) / den) * mpmath.mpf(2) ** 64
        return True if word + 1 <= p else False if word >= p else None  # type: ignore[return-value]


def test_block_words_at_the_thresholds_match_mpmath_or_are_handed_over() -> None:
    """A from one word against ⌊−(b/m) ln U⌋ in mpmath, for words next to thresholds L_a; words within 2 of L_a
    (or below 2¹⁶) are handed over with their word, never decided by the table."""
    t = bulk.gaussian_proposal_scale(SIGMA2)
    tab = bulk._tables(t, 1)
    lower, _ = bulk._enclosures(t, 1, 1 << tab.j)
    sign, accept = 0, 0  # a positive sign and a word that accepts any proposal with e^{−γ} > 2^-64
    for a in (1, 2, 5, len(lower) // 2):
        for w in (lower[a - 1] - 1, lower[a - 1] - 2, lower[a - 1] + 2, lower[a - 1] + 3, lower[a - 1],
                  lower[a - 1] + 1, 2**16 - 1, 5):
            out, rows, row_words, _ = _fill([w, sign, accept])
            with mpmath.workdps(200):
                lo, hi = (-mpmath.log(mpmath.mpf(v) / mpmath.mpf(2) ** 64) * t for v in (w + 1, w))
                exact = int(mpmath.floor(lo)) if mpmath.floor(lo) == mpmath.floor(hi) else None
            if rows.size and rows[0, 1] == kern.STAGE_BLOCK:
                assert int(row_words[0]) == w and (w - lower[a - 1] in (0, 1) or w < 2**16)
            else:  # y = A (m = 1, positive sign), accepted or, deep in the tail, its acceptance handed over
                y = int(rows[0, 5]) if rows.size and rows[0, 1] == kern.STAGE_UNDECIDED else int(out[0])
                assert exact is not None and y == exact and w - lower[a - 1] not in (0, 1)


@pytest.mark.parametrize("sigma2", [SIGMA2, Fraction(7, 3)], ids=lambda s: f"s2={float(s):.4g}")
def test_acceptance_words_at_the_thresholds_match_mpmath_or_are_handed_over(sigma2: Fraction) -> None:
    """The acceptance word of proposal y: below L_k accepted, above H_k rejected (both confirmed by mpmath against
    the exact e^{−γ}); L_k and H_k themselves handed over with y and the word."""
    t = bulk.gaussian_proposal_scale(sigma2)
    tab, acc = bulk._tables(t, 1), bulk._accept_table(sigma2, t)
    lower, _ = bulk._enclosures(t, 1, 1 << tab.j)
    for a in (0, 1, 2, 4):
        w_a = lower[a] + 2**20 if a < len(lower) else 2**63  # A = a, far from every threshold
        w_a = 2**64 - 1 if a == 0 else w_a
        k = min(a >> acc.shift, acc.low.size - 1)
        low, high = int(acc.low[k]), int(acc.high[k])
        for w in {low - 1, low, high, high + 1, low - 2**20, high + 2**20} - {-1, 2**64}:
            if not 0 <= w < 2**64:
                continue
            out, rows, row_words, used = _fill([w_a, 0, w, *([0] * 3)], sigma2)  # y = +a, then w decides
            truth = _u_below_exp(w, sigma2, t, a)
            if low <= w <= high:
                assert rows.shape[0] == 1 and rows[0, 1] == kern.STAGE_UNDECIDED and rows[0, 5] == a
                assert int(row_words[0]) == w and used == 3
            elif w < low:
                assert truth is True and rows.size == 0 and out[0] == a and used == 3
            else:
                assert truth is False and used > 3  # rejected: the slot drew a further proposal


@pytest.mark.parametrize("sigma2", [Fraction(7, 3), WIDE], ids=lambda s: f"s2={float(s):.4g}")
def test_slots_handed_over_at_every_stage_keep_the_pmf(sigma2: Fraction, monkeypatch: pytest.MonkeyPatch) -> None:
    """Buffers of 1, 2, 3 and 40 words and no reserve: proposals run out of words at every stage (B's loop, the
    sign, the acceptance word) and are finished in Python from their state; the draws keep the exact pmf."""
    monkeypatch.setattr(bulk, "_KERNEL_RESERVE", 1)
    monkeypatch.setattr(bulk, "_TABLE_MIN_DRAWS", 1)  # the compiled pass for every batch size
    stages: list[int] = []
    real = bulk._finish_proposal
    monkeypatch.setattr(bulk, "_finish_proposal", lambda row, *a: stages.append(int(row[1])) or real(row, *a))
    src, draws = WordSource(41), []
    for words, size in ((1, 3_000), (2, 3_000), (3, 3_000), (40, 21_000)):
        monkeypatch.setattr(bulk, "_KERNEL_WORDS", words)
        draws.append(bulk.discrete_gaussian([sigma2], np.zeros(size, dtype=np.intp), src))
    assert all(d.dtype == np.int64 for d in draws) and _gauss_pvalue(np.concatenate(draws), sigma2, cells=20) > 1e-4
    want = {kern.STAGE_SIGN, kern.STAGE_ACCEPT} | ({kern.STAGE_WITHIN} if bulk._tables(
        bulk.gaussian_proposal_scale(sigma2), 1).j else set())
    assert want <= set(stages)


def test_a_kernel_fed_a_weakened_block_table_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weakened: every inverse-CDF threshold of step 2 dropped (A = base[key] only, one too few where w < L_key):
    the same chi-square rejects the draws."""
    t = bulk.gaussian_proposal_scale(SIGMA2)
    real = bulk._tables(t, 1)
    weak = bulk._Tables(t=real.t, s=real.s, j=real.j, base=real.base, threshold=np.zeros_like(real.threshold))
    monkeypatch.setattr(bulk, "_tables", lambda *_: weak)
    draws = bulk.discrete_gaussian([SIGMA2], np.zeros(100_000, dtype=np.intp), WordSource(42))
    assert _gauss_pvalue(draws, SIGMA2) < 1e-4

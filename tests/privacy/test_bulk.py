"""The vectorised exact discrete Laplace sampler (dpcloak.privacy.bulk).

Oracles: the exact pmf P(Y = y) = (1 − r)/(1 + r) r^|y|, r = e^{−1/b}, evaluated with 50-digit mpmath
(chi-square on bins of equal exact probability, p > 1e-4 on seeded draws; the same test fails for
weakened samplers: wrong scale, no rejection of −0, no within-block acceptance); 100-digit mpmath for the
threshold enclosures; and, for the exact refinement path, a replay: crafted words fix U exactly and A
must equal ⌊−(b/m) ln U⌋ computed independently in mpmath.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpcloak.privacy.bulk as bulk
from dpcloak.privacy.bulk import WordSource, discrete_laplace
from dpcloak.privacy.discrete import discrete_laplace_noise, laplace_grid_scale, sampler_scale

HEATMAP_SCALE = laplace_grid_scale(epsilon=0.3, grid_sensitivity=2**36)  # b ≈ 2.3e11 grid steps, 57-bit numerator
SCALES = [Fraction(1, 3), Fraction(5), Fraction(100), Fraction(123457, 7), HEATMAP_SCALE]
N = 200_000


def _tail(scale: Fraction, k: int) -> mpmath.mpf:
    """Exact P(|Y| ≥ k) for k ≥ 1: 2 r^k / (1 + r)."""
    with mpmath.workdps(50):
        r = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
        return 2 * r**k / (1 + r)


def _chi2_pvalue(draws: np.ndarray, scale: Fraction, bins: int = 40) -> float:
    """Chi-square of |Y| on cells of (nearly) equal exact probability, cut points from the exact tail."""
    b = float(scale)
    cuts = sorted({max(1, math.ceil(-b * math.log(q))) for q in np.linspace(0.0, 1.0, bins + 1)[1:-1]})
    cuts = [c for c in cuts if float(_tail(scale, c)) > 20 / draws.size]
    edges = [0, *cuts]
    tails = [mpmath.mpf(1), *(_tail(scale, c) for c in cuts), mpmath.mpf(0)]
    expected = np.array([float(tails[i] - tails[i + 1]) for i in range(len(edges))]) * draws.size
    mag = np.abs(draws.astype(object)).astype(float)
    index = np.searchsorted(np.array(edges, dtype=float), mag, side="right") - 1
    observed = np.bincount(index, minlength=len(edges))
    zero = np.count_nonzero(draws == 0)  # P(Y = 0) = (1 − r)/(1 + r): the sign step's −0 rejection
    negative = np.count_nonzero(draws < 0)  # P(Y < 0) = r/(1 + r)
    with mpmath.workdps(50):
        r = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
        p_zero, p_neg = float((1 - r) / (1 + r)), float(r / (1 + r))
    p_mag = stats.chisquare(observed, expected).pvalue if len(edges) > 1 else 1.0
    if p_zero * draws.size > 5:
        cells = np.array([p_zero, p_neg, 1 - p_zero - p_neg]) * draws.size
        p_sign = stats.chisquare([zero, negative, draws.size - zero - negative], cells).pvalue
    else:
        p_sign = stats.binomtest(negative, draws.size, p_neg).pvalue
    return float(min(p_mag, p_sign))


@pytest.mark.parametrize("scale", SCALES, ids=lambda s: f"b={float(s):.4g}")
def test_exact_pmf(scale: Fraction) -> None:
    draws = discrete_laplace(scale, N, WordSource(np.random.default_rng(1)))
    assert draws.dtype == np.int64 and draws.shape == (N,)
    assert _chi2_pvalue(draws, scale) > 1e-4


@pytest.mark.parametrize("scale", [Fraction(5), Fraction(123457, 7), HEATMAP_SCALE], ids=lambda s: f"b={float(s):.4g}")
def test_a_five_percent_wrong_scale_fails(scale: Fraction) -> None:
    draws = discrete_laplace(scale * Fraction(105, 100), N, WordSource(np.random.default_rng(2)))
    assert _chi2_pvalue(draws, scale) < 1e-4


def test_sampler_without_negative_zero_rejection_fails() -> None:
    """Weakened: a fair sign on the (exact) geometric magnitude without rejecting −0 over-weights Y = 0."""
    scale = Fraction(1, 3)
    src = WordSource(3)
    mag = bulk._magnitudes(bulk._tables(scale.numerator, scale.denominator), N, src)
    weak = np.where(src.bits(N), -mag, mag)
    assert _chi2_pvalue(discrete_laplace(scale, N, WordSource(3)), scale) > 1e-4
    assert _chi2_pvalue(weak, scale) < 1e-4


def test_sampler_without_within_block_acceptance_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weakened: B uniform on {0, …, m−1} (acceptance skipped) instead of ∝ r^β."""
    scale = Fraction(123457, 7)
    assert bulk._tables(scale.numerator, scale.denominator).j > 8
    monkeypatch.setattr(bulk, "_bernoulli_exp", lambda num, t, src: np.ones(num.size, dtype=bool))
    draws = discrete_laplace(scale, N, WordSource(4))
    assert _chi2_pvalue(draws, scale) < 1e-4


@pytest.mark.parametrize("scale", SCALES, ids=lambda s: f"b={float(s):.4g}")
def test_threshold_enclosures_contain_the_exact_values(scale: Fraction) -> None:
    t, s = scale.numerator, scale.denominator
    tab = bulk._tables(t, s)
    lower, upper = bulk._enclosures(t, s, 1 << tab.j)
    with mpmath.workdps(100):
        for a in range(1, len(lower) + 1, max(1, len(lower) // 40)):
            exact = mpmath.mpf(2) ** 64 * mpmath.exp(-mpmath.mpf(a * (1 << tab.j) * s) / t)
            assert lower[a - 1] <= exact <= upper[a - 1] <= lower[a - 1] + 2
    assert upper[-1] <= 1 < upper[-2]


class _Scripted(WordSource):
    """A word source replaying given words first (then a seeded generator): fixes U exactly."""

    def __init__(self, script: list[int]) -> None:
        super().__init__(0)
        self._script = list(script)

    def words(self, n: int) -> np.ndarray:
        head, self._script = self._script[:n], self._script[n:]
        return np.concatenate([np.array(head, dtype=np.uint64), super().words(n - len(head))])


def _oracle_count(scale: Fraction, j: int, words: list[int]) -> int:
    """⌊−(b/m) ln U⌋ with U = 0.w₁w₂… (base 2⁶⁴) plus half a last unit, in 200-digit mpmath."""
    with mpmath.workdps(200):
        u = sum(mpmath.mpf(w) / mpmath.mpf(2) ** (64 * (i + 1)) for i, w in enumerate(words))
        u += mpmath.mpf(2) ** (-64 * len(words) - 1)
        return int(mpmath.floor(-mpmath.log(u) * scale.numerator / (scale.denominator * 2**j)))


@pytest.mark.parametrize("scale", [Fraction(5), Fraction(123457, 7), HEATMAP_SCALE], ids=lambda s: f"b={float(s):.4g}")
def test_words_next_to_a_threshold_are_finished_exactly(scale: Fraction) -> None:
    """w on a threshold's enclosure: the next word decides A, as replayed in mpmath."""
    tab = bulk._tables(scale.numerator, scale.denominator)
    lower, _ = bulk._enclosures(scale.numerator, scale.denominator, 1 << tab.j)
    for a in (1, 2, len(lower) // 2):
        for w in (lower[a - 1], lower[a - 1] + 1):
            for nxt in (1, 2**63, 2**64 - 1):
                got = bulk._block_counts(tab, 1, _Scripted([w, nxt]))
                assert int(got[0]) == _oracle_count(scale, tab.j, [w, nxt])


def test_deep_tail_is_not_truncated() -> None:
    """w = 0 (U < 2⁻⁶⁴): refined with more words; a run of zero words gives a magnitude beyond 2⁶² (exact ints)."""
    scale = sampler_scale(Fraction(2**56))
    tab = bulk._tables(scale.numerator, scale.denominator)
    words = [0, 0, 0, 12345]
    got = bulk._block_counts(tab, 1, _Scripted(words))
    assert got.dtype == object and int(got[0]) == _oracle_count(scale, tab.j, words) and int(got[0]) << tab.j > 2**62
    draws = discrete_laplace(scale, 1, _Scripted(words))
    assert draws.dtype == object and abs(int(draws[0])) >= int(got[0]) << tab.j


def test_uniform_below_and_bernoulli_exp_frequencies() -> None:
    """Building blocks: uniform on {0..n−1} (chi-square) and Bernoulli(exp(−γ)) (exact binomial test)."""
    src = WordSource(5)
    n = 7 * 2**60 + 3  # 2^64 mod n is large: the rejection step matters
    u = bulk._uniform_below(n, 100_000, src)
    assert int(u.max()) < n
    assert stats.chisquare(np.bincount((u // np.uint64(n // 10 + 1)).astype(np.int64), minlength=10)[:10]
                           ).pvalue > 1e-4
    t = 1000
    for num in (0, 1, 500, 999, 1000):
        hits = int(bulk._bernoulli_exp(np.full(50_000, num, dtype=np.uint64), t, src).sum())
        assert stats.binomtest(hits, 50_000, math.exp(-num / t)).pvalue > 1e-4


def test_seeded_draws_reproducible_and_default_source_is_os_keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    a = discrete_laplace_noise(Fraction(7, 2), 1000, rng=9)
    assert np.array_equal(a, discrete_laplace_noise(Fraction(7, 2), 1000, rng=9))
    calls = []
    real = bulk.os.urandom

    def spy(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(bulk.os, "urandom", spy)
    assert WordSource(None).secure and not WordSource(0).secure
    discrete_laplace_noise(Fraction(7, 2), 10)
    assert calls == [32, 12, 32, 12]  # a fresh ChaCha20 key and nonce per source


def test_words_are_full_64_bit_for_any_generator_engine() -> None:
    """MT19937 gives 32-bit raw outputs: the words must still be uniform 64-bit (binomial test, top bit)."""
    words = WordSource(np.random.Generator(np.random.MT19937(0))).words(20_000)
    assert stats.binomtest(int(np.count_nonzero(words >= np.uint64(2**63))), words.size, 0.5).pvalue > 1e-4

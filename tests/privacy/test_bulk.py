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


def test_secure_words_are_the_chacha20_keystream(monkeypatch: pytest.MonkeyPatch) -> None:
    """The words of an OS-keyed source, drawn in pieces that span several blocks of zeros, are the ChaCha20
    keystream under its key and nonce, in order (the cipher applied to zeros by one plain ``update``)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    key, nonce = bytes(range(32)), bytes(range(100, 112))
    fixed = iter([key, nonce])
    monkeypatch.setattr(bulk.os, "urandom", lambda n: next(fixed))
    src = WordSource(None)
    sizes = [1, 3, len(bulk._ZEROS) // 8 + 5, 2 * len(bulk._ZEROS) // 8, 7]
    got = np.concatenate([src.words(n) for n in sizes])
    stream = Cipher(algorithms.ChaCha20(key, bytes(4) + nonce), mode=None).encryptor().update(bytes(8 * sum(sizes)))
    assert got.dtype == np.uint64 and got.tolist() == np.frombuffer(stream, dtype="<u8").tolist()
    assert src.words(0).shape == (0,)


def test_words_are_full_64_bit_for_any_generator_engine() -> None:
    """MT19937 gives 32-bit raw outputs: the words must still be uniform 64-bit (binomial test, top bit)."""
    words = WordSource(np.random.Generator(np.random.MT19937(0))).words(20_000)
    assert stats.binomtest(int(np.count_nonzero(words >= np.uint64(2**63))), words.size, 0.5).pvalue > 1e-4


# --- the vectorised exact discrete Gaussian (module docstring, steps 5–6) -------------------------------------------
# Oracles: the exact pmf exp(−y²/2σ²)/Σ_k exp(−k²/2σ²) summed in 40-digit mpmath (narrow σ) or, for wide σ,
# the normal CDF at half-integers (midpoint rule; its relative error ~1/(24σ²) is below 1e-12 here); the exact
# rational γ and e^{−γ} in 60-digit mpmath for the double enclosures; replayed words for the exact comparison.

WIDE = Fraction(2**62 + 12345, 2**18)  # σ ≈ 2^22: a continual counter's noise on the 2^-20 grid (62-bit numerator)


def _gauss_cells(sigma2: Fraction, edges: np.ndarray) -> np.ndarray:
    """Exact probabilities of the cells (−∞, e_0], (e_0, e_1], …, (e_last, ∞) for integer edges."""
    sd = math.sqrt(float(sigma2))
    with mpmath.workdps(40):
        s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
        if sd <= 50:
            ks = range(-int(40 * sd) - 40, int(40 * sd) + 41)
            weights = {k: mpmath.exp(-mpmath.mpf(k * k) / (2 * s2)) for k in ks}
            total = mpmath.fsum(weights.values())
            cdf = [mpmath.fsum(w for k, w in weights.items() if k <= e) / total for e in edges]
        else:
            cdf = [mpmath.ncdf((mpmath.mpf(int(e)) + mpmath.mpf(1) / 2) / mpmath.sqrt(s2)) for e in edges]
        return np.diff(np.array([0.0, *(float(c) for c in cdf), 1.0]))


def _gauss_pvalue(draws: np.ndarray, sigma2: Fraction, cells: int = 40) -> float:
    sd = math.sqrt(float(sigma2))
    edges = np.unique(np.floor(stats.norm.ppf(np.linspace(0, 1, cells + 1)[1:-1], scale=sd)).astype(np.int64))
    probs = _gauss_cells(sigma2, edges)
    observed = np.bincount(np.searchsorted(edges, draws.astype(np.int64), side="left"), minlength=edges.size + 1)
    return float(stats.chisquare(observed, probs * draws.size).pvalue)


GAUSS_VARIANCES = [Fraction(1, 2), Fraction(7, 3), Fraction(25), Fraction(1.366**2 * 2**20), WIDE]


@pytest.mark.parametrize("sigma2", GAUSS_VARIANCES, ids=lambda s: f"s2={float(s):.4g}")
def test_discrete_gaussian_exact_pmf(sigma2: Fraction) -> None:
    draws = bulk.discrete_gaussian([sigma2], np.zeros(N, dtype=np.intp), WordSource(np.random.default_rng(11)))
    assert draws.dtype == np.int64 and draws.shape == (N,)
    assert _gauss_pvalue(draws, sigma2) > 1e-4


def test_discrete_gaussian_each_element_its_own_variance() -> None:
    """One call, three variances interleaved (one proposal scale for all): each block has its own exact pmf."""
    variances = [Fraction(7, 3), Fraction(25), Fraction(40)]
    which = np.tile(np.arange(3), 60_000)
    draws = bulk.discrete_gaussian(variances, which, WordSource(12))
    for i, s2 in enumerate(variances):
        assert _gauss_pvalue(draws[which == i], s2) > 1e-4
    assert _gauss_pvalue(draws[which == 1], Fraction(40)) < 1e-4  # the test tells the variances apart


@pytest.mark.parametrize("sigma2", [Fraction(7, 3), Fraction(25), WIDE], ids=lambda s: f"s2={float(s):.4g}")
def test_discrete_gaussian_with_a_weakened_acceptance_fails(sigma2: Fraction, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weakened: proposals accepted with e^{−0.8γ} instead of e^{−γ} (a heavier tail): the same test rejects it."""
    real = bulk._exp_minus
    bulk._accept_table.cache_clear()
    monkeypatch.setattr(bulk, "_exp_minus", lambda x: real(0.8 * x))
    draws = bulk.discrete_gaussian([sigma2], np.zeros(N, dtype=np.intp), WordSource(13))
    bulk._accept_table.cache_clear()  # no weakened table outlives the test
    assert _gauss_pvalue(draws, sigma2) < 1e-4


def test_discrete_gaussian_small_batches_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 3 (4 proposals each, the first accepted kept), many calls: the same exact pmf."""
    src = WordSource(14)
    draws = np.concatenate([bulk.discrete_gaussian([Fraction(25)], np.zeros(3, dtype=np.intp), src)
                            for _ in range(10_000)])
    assert _gauss_pvalue(draws, Fraction(25)) > 1e-4


def test_acceptance_enclosures_contain_exp_minus_gamma() -> None:
    """p⁻ ≤ e^{−γ} ≤ p⁺ for the exact rational γ (60-digit mpmath), incl. |y| ≈ σ²/t (cancellation) and γ near 37."""
    rng = np.random.default_rng(15)
    cases = []
    for sigma2 in (Fraction(1, 3), Fraction(7, 3), Fraction(25), Fraction(10**6 + 1, 7), WIDE):
        t = bulk.gaussian_proposal_scale(sigma2)
        centre = int(sigma2 / t)
        sd = math.sqrt(float(sigma2))
        ys = {0, 1, centre - 1, centre, centre + 1, int(centre + 8.6 * sd), int(centre + 8.61 * sd)}
        ys |= {int(v) for v in np.abs(rng.normal(size=200) * 4 * sd)}
        cases += [(y, sigma2, t) for y in sorted(ys) if y >= 0]
    y = np.array([c[0] for c in cases], dtype=np.float64)
    s2 = np.array([float(c[1]) for c in cases])
    t_all = {c[2] for c in cases}
    lo = np.empty(len(cases))
    hi = np.empty(len(cases))
    for t in t_all:
        idx = np.array([i for i, c in enumerate(cases) if c[2] == t])
        lo[idx], hi[idx] = bulk._acceptance_enclosure(y[idx], s2[idx], t)
    with mpmath.workdps(60):
        for (yi, sigma2, t), p_lo, p_hi in zip(cases, lo, hi, strict=True):
            num, den = bulk._gaussian_exponent(yi, sigma2, t)
            assert Fraction(num, den) == (yi - sigma2 / t) ** 2 / (2 * sigma2)  # the exact γ, independently
            exact = mpmath.exp(-mpmath.mpf(num) / den)
            assert mpmath.mpf(p_lo) <= exact <= mpmath.mpf(p_hi)
            assert p_hi - p_lo <= 2.0**-30 * float(exact) + 2.0**-52  # tight: unsure words are rare


def _oracle_accept(words: list[int], num: int, den: int) -> bool:
    """U < e^{−num/den} with U = 0.w₁ w₂ … (base 2⁶⁴) plus half a last unit, in 200-digit mpmath."""
    with mpmath.workdps(200):
        u = sum(mpmath.mpf(w) / mpmath.mpf(2) ** (64 * (i + 1)) for i, w in enumerate(words))
        u += mpmath.mpf(2) ** (-64 * len(words) - 1)
        return bool(u < mpmath.exp(-mpmath.mpf(num) / den))


@pytest.mark.parametrize("tables", [False, True], ids=["per-proposal", "tables"])
@pytest.mark.parametrize("sigma2", [Fraction(7, 3), WIDE], ids=lambda s: f"s2={float(s):.4g}")
def test_words_on_the_acceptance_threshold_are_finished_exactly(sigma2: Fraction, tables: bool) -> None:
    """U's first word on e^{−γ}: the next word decides, as replayed in mpmath (both outcomes occur); a word just
    below / above 2⁶⁴ e^{−γ} by more than the enclosure's width is accepted / rejected with no further word."""
    t = bulk.gaussian_proposal_scale(sigma2)
    y = int(sigma2 / t) + max(1, int(math.sqrt(float(sigma2))))
    num, den = bulk._gaussian_exponent(y, sigma2, t)
    with mpmath.workdps(200):
        scaled = mpmath.exp(-mpmath.mpf(num) / den) * mpmath.mpf(2) ** 128
        w1 = int(mpmath.floor(scaled / mpmath.mpf(2) ** 64))
        nxt = int(mpmath.floor(scaled)) - (w1 << 64)
    outcomes = set()
    margin = w1 >> 30  # beyond the 2^-36 relative width of the enclosures
    for words in ([w1, 0], [w1, nxt - 1], [w1, nxt + 1], [w1, 2**64 - 1], [w1 - margin], [w1 + margin]):
        src = _Scripted(words)
        got = bulk._gaussian_accept(np.array([y]), [sigma2], np.array([float(sigma2)]), np.zeros(1, dtype=np.intp),
                                    t, src, tables=tables)
        assert bool(got[0]) == _oracle_accept(words, num, den)
        assert not src._script  # every scripted word was used: the decision needed exactly these
        outcomes.add(bool(got[0]))
    assert outcomes == {True, False}


def _bucket_oracle(sigma2: Fraction, t: int, lo: int, hi: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """2⁶⁴ × (min, max) of e^{−γ(y)} over every integer y in [lo, hi]: exact rational γ, 40-digit mpmath."""
    gammas = [(Fraction(y) - sigma2 / t) ** 2 / (2 * sigma2) for y in range(lo, hi + 1)]
    with mpmath.workdps(40):
        scale = mpmath.mpf(2) ** 64
        return (scale * mpmath.exp(-mpmath.mpf(max(gammas).numerator) / max(gammas).denominator),
                scale * mpmath.exp(-mpmath.mpf(min(gammas).numerator) / min(gammas).denominator))


def _table_violations(sigma2: Fraction, buckets: int) -> list[int]:
    """Buckets k (of the ``buckets`` nearest σ²/t, a spread of the tail, the last one) whose thresholds do not
    bracket 2⁶⁴ e^{−γ} over the bucket: L_k > min or H_k + 1 < max (brute force over the bucket's integers)."""
    t = bulk.gaussian_proposal_scale(sigma2)
    tab = bulk._accept_table(sigma2, t)
    h, last = 1 << tab.shift, bulk._TABLE_BUCKETS - 1
    centre = int(sigma2 / t) // h
    reach = int((sigma2 / t + 14 * math.sqrt(float(sigma2))) // h)
    picks = {*range(max(0, centre - buckets // 2), centre + buckets // 2 + 1),
             *np.linspace(0, min(reach, last - 1), buckets).astype(int).tolist()}
    bad = []
    for k in sorted(picks):
        low, high = _bucket_oracle(sigma2, t, k * h, (k + 1) * h - 1)
        if not int(tab.low[k]) <= low or not high <= int(tab.high[k]) + 1:
            bad.append(k)
    assert last * h >= sigma2 / t  # the unbounded last bucket lies where e^{−γ} decreases
    _, top = _bucket_oracle(sigma2, t, last * h, last * h)
    if int(tab.low[last]) != 0 or not top <= int(tab.high[last]) + 1:
        bad.append(last)
    return bad


TABLE_VARIANCES = [Fraction(1, 2), Fraction(7, 3), Fraction(25), Fraction(1.366**2 * 2**20), WIDE]


@pytest.mark.parametrize("sigma2", TABLE_VARIANCES, ids=lambda s: f"s2={float(s):.4g}")
def test_acceptance_tables_bracket_the_exact_probabilities(sigma2: Fraction) -> None:
    """Step 7: L_k ≤ 2⁶⁴ e^{−γ(y)} ≤ H_k + 1 for every integer y of bucket k, against brute force; and tight."""
    assert _table_violations(sigma2, 6 if float(sigma2) > 1e12 else 40) == []
    t = bulk.gaussian_proposal_scale(sigma2)
    tab = bulk._accept_table(sigma2, t)
    width = (tab.high.astype(float) - tab.low.astype(float)) / 2.0**64
    assert width.max() <= (2.0**-30 if tab.shift == 0 else 14 / bulk._TABLE_BUCKETS)  # few words left undecided


def test_acceptance_tables_without_the_centre_candidates_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weakened: each bucket's maximum taken at its ends only; the bucket holding σ²/t is then wrong."""
    bulk._accept_table.cache_clear()
    monkeypatch.setattr(bulk, "_CENTRE_OFFSETS", ())
    assert _table_violations(WIDE, 2) != []
    bulk._accept_table.cache_clear()


def test_acceptance_tables_with_rounded_thresholds_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weakened: both thresholds at the enclosure's midpoint (rounded), not outward; brute force finds buckets cut."""
    bulk._accept_table.cache_clear()
    mid = lambda lo, hi: np.round((lo + hi) * 2.0**63).astype(np.uint64)  # noqa: E731
    monkeypatch.setattr(bulk, "_word_thresholds", lambda lo, hi: (mid(lo, hi), mid(lo, hi)))
    assert _table_violations(Fraction(7, 3), 40) != []
    bulk._accept_table.cache_clear()


def test_word_thresholds_against_fractions() -> None:
    """L = ⌊2⁶⁴ p⁻⌋ (≤ 2⁶⁴ − 2048) and H = min(⌈2⁶⁴ p⁺⌉, 2⁶⁴) − 1, computed independently in Fractions."""
    rng = np.random.default_rng(19)
    p: np.ndarray = np.concatenate([rng.random(2000), rng.random(200) * 2.0**-40, [0.0, 1.0, 1.0 + 2.0**-40, 2.0**-64,
                                                                      2.0**-70, 0.5, 1 - 2.0**-53, 2.0**-1074]])
    low, high = bulk._word_thresholds(p, p)
    for x, lo, hi in zip(p.tolist(), low.tolist(), high.tolist(), strict=True):
        exact = Fraction(x) * 2**64
        assert lo == min(math.floor(exact), 2**64 - 2048)
        assert hi == min(math.ceil(exact), 2**64) - 1 if x > 0 else hi == 0


def test_forced_exact_comparisons_keep_the_pmf(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enclosures widened to ±25 %: most comparisons take the exact mpmath path; the pmf is still exact."""
    bulk._accept_table.cache_clear()
    monkeypatch.setattr(bulk, "_EXP_WIDEN", 0.25)
    draws = bulk.discrete_gaussian([Fraction(7, 3)], np.zeros(20_000, dtype=np.intp), WordSource(16))
    bulk._accept_table.cache_clear()  # no widened table outlives the test
    assert _gauss_pvalue(draws, Fraction(7, 3), cells=12) > 1e-4


def test_huge_proposals_and_variances_take_the_exact_path() -> None:
    """|y| ≥ 2⁵² and σ² outside [2⁻⁴⁰⁰, 2⁴⁰⁰] are decided by _accept_exact alone; replayed in mpmath."""
    sigma2 = Fraction(2**110)
    t = bulk.gaussian_proposal_scale(sigma2)
    y = t + 3  # ≥ 2^52
    num, den = bulk._gaussian_exponent(y, sigma2, t)
    for first in (0, 2**63, 2**64 - 1):
        words = [first, 12345]
        got = bulk._gaussian_accept(np.array([y], dtype=np.int64), [sigma2], np.array([float(sigma2)]),
                                    np.zeros(1, dtype=np.intp), t, _Scripted(words))
        assert bool(got[0]) == _oracle_accept(words, num, den)
    big = 2**53 + 5  # in the tables' σ² range, but beyond 2^52: exact path too
    num, den = bulk._gaussian_exponent(big, Fraction(25), 5)
    for first in (0, 1, 2**64 - 1):
        words = [first, 12345]
        got = bulk._gaussian_accept(np.array([big], dtype=np.int64), [Fraction(25)], np.array([25.0]),
                                    np.zeros(1, dtype=np.intp), 5, _Scripted(words), tables=True)
        assert bool(got[0]) == _oracle_accept(words, num, den)
    tiny = bulk.discrete_gaussian([Fraction(1, 2**500)], np.zeros(50, dtype=np.intp), WordSource(17))
    assert not tiny.any()  # σ² = 2^-500: P(Y ≠ 0) < e^(-2^499)


def test_dyadic_sign_against_fractions() -> None:
    """sign(n/2^bits − man·2^exp) as Fraction arithmetic says, incl. ties and far-apart exponents."""
    rng = np.random.default_rng(18)
    for _ in range(3000):
        bits = int(rng.integers(0, 200))
        n = int(rng.integers(0, 2**62)) >> int(rng.integers(0, 62))
        man = int(rng.integers(1, 2**62))
        exp = int(rng.integers(-400, 0)) - man.bit_length() + 1
        for m, e in ((man, exp), (n or 1, -bits)):  # random, and equal to n/2^bits when n > 0
            want = Fraction(n, 2**bits) - Fraction(m) * Fraction(2) ** e
            assert bulk._dyadic_sign(n, bits, (0, m, e, m.bit_length())) == (want > 0) - (want < 0)
    assert bulk._dyadic_sign(1, 0, (0, 1, -10**12, 1)) == 1  # e^{-γ} far below any U > 0: no huge integers

"""Tests of dpcloak.privacy.continual.

Oracles: exact rational arithmetic (Fractions) for the factorisation, its error and its zCDP level on short
horizons; an independent float evaluation (scipy.signal.lfilter of the rational generating function) at
T = 8,760; brute force over the actual integer encoder for the sensitivity bounds; the dense 0/1 matrix of
the binary mechanism built from its definition; and seeded simulations with tolerances from the standard
error of a sample standard deviation.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import signal

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.accounting import zcdp_epsilon
from dpcloak.privacy.continual import (
    BLT_ALPHA,
    BLT_BITS,
    BLT_OMEGA_NUMERATORS,
    BLT_THETA_NUMERATORS,
    ContinualCounter,
    PrefixSumStream,
    _Encoder,
    _fresh_state,
    release_prefix_sums,
)

THETA = [Fraction(a, 2**BLT_BITS) for a in BLT_THETA_NUMERATORS]
OMEGA = [Fraction(b, 2**BLT_BITS) for b in BLT_OMEGA_NUMERATORS]
K = 2**20 + 1  # grid shift of one event at sensitivity 1


def _blt_coefficients(horizon: int) -> list[Fraction]:
    """c_0 = 1, c_m = Σ ω_i θ_i^(m−1): the Toeplitz coefficients of C, exactly."""
    return [Fraction(1)] + [sum((w * th ** (m - 1) for w, th in zip(OMEGA, THETA, strict=True)), Fraction(0))
                            for m in range(1, horizon)]


def _inverse_toeplitz(c: list[Fraction]) -> list[Fraction]:
    """Coefficients of C⁻¹ (lower-triangular Toeplitz) by exact forward substitution."""
    inv = [Fraction(1) / c[0]]
    for m in range(1, len(c)):
        inv.append(-sum((c[i] * inv[m - i] for i in range(1, m + 1)), Fraction(0)) / c[0])
    return inv


def _encode(method: str, horizon: int, grid_counts: list[int]) -> list[int]:
    """The node's integer outputs w (no noise) for integer grid counts."""
    enc = _Encoder(method, _fresh_state(method, horizon), 0)
    return [int(enc.step(n)) for n in grid_counts]


def _lag_bounds(horizon: int, k: int) -> list[int]:
    """D_j from the module docstring's definition, in Fractions (floor of exact rationals)."""
    spread = [Fraction(k)] * len(THETA)
    out = [k]
    for _ in range(1, horizon):
        out.append(math.floor(sum((w * e for w, e in zip(OMEGA, spread, strict=True)), Fraction(0))) + 1)
        spread = [Fraction(math.floor(th * e) + 1) for th, e in zip(THETA, spread, strict=True)]
    return out


# ---------------------------------------------------------------- the factorisation's error, exactly


def test_factorization_std_matches_exact_rational_computation() -> None:
    horizon = 48
    counter = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6)
    beta = np.cumsum(np.array(_inverse_toeplitz(_blt_coefficients(horizon)), dtype=object))  # B = A C⁻¹
    sigma2 = counter.noise_variances()
    g = Fraction(counter.grid)
    for t in range(horizon):
        var = sum((beta[t - j] ** 2 * sigma2[j] for j in range(t + 1)), Fraction(0)) * g * g
        assert counter.std[t] == pytest.approx(math.sqrt(var), rel=1e-12)


def test_factorization_noise_scale_follows_published_alpha() -> None:
    counter = ContinualCounter(horizon=100, epsilon=1.0, delta=1e-6)
    s2 = np.array([float(s) for s in counter.noise_variances()])
    assert s2[0] / s2 == pytest.approx((1.0 + np.arange(100)) ** (2 * BLT_ALPHA), rel=1e-12)


def test_year_of_hourly_windows_meets_the_bound_by_an_independent_evaluation() -> None:
    horizon = 8760
    counter = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6)
    theta = np.array([float(t) for t in THETA])
    omega = np.array([float(w) for w in OMEGA])
    den = np.array([1.0])  # Π (1 − θ_i z)
    for th in theta:
        den = np.convolve(den, [1.0, -th])
    num = den.copy()
    for i in range(theta.size):
        others = np.array([1.0])
        for j in range(theta.size):
            if j != i:
                others = np.convolve(others, [1.0, -theta[j]])
        num[1:others.size + 1] += omega[i] * others
    impulse = np.zeros(horizon)
    impulse[0] = 1.0
    c = signal.lfilter(num, den, impulse)  # C(z) = num/den
    beta = np.cumsum(signal.lfilter(den, num, impulse))  # C⁻¹(z) = den/num, then prefix sums
    direct = [1.0] + [float(np.sum(omega * theta ** (m - 1))) for m in (1, 2, 3, 1000)]
    assert c[[0, 1, 2, 3, 1000]] == pytest.approx(direct, rel=1e-7)  # the IIR filter's own rounding
    s2 = np.array([float(s) for s in counter.noise_variances()])
    var = np.array([np.dot(beta[: t + 1][::-1] ** 2, s2[: t + 1]) for t in (0, 1, 100, 4000, horizon - 1)])
    assert counter.std[[0, 1, 100, 4000, horizon - 1]] == pytest.approx(np.sqrt(var) * counter.grid, rel=1e-7)
    ratio = counter.worst_std / counter.sigma_one
    assert ratio <= 1.05 * (0.846 + math.log(horizon) / math.pi)  # ≈ 3.92, the target
    # the plain square-root factorisation does not meet it: Σ_k (binom(2k,k)/4^k)² over a year
    r = np.exp(np.cumsum(np.log((2 * np.arange(1, horizon) - 1) / (2 * np.arange(1, horizon)))))
    assert 1.0 + float(np.sum(r**2)) > 1.05 * (0.846 + math.log(horizon) / math.pi)


def test_methods_errors_against_closed_forms() -> None:
    horizon = 8760
    ind = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method="independent")
    tree = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method="tree")
    assert ind.std / ind.sigma_one == pytest.approx(np.sqrt(np.arange(1, horizon + 1)), rel=1e-12)
    assert ind.worst_std / ind.sigma_one == pytest.approx(93.59, abs=0.01)
    levels = horizon.bit_length()  # each count is in at most 14 released blocks: σ_tree = √14·σ₁
    popcount = np.array([bin(t).count("1") for t in range(1, horizon + 1)])
    assert tree.std / tree.sigma_one == pytest.approx(np.sqrt(popcount * levels), rel=1e-9)


# ---------------------------------------------------------------- sensitivity and zCDP, both sides


def test_lag_bounds_cover_brute_force_neighbours_and_the_linear_bound_does_not() -> None:
    horizon = 160
    bounds = _lag_bounds(horizon, K)
    ideal = [math.floor(K * c) for c in _blt_coefficients(horizon)]
    rng = np.random.default_rng(3)
    worst_excess = 0
    for _ in range(60):
        base = [int(v) for v in rng.integers(0, 50 * 2**20, size=horizon)]
        s = int(rng.integers(0, 20))
        other = list(base)
        other[s] += int(rng.choice([-K, K, K - 1, 2**20]))
        w, w2 = _encode("factorization", horizon, base), _encode("factorization", horizon, other)
        diff = [abs(a - b) for a, b in zip(w, w2, strict=True)]
        assert diff[:s] == [0] * s  # nothing before the event changes
        assert all(diff[s + j] <= bounds[j] for j in range(horizon - s))
        worst_excess = max(worst_excess, max(diff[s + j] - ideal[j] for j in range(horizon - s)))
    assert worst_excess > 0  # the rounding drift is real: the linear bound k·c_j alone would be violated


def test_factorization_rho_matches_exact_rational_and_bounds_it() -> None:
    horizon = 40
    counter = ContinualCounter(horizon=horizon, epsilon=0.7, delta=1e-6)
    lags = _lag_bounds(horizon, K)
    s2 = counter.noise_variances()
    exact = max(sum((Fraction(lags[j] ** 2) / s2[s + j] for j in range(horizon - s)), Fraction(0))
                for s in range(horizon)) / 2
    assert Fraction(counter.rho) >= exact  # an upper bound ...
    assert counter.rho <= float(exact) * (1 + 1e-12)  # ... and a tight one
    assert zcdp_epsilon(rho=counter.rho, delta=1e-6) <= 0.7 == counter.epsilon
    assert counter.guarantee().epsilon <= 0.7
    weakened = zcdp_epsilon(rho=4 * float(exact), delta=1e-6)  # the same noise at half its σ
    assert weakened > 0.7


def test_tree_is_the_dense_binary_mechanism_and_its_rho_is_exact() -> None:
    horizon = 37
    # dense C from the definition: row t (1-based) sums the block (t − 2^tz(t), t]
    dense = np.zeros((horizon, horizon), dtype=int)
    for t in range(1, horizon + 1):
        low = t & -t
        dense[t - 1, t - low: t] = 1
    for s in range(horizon):
        impulse = [0] * horizon
        impulse[s] = 1
        assert _encode("tree", horizon, impulse) == dense[:, s].tolist()
    counter = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method="tree")
    column_max = int((dense**2).sum(axis=0).max())
    assert column_max == 6 == horizon.bit_length()
    exact = Fraction(K * K * column_max) / (2 * counter.noise_variances()[0])
    assert Fraction(counter.rho) >= exact and counter.rho == pytest.approx(float(exact), rel=1e-15)
    # B from the definition: the running total at t sums the blocks of t's binary decomposition
    rng = np.random.default_rng(0)
    v = rng.integers(-1000, 1000, size=horizon)
    decoded = counter.decode(v) / counter.grid
    assert decoded == pytest.approx(np.linalg.solve(dense, v).cumsum(), abs=1e-6)


def test_independent_and_tree_decode_noiseless_outputs_exactly() -> None:
    rng = np.random.default_rng(1)
    grid_counts = [int(v) for v in rng.integers(0, 10**6, size=50)]
    for method in ("independent", "tree"):
        counter = ContinualCounter(horizon=50, epsilon=1.0, delta=1e-6, method=method)
        totals = counter.decode(_encode(method, 50, grid_counts)) / counter.grid
        assert totals.tolist() == np.cumsum(grid_counts).astype(float).tolist()


def test_factorization_decodes_noiseless_outputs_within_its_bias_bound() -> None:
    rng = np.random.default_rng(2)
    grid_counts = [int(v) for v in rng.integers(0, 10**9, size=300)]
    counter = ContinualCounter(horizon=300, epsilon=1.0, delta=1e-6)
    totals = counter.decode(_encode("factorization", 300, grid_counts))
    truth = np.cumsum(grid_counts) * counter.grid
    assert np.max(np.abs(totals - truth)) <= counter.bias_bound
    assert counter.bias_bound < 1e-3 * counter.sigma_one


def test_naive_real_factor_release_leaks_through_its_lattice() -> None:
    """Why V = w + Z is released, not A x + B Z: B·ℤ^T shifted by A x identifies x among neighbours."""
    horizon = 6
    c = np.array([float(v) for v in _blt_coefficients(horizon)])
    dense_c = np.array([[c[i - j] if i >= j else 0.0 for j in range(horizon)] for i in range(horizon)])
    a = np.tril(np.ones((horizon, horizon)))
    b = a @ np.linalg.inv(dense_c)
    x, x2 = np.array([3, 1, 4, 1, 5, 9.0]), np.array([3, 1, 4, 2, 5, 9.0])
    z = np.random.default_rng(0).integers(-50, 50, size=horizon)
    out = a @ x + b @ z
    # under x the output minus A x is B times an integer vector; under x2 it is not: the supports differ
    assert np.allclose(dense_c @ (out - a @ x), np.rint(dense_c @ (out - a @ x)), atol=1e-9)
    residual = dense_c @ (out - a @ x2)
    assert np.max(np.abs(residual - np.rint(residual))) > 1e-3


# ---------------------------------------------------------------- releases


def test_simulated_streams_match_the_stated_error() -> None:
    horizon, n = 8760, 2000
    counter = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6)
    counts = np.random.default_rng(5).integers(0, 3, size=(n, horizon))  # small: int64 state
    r = counter.release(counts, simulation=True, rng=11)
    err = r.totals - np.cumsum(counts, axis=1)
    ratio = err.std(axis=0) / counter.std
    se = 1 / math.sqrt(2 * n)  # standard error of a sample std, relative
    assert np.all(np.abs(ratio - 1) < 6 * se)
    assert np.abs(err.mean(axis=0) / (counter.std / math.sqrt(n))).max() < 6
    worst = err.std(axis=0)[horizon // 2:].max() / counter.sigma_one
    assert worst <= 1.05 * (0.846 + math.log(horizon) / math.pi) * (1 + 6 * se)


def test_exact_release_is_integers_on_the_grid_and_unbiased() -> None:
    counts = np.arange(40) % 5
    for method in ("factorization", "tree", "independent"):
        r = release_prefix_sums(counts, epsilon=1.0, delta=1e-6, method=method)
        assert r.simulation is False and r.released.shape == (40,)
        assert all(isinstance(int(v), int) and int(v) == v for v in r.released)
        assert r.totals == pytest.approx(r.counter.decode(r.released))
        assert np.all(np.abs(r.totals - np.cumsum(counts)) < 8 * r.std + r.counter.bias_bound)


def test_seed_refused_on_release_path_and_parameters_validated() -> None:
    with pytest.raises(InvalidParameterError, match="rng must be None"):
        release_prefix_sums(np.ones(5), epsilon=1.0, delta=1e-6, rng=1)
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        release_prefix_sums(np.ones(5), epsilon=1.0, delta=1e-6, method="bogus")
    with pytest.raises(InvalidParameterError, match="epsilon"):
        release_prefix_sums(np.ones(5), epsilon=0.0, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="counts must have shape"):
        release_prefix_sums(np.ones((2, 2, 2)), epsilon=1.0, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="counts must have shape"):
        ContinualCounter(horizon=4, epsilon=1.0, delta=1e-6).release(np.ones(5))


def test_two_streams_release_each_row() -> None:
    r = release_prefix_sums(np.ones((3, 30)), epsilon=1.0, delta=1e-6, method="tree", simulation=True, rng=0)
    assert r.totals.shape == (3, 30) and r.std.shape == (30,)


# ---------------------------------------------------------------- the node's stream


@pytest.mark.parametrize("method", ["factorization", "tree", "independent"])
def test_stream_state_is_small_and_resumes_exactly(method: str) -> None:
    counter = ContinualCounter(horizon=8760, epsilon=1.0, delta=1e-6, method=method)
    stream = counter.stream()
    counts = np.random.default_rng(7).integers(0, 10**4, size=1000)
    for x in counts[:700]:
        stream.push(float(x))
    data = stream.to_bytes()
    assert len(data) <= 1024
    restored = PrefixSumStream.from_bytes(data)
    assert restored.windows == 700 and restored.counter.method == method
    for x in counts[700:]:
        stream.push(float(x))
        restored.push(float(x))
    assert restored.to_bytes() == stream.to_bytes()  # same integer state: same encoder outputs
    expected = _Encoder(method, _fresh_state(method, 8760), 0)
    for x in counts:
        expected.step(int(x) * 2**20)
    assert [int(v) for v in expected.state] == [int(v) for v in restored._encoder.state]


def test_stream_pushes_are_noisy_encoder_outputs() -> None:
    counter = ContinualCounter(horizon=200, epsilon=1.0, delta=1e-6)
    stream = counter.stream()
    out = [stream.push(2.0) for _ in range(200)]
    noiseless = _encode("factorization", 200, [2 * 2**20] * 200)
    z = np.array(out) - np.array(noiseless)
    s = np.sqrt(np.array([float(v) for v in counter.noise_variances()]))
    assert abs(float(np.mean(z / s))) < 4 / math.sqrt(200) and abs(float(np.std(z / s)) - 1) < 0.2


def test_stream_refuses_past_horizon_and_bad_bytes() -> None:
    stream = ContinualCounter(horizon=2, epsilon=1.0, delta=1e-6, method="tree").stream()
    stream.push(1.0)
    stream.push(1.0)
    with pytest.raises(InvalidParameterError, match="horizon of 2 windows is used up"):
        stream.push(1.0)
    with pytest.raises(InvalidParameterError, match="not a serialised PrefixSumStream"):
        PrefixSumStream.from_bytes(b"nonsense")
    with pytest.raises(InvalidParameterError, match="does not match"):
        PrefixSumStream.from_bytes(stream.to_bytes() + b"\x00")


def test_range_std_matches_dense_b_matrices() -> None:
    horizon = 40
    # factorisation: B = A C⁻¹ exactly (Fractions), noise variances exact
    counter = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6)
    beta = np.cumsum(np.array(_inverse_toeplitz(_blt_coefficients(horizon)), dtype=object))
    dense_b = [[beta[t - j] if j <= t else Fraction(0) for j in range(horizon)] for t in range(horizon)]
    s2 = counter.noise_variances()
    g = Fraction(counter.grid)
    for start, stop in [(0, 40), (0, 1), (5, 29), (24, 40), (39, 40)]:
        row = [dense_b[stop - 1][j] - (dense_b[start - 1][j] if start else 0) for j in range(horizon)]
        var = sum((r * r * s for r, s in zip(row, s2, strict=True)), Fraction(0)) * g * g
        assert counter.range_std(start, stop) == pytest.approx(math.sqrt(var), rel=1e-12)
    # tree: B = A C⁻¹ from the dense 0/1 C of the definition
    tree = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method="tree")
    dense_c = np.zeros((horizon, horizon))
    for t in range(1, horizon + 1):
        dense_c[t - 1, t - (t & -t): t] = 1
    b = np.tril(np.ones((horizon, horizon))) @ np.linalg.inv(dense_c)
    sigma = math.sqrt(float(tree.noise_variances()[0])) * tree.grid
    for start, stop in [(0, 40), (5, 29), (24, 40), (16, 32)]:
        row = b[stop - 1] - (b[start - 1] if start else 0)
        assert tree.range_std(start, stop) == pytest.approx(sigma * np.linalg.norm(row), rel=1e-9)
    ind = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method="independent")
    assert ind.range_std(5, 29) == pytest.approx(math.sqrt(24) * ind.sigma_one, rel=1e-12)
    with pytest.raises(InvalidParameterError, match="stop must be an integer >= 6"):
        counter.range_std(5, 5)


def test_horizon_limits() -> None:
    with pytest.raises(InvalidParameterError, match="horizon must be at most 131072 windows for method='fact"):
        ContinualCounter(horizon=2**17 + 1, epsilon=1.0, delta=1e-6)
    tree = ContinualCounter(horizon=2**20, epsilon=1.0, delta=1e-6, method="tree")  # O(T): fine
    assert tree.worst_std / tree.sigma_one == pytest.approx(math.sqrt(20 * 21), rel=1e-9)  # popcount ≤ 20, 21 levels


def test_dp_event_is_the_zcdp_level_and_dp_accounting_agrees() -> None:
    from dp_accounting.rdp import RdpAccountant

    counter = ContinualCounter(horizon=500, epsilon=1.0, delta=1e-6)
    event = counter.dp_event()
    assert event.xi == 0 and event.rho == counter.rho
    acc = RdpAccountant()
    acc.compose(event)
    theirs = acc.get_epsilon(1e-6)  # fixed Rényi orders: never below the optimal-order conversion
    assert counter.guarantee().epsilon <= theirs <= counter.guarantee().epsilon * 1.01


def test_counter_is_an_event_of_the_one_accountant() -> None:
    """privacy_spent / compose take the counter through its release event (no special case): one release is the
    counter's own ε; k releases are kρ-zCDP, and a counter next to a discrete Gaussian reading adds the two ρ.
    Oracle: dp_accounting's RDP accountant on ZCDpEvent(kρ) (fixed Rényi orders: never below the optimal-order
    conversion, within 1 %) and zcdp_epsilon of the hand-added ρ."""
    from dp_accounting import ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    from dpcloak.privacy import DiscreteGaussianMechanism
    from dpcloak.privacy.accounting import accountable, compose, privacy_spent, release_event

    for method in ("factorization", "tree", "independent"):
        counter = ContinualCounter(horizon=300, epsilon=1.0, delta=1e-6, method=method)
        assert accountable(counter) and release_event(counter) == counter.release_event()
        assert privacy_spent(counter, readings=1, delta=1e-6).epsilon == counter.guarantee().epsilon
        for k in (3, 52):
            acc = RdpAccountant()
            acc.compose(ZCDpEvent(k * counter.rho))
            ours = privacy_spent(counter, readings=k, delta=1e-5).epsilon
            assert ours <= acc.get_epsilon(1e-5) <= ours * 1.01
        reading = DiscreteGaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0)
        both = compose([counter.release_event(), reading.release_event()], delta=1e-5).epsilon
        rho = Fraction(counter.rho) + Fraction(reading.grid_sensitivity) ** 2 / (2 * reading.sigma2)
        assert both == pytest.approx(zcdp_epsilon(rho=float(rho), delta=1e-5), rel=1e-12)
    with pytest.raises(InvalidParameterError, match="rho must be > 0"):
        ContinualCounter(horizon=3, epsilon=1.0, delta=1e-6).release_event().__class__(
            sensitivity=1.0, scale=1.0, rho=Fraction(0))


def test_stream_noise_is_drawn_ahead_used_once_and_never_restored() -> None:
    """Noise drawn ahead is kept in memory only: a stream restored from its bytes draws afresh, so its outputs for
    the same counts differ from the original's (reused noise would make them equal); each window's noise has its
    own variance σ_t² (standardised residuals over 3 × NOISE_AHEAD windows: mean 0, variance 1)."""
    from dpcloak.privacy.continual import NOISE_AHEAD

    counter = ContinualCounter(horizon=4 * NOISE_AHEAD, epsilon=1.0, delta=1e-6)
    stream = counter.stream()
    first = [stream.push(1.0) for _ in range(10)]
    assert len(stream._noise) == NOISE_AHEAD - 10 and len(stream.to_bytes()) <= 1024
    restored = PrefixSumStream.from_bytes(stream.to_bytes())
    a = [stream.push(1.0) for _ in range(3 * NOISE_AHEAD)]
    b = [restored.push(1.0) for _ in range(3 * NOISE_AHEAD)]
    assert sum(x == y for x, y in zip(a, b, strict=True)) <= 2  # P(equal) per window ≈ 1/(σ√(4π)) < 1e-6
    w = _encode("factorization", 4 * NOISE_AHEAD, [2**20] * (10 + 3 * NOISE_AHEAD))
    z = (np.array(first + a) - np.array(w)) / np.sqrt([float(v) for v in counter.noise_variances()[:len(w)]])
    assert abs(float(z.mean())) < 5 / math.sqrt(z.size) and abs(float(z.var()) - 1) < 0.25


def test_blocked_rho_bound_bounds_the_exact_sum_tightly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the direct horizon the zCDP sum is bounded by blocks of columns: forced here at T = 700 (blocks of up
    to 10 columns), it is at least the maximum computed in 40-digit mpmath (exact rational variances) and within
    0.3 % of it; a 'bound' taking each block's smallest weights instead of its largest falls below it (it can fail)."""
    import mpmath

    import dpcloak.privacy.continual as continual

    horizon = 700
    counter = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6)
    lags, s2 = _lag_bounds(horizon, K), counter.noise_variances()
    with mpmath.workdps(40):
        inverse = [mpmath.mpf(v.denominator) / v.numerator for v in s2]
        exact = max(mpmath.fsum(lags[j] ** 2 * inverse[s + j] for j in range(horizon - s)) for s in range(horizon)) / 2
    monkeypatch.setattr(continual, "_DIRECT_RHO_HORIZON", 10)
    blocked = continual._rho_bound(lags, s2)
    assert mpmath.mpf(blocked) >= exact * (1 + mpmath.mpf(10) ** -30) and blocked <= float(exact) * 1.003
    real_filter = continual.ndimage.maximum_filter1d
    monkeypatch.setattr(continual.ndimage, "maximum_filter1d",
                        lambda x, size, **kw: continual.ndimage.minimum_filter1d(x, size, **kw))
    try:
        assert mpmath.mpf(continual._rho_bound(lags, s2)) < exact
    finally:
        monkeypatch.setattr(continual.ndimage, "maximum_filter1d", real_filter)


def test_factorization_beyond_two_years() -> None:
    """T = 20,000 windows (past the direct horizon): the calibrated counter keeps its ε and its error stays within
    1.05 (0.846 + ln T/π) σ₁; the stated ρ is at least the direct float sum of the same variances."""
    from dpcloak.privacy.continual import _blt_lag_bounds

    horizon = 20_000
    counter = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6)
    assert counter.guarantee().epsilon <= 1.0
    assert counter.worst_std / counter.sigma_one <= 1.05 * (0.846 + math.log(horizon) / math.pi)
    lag2 = np.array([float(d * d) for d in _blt_lag_bounds(horizon, K)])
    inverse = 1.0 / np.array([float(v) for v in counter.noise_variances()])
    direct = float(signal.fftconvolve(inverse[::-1], lag2)[:horizon].max()) / 2
    assert direct * (1 - 1e-9) <= counter.rho <= direct * 1.003


# ---------------------------------------------------------------- w consecutive windows (w-event), exactly


def _span_lag_bounds(horizon: int, k: int, span: int) -> list[int]:
    """D⁽ʷ⁾_j from the docstring's definition, in Fractions: buffers differ from the first changed window on."""
    spread = [Fraction(0)] * len(THETA)
    out = []
    for j in range(horizon):
        change = k if j < span else 0
        active = any(e != 0 for e in spread)
        out.append(change + (math.floor(sum((w * e for w, e in zip(OMEGA, spread, strict=True)), Fraction(0))) + 1
                             if active else 0))
        spread = [Fraction((math.floor(th * e) + 1 if e != 0 else 0) + change) for th, e in zip(THETA, spread,
                                                                                              strict=True)]
    return out


@pytest.mark.parametrize("span", [1, 2, 5, 12])
def test_span_rho_of_the_factorization_is_the_exact_rational_column_sum_norm(span: int) -> None:
    """ρ_w of the factorisation against an independent computation: the recurrence in Fractions and the exact
    maximum over every start s of Σ_j D_j² / σ²_{s+j}; it bounds the rational value, within 1e-12. The integer
    encoder's realised output differences for neighbours differing in w consecutive windows (each by ≤ k) never
    exceed the bounds, and their Σ Δ²/σ² exceeds what w independent events (w·ρ₁, the weakened statement) allow,
    while staying under w²ρ₁ (the loose chain of events) by a margin: the exact norm is what is stated."""
    horizon = 48
    counter = ContinualCounter(horizon=horizon, epsilon=0.9, delta=1e-6)
    s2 = counter.noise_variances()
    lags = _span_lag_bounds(horizon, K, span)
    exact = max(sum((Fraction(lags[j] ** 2) / s2[s + j] for j in range(horizon - s)), Fraction(0))
                for s in range(horizon)) / 2
    assert Fraction(counter.span_rho(span)) >= exact
    assert counter.span_rho(span) <= float(exact) * (1 + 1e-12)
    rng = np.random.default_rng(span)
    realised = Fraction(0)
    for _ in range(25):
        base = [int(v) for v in rng.integers(0, 40 * 2**20, size=horizon)]
        s = int(rng.integers(0, horizon - span))
        other = list(base)
        for i in range(s, s + span):
            other[i] += int(rng.choice([-K, K, K - 1]))
        w, w2 = _encode("factorization", horizon, base), _encode("factorization", horizon, other)
        diff = [abs(a - b) for a, b in zip(w, w2, strict=True)]
        assert diff[:s] == [0] * s and all(diff[s + j] <= lags[j] for j in range(horizon - s))
        realised = max(realised, sum((Fraction(diff[t] ** 2) / s2[t] for t in range(horizon)), Fraction(0)) / 2)
    assert realised <= Fraction(counter.span_rho(span))
    if span > 1:
        assert realised > span * Fraction(counter.rho)  # w independent events would understate the loss
        assert counter.span_rho(span) < 0.9 * span**2 * counter.rho  # tighter than w chained events


@pytest.mark.parametrize("horizon", [37, 64])
def test_span_rho_of_the_tree_is_the_dense_column_sum_norm(horizon: int) -> None:
    """The tree's ρ_w equals k² max_s ‖C·1_[s, s+w)‖² / (2σ²) with C the dense 0/1 factor built from its definition
    (brute force over every start s), for every w; the independent method's is w·ρ₁ exactly."""
    dense = np.zeros((horizon, horizon), dtype=np.int64)
    for t in range(1, horizon + 1):
        dense[t - 1, t - (t & -t): t] = 1
    tree = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method="tree")
    independent = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method="independent")
    for span in range(1, horizon + 1):
        norms = [int(((dense[:, s:s + span].sum(axis=1)) ** 2).sum()) for s in range(horizon)]
        exact = Fraction(K * K * max(norms)) / (2 * tree.noise_variances()[0])
        assert Fraction(tree.span_rho(span)) >= exact and tree.span_rho(span) == pytest.approx(float(exact), rel=1e-15)
        assert independent.span_rho(span) == pytest.approx(span * independent.rho, rel=1e-15)
    assert tree.span_rho(horizon + 5) == tree.span_rho(horizon)  # windows past the horizon change nothing
    g = tree.span_guarantee(8)
    assert g.epsilon == zcdp_epsilon(rho=tree.span_rho(8), delta=1e-6) and "any 8 consecutive" in g.neighbouring
    with pytest.raises(InvalidParameterError, match="windows"):
        tree.span_rho(0)


def test_span_rho_over_several_streams_bounds_the_joint_release_of_split_changes() -> None:
    """Changes of w consecutive windows split among 3 sensors' streams (each window's change in one of them,
    at random): the realised joint Σ Δ²/σ² over the three encoders stays within ``span_rho(w, streams=3)``
    (oracle: the integer encoders run on the neighbouring inputs), which is within 1 % of one stream's."""
    horizon, span = 48, 8
    counter = ContinualCounter(horizon=horizon, epsilon=0.9, delta=1e-6)
    s2 = counter.noise_variances()
    bound = Fraction(counter.span_rho(span, streams=3))
    assert counter.span_rho(span) <= counter.span_rho(span, streams=3) <= 1.01 * counter.span_rho(span)
    rng = np.random.default_rng(5)
    for _ in range(20):
        s = int(rng.integers(0, horizon - span))
        owner = rng.integers(0, 3, size=span)
        joint = Fraction(0)
        for stream in range(3):
            base = [int(v) for v in rng.integers(0, 40 * 2**20, size=horizon)]
            other = list(base)
            for i in range(span):
                if owner[i] == stream:
                    other[s + i] += int(rng.choice([-K, K]))
            diff = [a - b for a, b in zip(_encode("factorization", horizon, base),
                                          _encode("factorization", horizon, other), strict=True)]
            joint += sum((Fraction(d * d) / s2[t] for t, d in enumerate(diff)), Fraction(0)) / 2
        assert joint <= bound


def _replayed_outputs(method: str, horizon: int, counts: list[int]) -> list[int]:
    """The encoder's integers w_t replayed from the module docstring's definition in exact Fractions (BLT:
    buffers s_i ← R(θ_i s_i) + n, w = n + R(Σ ω_i s_i), R(x) = ⌊x + ½⌋; tree: the sum of the dyadic block ending
    at t; independent: n), not with the module's encoder."""
    if method == "independent":
        return list(counts)
    if method == "tree":
        return [sum(counts[t - (t & -t):t]) for t in range(1, len(counts) + 1)]
    half = Fraction(1, 2)
    buffers, out = [Fraction(0)] * len(THETA), []
    for n in counts:
        out.append(n + math.floor(sum((w * s for w, s in zip(OMEGA, buffers, strict=True)), Fraction(0)) + half))
        buffers = [Fraction(math.floor(th * s + half) + n) for th, s in zip(THETA, buffers, strict=True)]
    return out


@pytest.mark.parametrize("method", ["factorization", "tree", "independent"])
def test_encoded_range_bounds_every_replayed_stream_and_is_attained(method: str) -> None:
    """encoded_range holds for random and adversarial count streams in the declared range (the replayed encoder
    in exact Fractions as oracle), the constant streams at its ends reach it (so ``high − 1`` is exceeded: a
    weakened bound fails), and no upper limit gives none."""
    horizon = 300
    c = ContinualCounter(horizon=horizon, epsilon=1.0, delta=1e-6, method=method)
    low, high = c.encoded_range(0.0, 7.0)
    top = round(7.0 / c.grid)
    rng = np.random.default_rng(5)
    streams = [[top] * horizon, [0] * horizon, [top, 0] * (horizon // 2),
               [top] * (horizon // 2) + [0] * (horizon // 2)]
    streams += [rng.integers(0, top + 1, horizon).tolist() for _ in range(20)]
    replayed = [_replayed_outputs(method, horizon, s) for s in streams]
    assert all(high is not None and low <= w <= high for out in replayed for w in out)
    assert max(replayed[0]) == high and min(replayed[1]) == low == 0
    assert max(replayed[0]) > (high or 0) - 1  # the weakened bound high − 1 refuses an honest stream
    negative = c.encoded_range(-3.0, 7.0)  # counts may be declared below 0: the all-low stream gives the low end
    bottom = round(-3.0 / c.grid)
    assert negative[0] == min(_replayed_outputs(method, horizon, [bottom] * horizon)) < 0
    assert c.encoded_range(0.0, None) == (0, None)
    with pytest.raises(InvalidParameterError, match="high"):
        c.encoded_range(5.0, 1.0)

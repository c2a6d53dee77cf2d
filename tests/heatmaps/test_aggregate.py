"""Algorithm 1: budgets ε_i = γ^{|i−q|} ε/Z summing to ε, and the Laplace noise actually added per level."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.aggregate import (
    coarsen_aggregate,
    default_start_level,
    hierarchical_laplace,
    level_budget,
    noisy_user_count,
)
from dpcloak.heatmaps.data import bound_users
from dpcloak.heatmaps.pyramid import pyramid_levels


@pytest.mark.parametrize("w", [1, 3, 4, 15, 16, 20, 63, 64, 1000])
def test_q_is_floor_log2_sqrt_w(w):
    # Oracle: q = ⌊log₂ √w⌋ computed in floating point (exact away from powers of 4, checked separately).
    assert default_start_level(w) == math.floor(math.log2(math.sqrt(w)) + 1e-12)


@pytest.mark.parametrize(("epsilon", "depth", "w", "gamma"), [(1.0, 8, 20, 2**-0.5), (0.1, 10, 20, 0.8),
                                                              (7.3, 3, 1, 0.5), (1e-3, 0, 20, 2**-0.5)])
def test_budgets_follow_formula_and_sum_to_epsilon(epsilon, depth, w, gamma):
    b = level_budget(epsilon, depth=depth, w=w, gamma=gamma)
    q = min(math.floor(math.log2(math.sqrt(w)) + 1e-12), depth)
    assert b.q == q and b.levels == tuple(range(q, depth + 1))
    z = sum(gamma ** abs(i - q) for i in range(q, depth + 1))
    np.testing.assert_allclose(b.epsilons, [gamma ** abs(i - q) * epsilon / z for i in b.levels], rtol=1e-12)
    total = math.fsum(b.epsilons)
    assert total <= epsilon and total == pytest.approx(epsilon, rel=1e-15)


def test_full_pyramid_variant_of_theorem_3_1():
    b = level_budget(1.0, depth=6, w=20, start_level=0)
    assert b.levels == tuple(range(7)) and b.q == 2
    assert b.epsilons[2] == max(b.epsilons)
    assert math.fsum(b.epsilons) <= 1.0


@pytest.mark.parametrize(("kwargs", "match"), [({"epsilon": 0.0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"),
                                               ({"epsilon": 1.0, "w": 0}, "w"),
                                               ({"epsilon": 1.0, "gamma": 0.0}, "gamma")])
def test_bad_budget_parameters(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        level_budget(depth=4, **kwargs)


def _aggregate(seed=0, delta=256):
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 300, 3000)
    return bound_users(users, rng.random(3000) ** 2, rng.random(3000), resolution=delta)


def _standardised_noise(agg, noisy, epsilon_claimed):
    """Noise of every measured level times the ε_i the claimed budget assigns it (should be Lap(1))."""
    budget = level_budget(epsilon_claimed, depth=agg.depth, w=20)
    exact = pyramid_levels(agg.sums, start_level=budget.levels[0])
    return np.concatenate([(lev - ex).ravel() * eps for lev, ex, eps in zip(noisy.levels, exact, budget.epsilons,
                                                                             strict=True)])


def _scale_test(z):
    """Seeded statistical test: for Lap(1), mean|z| estimates b = 1 with sd 1/√N (|z| ~ Exp(1)); accept within 4 sd."""
    return abs(np.mean(np.abs(z)) - 1.0) <= 4.0 / math.sqrt(z.size)


def test_level_noise_is_laplace_at_its_epsilon_and_undernoising_fails():
    agg = _aggregate()
    eps = 1.0
    honest = hierarchical_laplace(agg, epsilon=eps, rng=11, noise="float")
    z = _standardised_noise(agg, honest, eps)
    assert z.size == sum(4**i for i in range(2, 9))
    assert _scale_test(z)
    assert stats.kstest(z, "laplace").pvalue > 1e-3
    # The finest level alone (65 536 cells) at its own ε_i.
    finest = z[-(256 * 256):]
    assert _scale_test(finest)
    # A deliberately weakened release (10 % less noise than the budget for ε claims) is caught.
    weak = hierarchical_laplace(agg, epsilon=1.1 * eps, rng=11, noise="float")
    zw = _standardised_noise(agg, weak, eps)
    assert not _scale_test(zw)
    assert stats.kstest(zw, "laplace").pvalue < 1e-6


def test_guarantee_and_input_path():
    agg = _aggregate(delta=16)
    noisy = hierarchical_laplace(agg, epsilon=2.0, w=20, rng=0, noise="float")
    g = noisy.guarantee()
    assert g.kind == "ε-DP" and g.delta == 0.0 and g.epsilon == pytest.approx(2.0, rel=1e-15) and g.epsilon <= 2.0
    assert "add/remove one user" in g.neighbouring and g.sensitivity == 1.0 and g.norm == "l1"
    np.testing.assert_allclose(noisy.scales, [1.0 / e for e in noisy.budget.epsilons], rtol=1e-12)
    with pytest.raises(InvalidParameterError, match="UserAggregate"):
        hierarchical_laplace(np.ones((16, 16)), epsilon=1.0)


def test_default_gamma_minimises_footnote_5_error_term():
    # Oracle: numerical minimisation of Z·Σ_i (2γ)^-i → 1/((1−γ)(1−0.5/γ)) (Ghazi et al., footnote 5) over γ ∈ (½, 1).
    from scipy import optimize

    res = optimize.minimize_scalar(lambda g: 1.0 / ((1.0 - g) * (1.0 - 0.5 / g)), bounds=(0.51, 0.99),
                                   method="bounded", options={"xatol": 1e-10})
    assert res.x == pytest.approx(2**-0.5, abs=1e-6)
    # and the finite-ℓ version of the term with the measured-level normaliser converges to it
    g, q, ell = 2**-0.5, 2, 60
    z = sum(g ** (i - q) for i in range(q, ell + 1))
    term = z * sum((2 * g) ** -i for i in range(ell - q))
    assert term == pytest.approx(1.0 / ((1 - g) * (1 - 0.5 / g)), rel=1e-6)


# ----------------------------------------------------------------------------- noise="secure" (exact discrete Laplace)
def test_secure_level_noise_is_laplace_at_its_epsilon_and_halved_scale_fails():
    # Seeded statistical oracle as above, on a small pyramid (Δ = 32: levels 2..5, 1 360 exact draws).
    agg = _aggregate(delta=32)
    eps = 1.0
    honest = hierarchical_laplace(agg, epsilon=eps, rng=7, noise="secure", simulation=True)
    z = _standardised_noise(agg, honest, eps)
    assert z.size == sum(4**i for i in range(2, 6))
    assert _scale_test(z)
    assert stats.kstest(z, "laplace").pvalue > 1e-3
    # The noise is an exact integer number of 2^-36 grid steps on every cell.
    exact = pyramid_levels(agg.fixed, start_level=honest.start_level)
    for lev, ex in zip(honest.levels, exact, strict=True):
        steps = lev * 2.0**36
        assert np.array_equal(steps, np.rint(steps)) and np.any(steps != ex)
    # Halving the scale (the noise an ε twice as large would get) is caught.
    weak = hierarchical_laplace(agg, epsilon=2.0 * eps, rng=7, noise="secure", simulation=True)
    zw = _standardised_noise(agg, weak, eps)
    assert not _scale_test(zw)
    assert stats.kstest(zw, "laplace").pvalue < 1e-6


def test_secure_scales_never_below_one_over_epsilon_i_and_budget_sums_to_epsilon():
    agg = _aggregate(delta=16)
    noisy = hierarchical_laplace(agg, epsilon=2.0, rng=0, noise="secure", simulation=True)
    budget = noisy.budget
    assert budget == level_budget(2.0, depth=agg.depth, w=20)  # the same ε_i as the float release
    total = math.fsum(budget.epsilons)
    assert total <= 2.0 and total == pytest.approx(2.0, rel=1e-15)
    # b_i = (2^36 + 1)/(2^36 ε_i): never less noise than 1/ε_i, and within 2^-36 of it.
    for b, e in zip(noisy.scales, budget.epsilons, strict=True):
        assert b >= 1.0 / e and b == pytest.approx(1.0 / e, rel=1e-10)
    g = noisy.guarantee()
    assert g.kind == "ε-DP" and g.epsilon == total and g.delta == 0.0 and g.sensitivity == 1.0
    assert "exact discrete Laplace" in g.mechanism


def test_secure_noise_is_reproducible_from_a_seed_and_fresh_without_one():
    agg = _aggregate(delta=16)
    a = hierarchical_laplace(agg, epsilon=1.0, rng=5, noise="secure", simulation=True)
    b = hierarchical_laplace(agg, epsilon=1.0, rng=np.random.default_rng(5), noise="secure", simulation=True)
    c = hierarchical_laplace(agg, epsilon=1.0, rng=6, noise="secure", simulation=True)
    for x, y in zip(a.levels, b.levels, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.levels[-1], c.levels[-1])
    # rng=None draws from the OS CSPRNG: two releases differ (probability of equality ~ 0).
    d = hierarchical_laplace(agg, epsilon=1.0, noise="secure")
    e = hierarchical_laplace(agg, epsilon=1.0, noise="secure")
    assert not np.array_equal(d.levels[-1], e.levels[-1])


def test_float_noise_is_an_explicit_opt_in_and_unknown_noise_is_refused():
    agg = _aggregate(delta=16)
    a = hierarchical_laplace(agg, epsilon=1.0, rng=3, noise="float")
    b = hierarchical_laplace(agg, epsilon=1.0, rng=np.random.default_rng(3), noise="float")
    for x, y in zip(a.levels, b.levels, strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.noise == "float" and "exact" not in a.guarantee().mechanism
    assert "idealised real-valued noise" in a.guarantee().mechanism
    with pytest.raises(InvalidParameterError, match="noise"):
        hierarchical_laplace(agg, epsilon=1.0, noise="exact")


def test_level_budgets_never_sum_above_epsilon_exactly() -> None:
    """Regression (issue 28, defect 8): the float level budgets summed (exactly) above ε in 10,649 of 24,360 cases.

    Oracle: the exact rational sum of the ε_i (fractions.Fraction), against ε, over a sweep of 6,000 configurations;
    the pyramid's stated ε (basic composition) is that sum rounded up, so also never below what is spent.
    """
    from fractions import Fraction

    rng = np.random.default_rng(28)
    over = 0
    for _ in range(6_000):
        eps = float(10 ** rng.uniform(-3, 2))
        depth, w = int(rng.integers(0, 13)), int(rng.integers(1, 300))
        gamma = float(rng.choice([2**-0.5, 0.5, 0.6, 0.9, 1.0, rng.uniform(0.05, 1.0)]))
        budget = level_budget(eps, depth=depth, w=w, gamma=gamma)
        exact = sum(map(Fraction, budget.epsilons))
        over += exact > Fraction(eps)
        assert exact >= Fraction(eps) * (1 - Fraction(1, 10**14))  # and nothing is left unspent beyond rounding
    assert over == 0


def test_stated_pyramid_epsilon_covers_the_exact_sum_of_level_budgets() -> None:
    """The guarantee's ε is ≥ Σ ε_i exactly (what basic composition spends) and ≤ the requested ε."""
    from fractions import Fraction

    agg = bound_users(np.arange(30), np.linspace(0.05, 0.95, 30), np.linspace(0.9, 0.1, 30), resolution=16)
    for eps in (0.1, 0.3, 1 / 3, 0.7, 1.1, 2.9, 7.0):
        for w in (1, 4, 20):
            pyramid = hierarchical_laplace(agg, epsilon=eps, w=w, noise="float", rng=0)
            stated = pyramid.guarantee().epsilon
            assert sum(map(Fraction, pyramid.budget.epsilons)) <= Fraction(stated) <= Fraction(eps)


def test_memoised_level_budget_is_keyed_on_every_input() -> None:
    """level_budget is memoised; every input must reach the key, and validation must run on every call.

    Oracle: the formula ε_i = γ^{|i−q|} ε / Z with q = ⌊log₂ √w⌋ from exact integer arithmetic and the exact
    rational sum of the ε_i (fractions.Fraction). Each configuration differs from the base in ONE input and is
    asked twice, interleaved with the others, so a key that dropped any input would return a stale budget.
    """
    from fractions import Fraction

    base = {"epsilon": 1.0, "depth": 6, "w": 20, "gamma": 2**-0.5, "start_level": None}
    variants = [base, {**base, "epsilon": 0.3}, {**base, "depth": 7}, {**base, "w": 64}, {**base, "gamma": 0.9},
                {**base, "start_level": 0}, {**base, "start_level": 0, "w": 64},
                {**base, "depth": np.int64(6), "w": np.int64(20)}]
    for config in variants + variants[::-1]:
        eps, depth, w, gamma, start = (config[k] for k in ("epsilon", "depth", "w", "gamma", "start_level"))
        budget = level_budget(eps, depth=depth, w=w, gamma=gamma, start_level=start)
        q = min(math.isqrt(w).bit_length() - 1, depth)
        levels = tuple(range(q if start is None else start, depth + 1))
        z = sum(gamma ** abs(i - q) for i in levels)
        assert (budget.levels, budget.q, budget.epsilon, budget.gamma) == (levels, q, eps, gamma)
        np.testing.assert_allclose(budget.epsilons, [gamma ** abs(i - q) * eps / z for i in levels], rtol=1e-12)
        assert sum(map(Fraction, budget.epsilons)) <= Fraction(eps)
    level_budget(1.0, depth=1, w=20)  # cached; the same call with a bool depth is still refused
    with pytest.raises(InvalidParameterError, match="depth"):
        level_budget(1.0, depth=True, w=20)


def test_coarsen_aggregate_is_the_exact_block_sum():
    rng = np.random.default_rng(11)
    agg = bound_users(rng.integers(0, 40, 300), rng.random(300), rng.random(300), resolution=32)
    for depth in range(6):
        coarse = coarsen_aggregate(agg, depth=depth)
        f = 32 >> depth
        # Oracle: brute-force Python integer sums over each f × f block.
        side = 1 << depth
        want = [[sum(int(v) for v in agg.fixed[i * f:(i + 1) * f, j * f:(j + 1) * f].ravel()) for j in range(side)]
                for i in range(side)]
        assert coarse.fixed.tolist() == want and coarse.resolution == 1 << depth
        assert (coarse.n_users, coarse.n_points) == (agg.n_users, agg.n_points)
    with pytest.raises(InvalidParameterError, match="depth"):
        coarsen_aggregate(agg, depth=6)


def test_noisy_user_count_is_laplace_at_the_stated_epsilon():
    agg = bound_users(np.arange(50), np.full(50, 0.5), np.full(50, 0.5), resolution=4)
    rng = np.random.default_rng(12)
    draws = np.array([noisy_user_count(agg, epsilon=0.5, noise="secure", rng=rng) for _ in range(4000)]) - 50
    # Laplace(b = 2): E|X| = 2, Var = 8. The same draws at scale 1/ε = 1 (a count at 2ε) would give E|X| = 1.
    assert abs(float(np.mean(np.abs(draws))) - 2.0) < 0.12 and abs(float(np.var(draws)) - 8.0) < 1.0
    assert np.all(draws * 2**36 == np.round(draws * 2**36))  # on the fixed-point grid: exact discrete Laplace

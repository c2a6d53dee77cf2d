"""Appendix D: EMD-norm projection LP and the dense algorithm."""

import math

import numpy as np
import pytest

from dpcloak.domains import Grid
from dpcloak.heatmaps.data import bound_users
from dpcloak.heatmaps.dense import dense_aggregate, emd_norm_projection
from dpcloak.metrics import emd


def test_projection_of_nonnegative_target_is_itself():
    rng = np.random.default_rng(0)
    t = rng.random((6, 6))
    np.testing.assert_allclose(emd_norm_projection(t), t, atol=1e-9)


def test_projection_moves_negative_mass_cheaply():
    # Oracle: target +1 at a cell and −0.5 at its neighbour: the cheapest feasible ŝ ≥ 0 cancels the −0.5
    # with 0.5 of the +1 over one step (cost 0.5/side), far cheaper than the α = 2 residual.
    t = np.zeros((4, 4))
    t[0, 0], t[0, 1] = 1.0, -0.5
    s = emd_norm_projection(t)
    assert s.sum() == pytest.approx(0.5) and s[0, 0] == pytest.approx(0.5)


def test_dense_release_shape_sum_and_error():
    rng = np.random.default_rng(1)
    n = 400
    agg = bound_users(np.arange(n), rng.random(n) * 0.5, rng.random(n) * 0.5, resolution=32)
    rel = dense_aggregate(agg, epsilon=1.0, population=400, rng=2, noise="float")
    assert rel.coarse_resolution == 16  # public n̂ = 400: round(log2 sqrt(400)) = round(4.32) = 4
    assert rel.estimate.shape == (32, 32) and rel.estimate.min() >= 0
    assert rel.estimate.sum() == pytest.approx(rel.coarse.sum())
    assert rel.guarantee().epsilon == 1.0 and rel.count_epsilon == 0.0
    err = emd(agg.normalized, rel.estimate, Grid((32, 32)))
    assert err < 0.1


def _users(n, seed=0):
    rng = np.random.default_rng(seed)
    return bound_users(np.arange(n), rng.random(n), rng.random(n), resolution=16)


def test_coarse_grid_does_not_single_out_127_vs_128_users():
    # Defect 1 (issue 12): the coarse grid used to be round(log2 √(εn)) of the exact n, so 127 and 128 users gave
    # Δ* = 8 and 16 in every run. Oracle: the definition of ε-DP, P[A | D] ≤ e^ε P[A | D'] for the event
    # A = {Δ* = 16} and its complement, both directions, with a sampling tolerance of 0.1 over 300 seeded runs
    # (standard error ≤ 0.03). Neighbours: D' is D with one user removed.
    rng = np.random.default_rng(0)
    x, y = rng.random(128), rng.random(128)
    big = bound_users(np.arange(128), x, y, resolution=16)
    small = bound_users(np.arange(127), x[:127], y[:127], resolution=16)
    eps = 1.0
    runs = 300

    def p_fine(agg):
        return np.mean([dense_aggregate(agg, epsilon=eps, rng=s, noise="float").coarse_resolution == 16
                        for s in range(runs)])

    p_big, p_small = p_fine(big), p_fine(small)
    bound = math.exp(eps)
    for a, b in ((p_big, p_small), (p_small, p_big), (1 - p_big, 1 - p_small), (1 - p_small, 1 - p_big)):
        assert a <= bound * b + 0.1, (p_big, p_small)


def test_public_population_fixes_the_grid_whatever_the_data():
    # With a public estimate n̂ the grid is a function of public input only: identical for neighbours, in every run.
    # Oracle: √(ε n̂) = √(0.5 · 512) = 16 = 2^4, so Δ* = 16 for both data sets.
    for n in (127, 128, 3):
        assert {dense_aggregate(_users(n), epsilon=0.5, population=512, rng=s, noise="float").coarse_resolution
                for s in range(5)} == {16}


@pytest.mark.parametrize(("n", "share"), [(36, 0.1), (30, 0.1), (36, 0.5)])
def test_noisy_count_grid_follows_the_laplace_law(n, share):
    # Without a public estimate, Δ* is a function of the noisy count n + Lap(1/ε_c), ε_c = share·ε, with the cells
    # at ε − ε_c. Oracle (closed form of the Laplace CDF): at Δ = 8, Δ* = 8 iff 0.5·log2(ε_cells·ñ) ≥ 2.5, i.e.
    # ñ ≥ t = 32/ε_cells, so P[Δ* = 8] = 1 − ½ exp(−(n − t) ε_c) for n ≥ t, else ½ exp(−(t − n) ε_c).
    eps = 1.0
    rng = np.random.default_rng(7)
    agg = bound_users(np.arange(n), rng.random(n), rng.random(n), resolution=8)
    eps_c = share * eps
    t = 32.0 / (eps - eps_c)
    exact = 1 - 0.5 * math.exp(-(n - t) * eps_c) if n >= t else 0.5 * math.exp(-(t - n) * eps_c)
    runs = 600
    rel = [dense_aggregate(agg, epsilon=eps, count_share=share, rng=s, noise="float") for s in range(runs)]
    freq = np.mean([r.coarse_resolution == 8 for r in rel])
    assert abs(freq - exact) <= 4.5 * math.sqrt(exact * (1 - exact) / runs), (freq, exact)
    g = rel[0].guarantee()
    assert rel[0].count_epsilon + rel[0].cell_epsilon <= eps and g.epsilon == eps and "noisy user count" in g.mechanism


def test_count_and_cell_budgets_never_sum_above_epsilon_exactly():
    """Regression (issue 28, defect 8): ε_count + ε_cells summed (exactly) above ε in 7,244 of 20,000 splits.

    Oracle: fractions.Fraction sums of the two budgets the release used, against the requested ε.
    """
    from fractions import Fraction

    from dpcloak.privacy.accounting import split_epsilon

    rng = np.random.default_rng(28)
    agg = bound_users([0, 1, 2, 3], [0.1, 0.6, 0.9, 0.4], [0.1, 0.6, 0.9, 0.2], resolution=4)
    for _ in range(100):
        eps, share = float(10 ** rng.uniform(-2, 1.5)), float(rng.uniform(0.01, 0.99))
        release = dense_aggregate(agg, epsilon=eps, count_share=share, rng=0, simulation=True)
        assert Fraction(release.count_epsilon) + Fraction(release.cell_epsilon) <= Fraction(eps)
        assert release.count_epsilon == pytest.approx(share * eps, rel=1e-12)
    over = 0
    for _ in range(5_000):  # the same split without the release around it
        eps, share = float(10 ** rng.uniform(-3, 2)), float(rng.uniform(0.0, 1.0))
        parts = split_epsilon(eps, [Fraction(share), 1 - Fraction(share)])
        over += sum(map(Fraction, parts)) > Fraction(eps)
        assert sum(map(Fraction, parts)) >= Fraction(eps) * (1 - Fraction(1, 10**15))
    assert over == 0

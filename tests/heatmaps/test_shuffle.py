"""Appendix F shuffle-model simulation: exact secret sharing, discrete-Laplace noise, r formula."""

import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import shuffle
from dpcloak.heatmaps.aggregate import level_budget
from dpcloak.heatmaps.reconstruct import reconstruct
from dpcloak.heatmaps.shuffle import shuffle_messages, shuffle_pyramid


def _points(seed=0, n=60, delta=16):
    rng = np.random.default_rng(seed)
    users = rng.integers(0, n, 5 * n)
    return users, rng.random(users.size) ** 2, rng.random(users.size)


def _rounded_level_sums(users, x, y, delta, level, b):
    """Oracle: Σ_j ⌊B (P_level p_j)⌋ computed user by user with plain Python loops."""
    side = 2**level
    total = np.zeros((side, side), dtype=np.int64)
    for u in np.unique(users):
        mine = users == u
        c = mine.sum()
        hist = np.zeros((side, side))
        for xi, yi in zip(x[mine], y[mine], strict=True):
            hist[int(yi * side), int(xi * side)] += 1
        total += np.floor(b * hist / c + 1e-9).astype(np.int64)
    return total


def test_messages_formula():
    # Oracle: the App. F expression evaluated directly.
    eps, delta, n, m, q = 5.0, 1e-5, 50, 1000, 4 * 256 * 50
    direct = math.ceil((2 * math.log(math.exp(eps) + 1) + 2 * math.log(m / delta) + math.log(q)) / math.log(n) + 1)
    assert shuffle_messages(epsilon=eps, delta=delta, n_users=n, n_coordinates=m, modulus=q) == direct
    with pytest.raises(InvalidParameterError):
        shuffle_messages(epsilon=1.0, delta=1e-5, n_users=1, n_coordinates=10, modulus=10)


def test_secret_sharing_is_exact_without_noise(monkeypatch):
    # With the users' noise switched off, shares + shuffling + modular decoding must return Σ_j ⌊B y^j⌋ exactly.
    monkeypatch.setattr(shuffle, "_polya_difference", lambda gen, r, alpha, shape: np.zeros(shape, dtype=np.int64))
    users, x, y = _points()
    rel = shuffle_pyramid(users, x, y, epsilon=1.0, delta=1e-6, resolution=16, scale_factor=64, rng=1)
    assert rel.messages_per_user_coordinate >= 2
    for lev_vals, i in zip(rel.pyramid.levels, rel.pyramid.budget.levels, strict=True):
        np.testing.assert_array_equal(lev_vals * 64, _rounded_level_sums(users, x, y, 16, i, 64))


def test_summed_noise_is_discrete_laplace():
    # Oracle: Σ of n differences of Pólya(1/n, α) is DLap(α): P(0) = (1−α)/(1+α), Var = 2α/(1−α)².
    users, x, y = _points(seed=2, n=40, delta=32)
    b = 4
    rel = shuffle_pyramid(users, x, y, epsilon=1.0, delta=1e-6, resolution=32, scale_factor=b, rng=3)
    i = rel.pyramid.budget.levels[-1]
    noise = (rel.pyramid.levels[-1] * b).astype(np.int64) - _rounded_level_sums(users, x, y, 32, i, b)
    alpha = rel.alphas[-1]
    assert alpha == pytest.approx(math.exp(-level_budget(1.0, depth=5, w=20).epsilons[-1] / b))
    var = 2 * alpha / (1 - alpha) ** 2
    n = noise.size
    assert abs(noise.mean()) < 4 * math.sqrt(var / n)
    assert abs(np.mean(noise == 0) - (1 - alpha) / (1 + alpha)) < 4 * math.sqrt(0.25 / n)
    assert abs(noise.var() / var - 1) < 0.15


def test_reconstruct_on_shuffle_release_and_guarantee():
    users, x, y = _points(seed=4)
    rel = shuffle_pyramid(users, x, y, epsilon=5.0, delta=1e-5, resolution=16, rng=0)
    rec = reconstruct(rel.pyramid, w=20)
    assert rec.estimate.min() >= 0 and rec.estimate.sum() > 0
    g = rel.guarantee()
    assert g.kind == "(ε, δ)-DP" and g.delta == 1e-5 and g.epsilon == 5.0 and "shuffle" in g.neighbouring
    assert rel.bits_per_user == rel.messages_per_user_coordinate * sum(4**i for i in rel.pyramid.budget.levels) \
        * math.ceil(math.log2(sum(4**i for i in rel.pyramid.budget.levels) * rel.modulus))

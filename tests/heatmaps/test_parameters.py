"""The parameter rule (issues 16, 32): its formula, its caps, coarsening, and the noisy count's exact budget share."""

import math
from fractions import Fraction

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import private_heatmap
from dpcloak.heatmaps.parameters import pyramid_parameters


def _by_hand(epsilon, population, resolution):
    """Oracle: the rule of the module docstring in plain floating point, independently of the module."""
    ell = resolution.bit_length() - 1
    s = epsilon * max(population, 1.0)
    depth = min(ell, max(0, round(math.log(s, 4)))) if s >= 16 else 0
    w = min(4**depth, 4096, 10 * round(max(50.0, min(4096.0, 80.0 * (s / 1000) ** 0.6)) / 10))
    start = min(max(q for q in range(12) if 4**q <= w), depth)
    return w, start, depth


@pytest.mark.parametrize(
    ("epsilon", "population", "resolution", "w", "start", "depth"),
    [
        (1.0, 200, 256, 50, 2, 4),  # log₄ 200 = 3.82 → L = 4 (16 × 16); 80·0.2^0.6 = 30.5 → floor 50
        (2.0, 200, 256, 50, 2, 4),  # log₄ 400 = 4.32 → 4
        (5.0, 200, 256, 80, 3, 5),  # ε n̂ = 1000: 80; log₄ 1000 = 4.98 → 5
        (10.0, 200, 256, 120, 3, 5),  # 80·2^0.6 = 121.3 → 120; log₄ 2000 = 5.48 → 5
        (5.0, 1000, 256, 210, 3, 6),  # 80·5^0.6 = 210.1 → 210; log₄ 5000 = 6.14 → 6
        (0.2, 200, 256, 50, 2, 3),  # ε n̂ = 40: L = round(2.66) = 3, an 8 × 8 map; w ≤ 64
        (0.1, 100, 256, 1, 0, 0),  # ε n̂ = 10 < 16: the uniform map (L = 0, w = 1)
        (0.1, 160, 256, 16, 2, 2),  # ε n̂ = 16: L = round(2) = 2, w capped at 4² = 16 cells
        (0.1, 10, 256, 1, 0, 0),  # ε n̂ = 1: the uniform map
        (1000.0, 1036, 256, 4096, 6, 8),  # 80·1036^0.6 = 5157 → capped at 4096 (LP size)
        (1000.0, 1036, 16, 256, 4, 4),  # capped at 4^ℓ = 256 cells
        (1e6, 1e6, 1024, 4096, 6, 10),  # capped at 4096
    ],
)
def test_rule_values_worked_by_hand(epsilon, population, resolution, w, start, depth):
    p = pyramid_parameters(epsilon=epsilon, resolution=resolution, population=population)
    assert (p.w, p.start_level, p.depth) == (w, start, depth) == _by_hand(epsilon, population, resolution)
    assert p.gamma == 2**-0.5 and "public" in p.rule and f"L = {depth}" in p.rule
    assert 4**p.start_level <= p.w and (p.start_level == p.depth or p.w < 4 ** (p.start_level + 1))


def test_rule_reads_public_inputs_only():
    # Neighbouring data sets (127 vs 128 users) get the same w: it depends on ε, Δ and the public n̂ only.
    rng = np.random.default_rng(0)
    x, y = rng.random(128), rng.random(128)
    a = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32, population=5000)
    b = private_heatmap(np.arange(127), x[:127], y[:127], epsilon=2.0, resolution=32, population=5000)
    assert a.parameters["w"] == b.parameters["w"] == 320  # 80·(10⁴/1000)^0.6 = 318.5 → 320
    assert a.parameters["count_epsilon"] == 0.0 and a.parameters["noisy_population"] is None
    assert a.public_summary() == b.public_summary()
    given = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32, w=7, population=5000)
    assert given.parameters["w"] == 7 and given.parameters["depth"] == 5 and "given" in given.parameters["w_rule"]


def test_default_spends_a_stated_exact_share_on_a_noisy_count():
    rng = np.random.default_rng(1)
    x, y = rng.random(400), rng.random(400)
    for eps in (0.2, 1.0, 0.3, 5.0):
        res = private_heatmap(np.arange(400), x, y, epsilon=eps, resolution=64)  # exact noise, OS CSPRNG
        p = res.parameters
        # Oracle: exact rationals. The count's ε is the largest double ≤ ε/10; parts compose to ≤ ε.
        c = Fraction(p["count_epsilon"])
        assert c <= Fraction(eps) / 10 < Fraction(math.nextafter(p["count_epsilon"], math.inf))
        assert c + sum(map(Fraction, p["level_epsilons"])) <= Fraction(eps)
        assert res.guarantee().epsilon == eps and "noisy user count" in res.guarantee().mechanism
        assert p["count_share"] == "1/10" and "noisy n̂" in p["w_rule"]
        # w and the levels are the rule's at the released noisy count and the ε left for the map.
        eps_map = float(Fraction(eps) - c)
        # n̂ is the released noisy count lowered by one noise scale 1/ε_count.
        n_hat = p["noisy_population"] - 1 / p["count_epsilon"]
        assert (p["w"], p["levels"][0], p["depth"]) == _by_hand(eps_map, n_hat, 64)
        assert f"lower noisy n̂ = {max(n_hat, 1.0):g}" in p["w_rule"]
        assert p["levels"][-1] == p["depth"] and "noisy_population" in res.public_summary()


def test_default_noisy_count_has_the_stated_scale():
    # Float noise with a seed: n̂ − n is Laplace(10/ε); its mean |.| is the scale. A count spending all
    # of ε (scale 1/ε, the weakened version) would be 10 times too tight.
    users = np.arange(300)
    xy = np.random.default_rng(2).random((2, 300))
    dev = [private_heatmap(users, *xy, epsilon=2.0, resolution=16, noise="float", rng=s).parameters["noisy_population"]
           - 300 for s in range(400)]
    mad = float(np.mean(np.abs(dev)))
    assert 5.0 * 0.85 < mad < 5.0 * 1.15 and abs(float(np.mean(dev))) < 5.0 * 0.25


def test_low_signal_coarsens_to_blocks_and_to_uniform():
    rng = np.random.default_rng(3)
    x, y = 0.1 * rng.random(200), 0.1 * rng.random(200)  # all in one corner
    res = private_heatmap(np.arange(200), x, y, epsilon=1.0, resolution=64, population=200)  # L = 4
    assert res.parameters["depth"] == 4 and res.parameters["levels"][-1] == 4
    blocks = res.aggregate.reshape(16, 4, 16, 4)
    assert np.allclose(blocks, blocks[:, :1, :, :1])  # constant on each 4 × 4 block
    assert not np.allclose(res.aggregate, 1 / 64**2)  # but not the uniform map
    assert np.allclose(sum(layer for _, layer in res.layers), res.aggregate)
    assert all(b % 4 == 0 for b, _ in res.layers)
    tiny = private_heatmap(np.arange(200), x, y, epsilon=0.004, resolution=64, population=200)  # ε n̂ = 0.8: L = 0
    assert tiny.parameters["depth"] == 0 and np.allclose(tiny.aggregate, 1 / 64**2)
    full = private_heatmap(np.arange(200), x, y, epsilon=1.0, resolution=64, population=200, w=50)
    assert full.parameters["depth"] == 6 and not np.allclose(full.aggregate.reshape(16, 4, 16, 4),
                                                               full.aggregate.reshape(16, 4, 16, 4)[:, :1, :, :1])


def test_rule_is_monotone_and_on_tens():
    # Oracle: the formula in floating point, independently of the module's constants.
    ws = []
    for s in np.geomspace(50, 1e5, 300):
        w = pyramid_parameters(epsilon=s / 100, resolution=1024, population=100).w
        assert w % 10 == 0 and abs(w - max(50.0, 80.0 * (s / 1000) ** 0.6)) <= 5.0 + 1e-9
        ws.append(w)
    assert ws == sorted(ws)


def test_rule_refuses_bad_inputs():
    with pytest.raises(InvalidParameterError, match="population"):
        pyramid_parameters(epsilon=1.0, resolution=64, population=0.0)
    with pytest.raises(InvalidParameterError, match="power of two"):
        pyramid_parameters(epsilon=1.0, resolution=100, population=10.0)

"""The public rule for w (issue 16): its formula, its caps, and that it reads public inputs only."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import private_heatmap
from dpcloak.heatmaps.parameters import PAPER_W, pyramid_parameters


@pytest.mark.parametrize(
    ("epsilon", "population", "resolution", "w", "start"),
    [
        (1.0, 200, 256, 50, 2),  # 50·√(200/250) = 44.7 → floor 50; 4² ≤ 50 < 4³
        (2.0, 200, 256, 70, 3),  # 50·√1.6 = 63.2; 2·log₂(1.265) = 0.68 → k = 1: 50·√2 = 70.7 → 70
        (5.0, 1000, 256, 200, 3),  # 50·√20 = 223.6; 2·log₂(4.47) = 4.32 → k = 4: 200
        (0.1, 200, 256, 400, 4),  # ε n̂ = 20 < 50: low-signal branch, start at the 16 × 16 level
        (0.1, 200, 4, 16, 2),  # low-signal branch capped at 4^ℓ = 16 cells
        (1000.0, 1036, 256, 3200, 5),  # 50·√4144 = 3218.7; 2·log₂(64.4) = 12.02 → k = 12: 3200
        (1000.0, 1036, 16, 256, 4),  # capped at 4^ℓ = 256 cells
        (1e6, 1e6, 1024, 4096, 6),  # capped at 4096 (LP size)
    ],
)
def test_rule_values_worked_by_hand(epsilon, population, resolution, w, start):
    p = pyramid_parameters(epsilon=epsilon, resolution=resolution, population=population)
    assert (p.w, p.start_level) == (w, start) and p.gamma == 2**-0.5 and "public" in p.rule
    assert 4**p.start_level <= p.w < 4 ** (p.start_level + 1)


def test_rule_reads_public_inputs_only():
    # Neighbouring data sets (127 vs 128 users) get the same w: it depends on ε, Δ and the public n̂ only.
    rng = np.random.default_rng(0)
    x, y = rng.random(128), rng.random(128)
    a = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32, population=5000)
    b = private_heatmap(np.arange(127), x[:127], y[:127], epsilon=2.0, resolution=32, population=5000)
    assert a.parameters["w"] == b.parameters["w"] == 280  # 50·√(10⁴/250) = 316; 2·log₂(6.32) = 5.3 → 282.8 → 280
    assert a.public_summary() == b.public_summary()
    plain = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32)
    assert plain.parameters["w"] == PAPER_W and "no public population" in plain.parameters["w_rule"]
    given = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32, w=7, population=5000)
    assert given.parameters["w"] == 7


def test_ladder_is_nearest_in_log_scale():
    from dpcloak.heatmaps.parameters import ladder

    steps = [round(50 * 2 ** (k / 2) / 10) * 10 for k in range(16)]
    assert steps[:8] == [50, 70, 100, 140, 200, 280, 400, 570]
    rng = np.random.default_rng(1)
    for w in 50 * np.exp(rng.uniform(0, 4, 200)):
        exact = [50 * 2 ** (k / 2) for k in range(16)]  # oracle: nearest unrounded step by |log ratio|
        k = int(np.argmin([abs(np.log(w / e)) for e in exact]))
        assert ladder(w) == steps[k]


def test_rule_refuses_bad_inputs():
    with pytest.raises(InvalidParameterError, match="population"):
        pyramid_parameters(epsilon=1.0, resolution=64, population=0.0)
    with pytest.raises(InvalidParameterError, match="power of two"):
        pyramid_parameters(epsilon=1.0, resolution=100, population=10.0)

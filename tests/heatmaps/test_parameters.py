"""The public rule for w (issue 16): its formula, its caps, and that it reads public inputs only."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import private_heatmap
from dpcloak.heatmaps.parameters import PAPER_W, pyramid_parameters


@pytest.mark.parametrize(
    ("epsilon", "population", "resolution", "w", "start"),
    [
        (1.0, 200, 256, 50, 2),  # 50·√(200/2000) = 15.8 → floor 50; 4² ≤ 50 < 4³
        (5.0, 1000, 256, 79, 3),  # 50·√2.5 = 79.06
        (1000.0, 1036, 256, 1138, 5),  # 50·√518 = 1137.98; 4⁵ ≤ 1138 < 4⁶
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
    assert a.parameters["w"] == b.parameters["w"] == 112  # 50·√(2·5000/2000) = 111.8
    assert a.public_summary() == b.public_summary()
    plain = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32)
    assert plain.parameters["w"] == PAPER_W and "no public population" in plain.parameters["w_rule"]
    given = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32, w=7, population=5000)
    assert given.parameters["w"] == 7


def test_rule_refuses_bad_inputs():
    with pytest.raises(InvalidParameterError, match="population"):
        pyramid_parameters(epsilon=1.0, resolution=64, population=0.0)
    with pytest.raises(InvalidParameterError, match="power of two"):
        pyramid_parameters(epsilon=1.0, resolution=100, population=10.0)

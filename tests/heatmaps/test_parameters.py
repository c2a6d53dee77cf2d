"""The public rule for w (issue 16): its formula, its caps, and that it reads public inputs only."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import private_heatmap
from dpcloak.heatmaps.parameters import PAPER_W, pyramid_parameters


@pytest.mark.parametrize(
    ("epsilon", "population", "resolution", "w", "start"),
    [
        (1.0, 200, 256, 50, 2),  # 80·0.2^0.6 = 30.5 → floor 50; 4² ≤ 50 < 4³
        (2.0, 200, 256, 50, 2),  # 80·0.4^0.6 = 46.2 → floor 50
        (5.0, 200, 256, 80, 3),  # ε n̂ = 1000: 80
        (10.0, 200, 256, 120, 3),  # 80·2^0.6 = 121.3 → 120
        (5.0, 1000, 256, 210, 3),  # 80·5^0.6 = 210.1 → 210
        (0.1, 200, 256, 400, 4),  # ε n̂ = 20 < 50: low-signal branch, start at the 16 × 16 level
        (0.1, 200, 4, 16, 2),  # low-signal branch capped at 4^ℓ = 16 cells
        (1000.0, 1036, 256, 4096, 6),  # 80·1036^0.6 = 5157 → capped at 4096 (LP size)
        (1000.0, 1036, 16, 256, 4),  # capped at 4^ℓ = 256 cells
        (1e6, 1e6, 1024, 4096, 6),  # capped at 4096
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
    assert a.parameters["w"] == b.parameters["w"] == 320  # 80·(10⁴/1000)^0.6 = 318.5 → 320
    assert a.public_summary() == b.public_summary()
    plain = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32)
    assert plain.parameters["w"] == PAPER_W and "no public population" in plain.parameters["w_rule"]
    given = private_heatmap(np.arange(128), x, y, epsilon=2.0, resolution=32, w=7, population=5000)
    assert given.parameters["w"] == 7


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

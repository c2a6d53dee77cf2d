"""Scoring helper: the §4 metrics on identical and on disjoint heatmaps (values fixed by the definitions)."""

import math

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.evaluate import score_heatmap


def test_identical_maps_score_perfectly():
    rng = np.random.default_rng(0)
    a = rng.random((16, 16))
    s = score_heatmap(a, a * 3.0, sigma=0.05)  # scale does not matter: every metric normalises
    assert s.sim == pytest.approx(1.0) and s.cc == pytest.approx(1.0)
    assert s.kl == pytest.approx(0.0, abs=1e-9) and s.emd == pytest.approx(0.0, abs=1e-12)


def test_point_masses_emd_is_l1_distance():
    # Oracle: EMD between two unit point masses is their ℓ1 distance ((3 + 4)/16 here), on aggregates.
    a = np.zeros((16, 16))
    b = np.zeros((16, 16))
    a[2, 1] = 1.0
    b[6, 4] = 1.0
    s = score_heatmap(a, b, sigma=0.0)
    assert s.emd == pytest.approx(7 / 16)
    assert s.sim == pytest.approx(0.0)
    with pytest.raises(InvalidParameterError):
        score_heatmap(a, b, emd_on="pixels")


def test_cc_of_a_constant_map_is_undefined_not_an_error():
    # The default release is the uniform map at low signal; --evaluate must still score it.
    true = np.zeros((8, 8))
    true[2, 3] = 1.0
    s = score_heatmap(true, np.full((8, 8), 1 / 64))
    assert math.isnan(s.cc) and s.emd > 0 and 0 < s.sim < 1
    assert not math.isnan(score_heatmap(true, true + 1e-3).cc)  # a non-constant map still gets its CC

"""[LXD+19] baseline: Laplace(1/ε) on every cell, negatives zeroed, top-t % thresholding."""

import math

import numpy as np
import pytest
from scipy import stats

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.baselines import laplace_cells
from dpcloak.heatmaps.data import bound_users


def _agg(delta=64):
    rng = np.random.default_rng(0)
    return bound_users(rng.integers(0, 100, 500), rng.random(500), rng.random(500), resolution=delta)


def test_noise_scale_and_clipping():
    # Oracle: where s = 0 the released value is max(ν, 0), ν ~ Lap(1/ε): P(release = 0) = 1/2 and the
    # positive part is Exp(1/ε) (seeded statistical test, KS).
    agg = _agg(128)
    eps = 2.0
    rel = laplace_cells(agg, epsilon=eps, rng=1, noise="float")
    zero = agg.fixed == 0
    vals = rel.estimate[zero]
    frac0 = np.mean(vals == 0.0)
    assert abs(frac0 - 0.5) < 4 * 0.5 / math.sqrt(vals.size)
    assert stats.kstest(vals[vals > 0] * eps, "expon").pvalue > 1e-3
    assert rel.estimate.min() >= 0.0 and rel.kept == 128 * 128
    # Under-noised (ε claimed 2, noise for ε = 2.4) is rejected by the same test.
    weak = laplace_cells(agg, epsilon=1.2 * eps, rng=1, noise="float").estimate[zero]
    assert stats.kstest(weak[weak > 0] * eps, "expon").pvalue < 1e-6


def test_top_percent_keeps_largest_cells():
    agg = _agg(64)
    full = laplace_cells(agg, epsilon=1.0, rng=5, noise="float")
    top = laplace_cells(agg, epsilon=1.0, top_percent=1.0, rng=5, noise="float")
    k = math.ceil(0.01 * 64 * 64)
    assert top.kept == k and np.count_nonzero(top.estimate) <= k
    kept = top.estimate > 0
    assert full.estimate[~kept].max() <= full.estimate[kept].min()
    np.testing.assert_array_equal(top.estimate[kept], full.estimate[kept])


def test_guarantee_and_bad_input():
    rel = laplace_cells(_agg(), epsilon=0.5, rng=0, noise="float")
    g = rel.guarantee()
    assert g.epsilon == 0.5 and g.delta == 0.0 and g.sensitivity == 1.0
    with pytest.raises(InvalidParameterError):
        laplace_cells(_agg(), epsilon=0.0)
    with pytest.raises(InvalidParameterError):
        laplace_cells(_agg(), epsilon=1.0, top_percent=0.0)
    with pytest.raises(InvalidParameterError):
        laplace_cells(np.ones((4, 4)), epsilon=1.0)


def test_secure_noise_scale_and_clipping_and_halved_scale_fails():
    # Same oracle as test_noise_scale_and_clipping for the exact discrete Laplace on the 2^-36 grid: where
    # s = 0 the release is max(ν, 0), P(0) = 1/2, positive part Exp(1/ε) (seeded, Δ = 32: 1 024 exact draws).
    agg = _agg(32)
    eps = 2.0
    zero = agg.fixed == 0

    def consistent(rel):
        vals = rel.estimate[zero]
        pos = vals[vals > 0] * eps
        return (abs(np.mean(vals == 0.0) - 0.5) < 4 * 0.5 / math.sqrt(vals.size)
                and abs(pos.mean() - 1.0) < 4.0 / math.sqrt(pos.size) and stats.kstest(pos, "expon").pvalue > 1e-3)

    rel = laplace_cells(agg, epsilon=eps, rng=1, noise="secure", simulation=True)
    assert consistent(rel) and rel.noise == "secure" and rel.scale >= 1.0 / eps
    assert rel.guarantee().epsilon == eps and "exact discrete Laplace" in rel.guarantee().mechanism
    again = laplace_cells(agg, epsilon=eps, rng=1, noise="secure", simulation=True)
    np.testing.assert_array_equal(rel.estimate, again.estimate)
    half = laplace_cells(agg, epsilon=2.0 * eps, rng=1, noise="secure", simulation=True)  # half the scale
    assert not consistent(half)
    with pytest.raises(InvalidParameterError, match="noise"):
        laplace_cells(agg, epsilon=eps, noise="double")

"""Appendix D: EMD-norm projection LP and the dense algorithm."""

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
    rel = dense_aggregate(agg, epsilon=1.0, rng=2)
    assert rel.coarse_resolution == 16  # round(log2 sqrt(400)) = 4
    assert rel.estimate.shape == (32, 32) and rel.estimate.min() >= 0
    assert rel.estimate.sum() == pytest.approx(rel.coarse.sum())
    assert rel.guarantee().epsilon == 1.0
    err = emd(agg.normalized, rel.estimate, Grid((32, 32)))
    assert err < 0.1

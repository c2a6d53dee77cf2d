"""Synthetic Gaussian-mixture data (Ghazi et al., Appendix E.3)."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.data import bound_users
from dpcloak.heatmaps.synthetic import gaussian_mixture_points


def _sparsity(ps, delta=256):
    return np.count_nonzero(bound_users(ps.users, ps.x, ps.y, resolution=delta).fixed) / delta**2


def test_shape_box_and_reproducibility():
    a = gaussian_mixture_points(n_users=50, points_per_user=7, rng=1)
    b = gaussian_mixture_points(n_users=50, points_per_user=7, rng=1)
    assert a.users.size == 350 and a.n_users == 50
    assert a.x.min() >= 0 and a.x.max() < 1 and a.y.min() >= 0 and a.y.max() < 1
    np.testing.assert_array_equal(a.x, b.x)
    sub = a.sample_users(10, rng=0)
    assert sub.n_users == 10 and sub.users.size == 70


def test_sparsity_grows_with_components_points_and_spread():
    base = dict(n_users=200, rng=0)
    s_few = _sparsity(gaussian_mixture_points(n_components=5, points_per_user=5, **base))
    s_many = _sparsity(gaussian_mixture_points(n_components=80, points_per_user=5, **base))
    s_more_pts = _sparsity(gaussian_mixture_points(n_components=5, points_per_user=50, **base))
    s_wide = _sparsity(gaussian_mixture_points(n_components=5, points_per_user=5, spread=(0.05, 0.1), **base))
    assert s_few < s_many and s_few < s_more_pts and s_few < s_wide


def test_bad_parameters():
    with pytest.raises(InvalidParameterError):
        gaussian_mixture_points(n_users=0)
    with pytest.raises(InvalidParameterError):
        gaussian_mixture_points(spread=(0.1, 0.01))

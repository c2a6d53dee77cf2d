"""Pyramidal transform vs a dense construction from Definition 3.1 of Ghazi et al.."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.pyramid import children, pyramid_adjoint, pyramid_levels, pyramid_transform


def _dense_pyramid(delta):
    """Oracle: P = [P_0; 2^-1 P_1; …; 2^-ℓ P_ℓ] with P_i(c, p) = 1 iff point p lies in cell c (Def. 3.1)."""
    ell = delta.bit_length() - 1
    pts = [(r / delta, c / delta) for r in range(delta) for c in range(delta)]  # (y, x) of G_Δ, row-major
    rows = []
    for i in range(ell + 1):
        side = 2**i
        for cr in range(side):
            for cc in range(side):
                lo_y, lo_x = cr / side, cc / side
                rows.append([2.0**-i * (lo_y <= py < lo_y + 1 / side and lo_x <= px < lo_x + 1 / side)
                             for (py, px) in pts])
    return np.array(rows)


@pytest.mark.parametrize("delta", [1, 2, 4, 8])
def test_matches_dense_definition(delta):
    rng = np.random.default_rng(delta)
    s = rng.random((delta, delta))
    P = _dense_pyramid(delta)
    np.testing.assert_allclose(pyramid_transform(s), P @ s.ravel(), atol=1e-12)
    y = rng.standard_normal(P.shape[0])
    np.testing.assert_allclose(pyramid_adjoint(y, resolution=delta).ravel(), P.T @ y, atol=1e-12)


def test_integer_levels_exact_and_start_level():
    s = np.arange(64, dtype=np.int64).reshape(8, 8)
    levels = pyramid_levels(s, start_level=1)
    assert [lev.shape for lev in levels] == [(2, 2), (4, 4), (8, 8)]
    assert levels[0].dtype == np.int64 and levels[0].sum() == s.sum()
    assert levels[0][0, 0] == s[:4, :4].sum()


def test_children_are_the_four_subcells():
    kids = children(np.array([0, 3]), 2)
    np.testing.assert_array_equal(kids, [0, 1, 4, 5, 10, 11, 14, 15])


def test_rejects_non_square_or_bad_size():
    with pytest.raises(InvalidParameterError):
        pyramid_levels(np.zeros((4, 2)))
    with pytest.raises(InvalidParameterError, match="power of two"):
        pyramid_levels(np.zeros((6, 6)))

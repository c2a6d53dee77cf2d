"""The building blocks release with the exact secure sampler by default, like the front ends (privacy hardening).

Both sides, for ``hierarchical_laplace``, ``laplace_cells`` and ``dense_aggregate``: called without
``noise`` they draw exact discrete Laplace on the 2^-36 grid from the OS CSPRNG (every released value is
an integer number of grid steps away from the exact sums, the guarantee names the exact mechanism), and
a seed is refused; ``noise="float"`` is accepted only when asked for, and its guarantee says it holds for
idealised real-valued noise only (its values are off the grid).
"""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.aggregate import hierarchical_laplace
from dpcloak.heatmaps.baselines import laplace_cells
from dpcloak.heatmaps.data import FIXED_POINT_BITS, bound_users
from dpcloak.heatmaps.dense import dense_aggregate
from dpcloak.heatmaps.pyramid import pyramid_levels

GRID = 2.0**FIXED_POINT_BITS


def _agg():
    rng = np.random.default_rng(0)
    return bound_users(rng.integers(0, 30, 300), rng.random(300), rng.random(300), resolution=16)


def _pyramid(agg, **kw):
    rel = hierarchical_laplace(agg, epsilon=1.0, **kw)
    return rel, rel.levels, pyramid_levels(agg.fixed, start_level=rel.start_level)


def _cells(agg, **kw):
    rel = laplace_cells(agg, epsilon=1.0, **kw)
    # negatives are zeroed: compare the positive cells only (a zeroed cell is on the grid too)
    return rel, (rel.estimate,), (agg.fixed,)


def _dense(agg, **kw):
    rel = dense_aggregate(agg, epsilon=1.0, population=30, **kw)
    return rel, None, None


BLOCKS = {"hierarchical_laplace": _pyramid, "laplace_cells": _cells, "dense_aggregate": _dense}


def _on_grid(values, exact):
    for v, ex in zip(values, exact, strict=True):
        steps = np.asarray(v) * GRID
        if not np.array_equal(steps, np.rint(steps)) or not np.any(steps != ex):
            return False
    return True


@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_default_is_exact_secure_noise_from_the_os(block):
    agg = _agg()
    rel, values, exact = BLOCKS[block](agg)
    assert rel.noise == "secure"
    g = rel.guarantee()
    assert "exact discrete Laplace" in g.mechanism and "idealised" not in g.mechanism
    assert g.epsilon <= 1.0 and g.delta == 0.0
    if values is not None:
        assert _on_grid(values, exact)
    # fresh OS randomness: a second default release differs
    again, values2, _ = BLOCKS[block](agg)
    first = values[-1] if values is not None else rel.estimate
    second = values2[-1] if values2 is not None else again.estimate
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("block", sorted(BLOCKS))
@pytest.mark.parametrize("rng", [0, np.random.default_rng(0)])
def test_default_refuses_a_seed_unless_simulation(block, rng):
    agg = _agg()
    with pytest.raises(InvalidParameterError, match="rng must be None"):
        BLOCKS[block](agg, rng=rng)
    a, _, _ = BLOCKS[block](agg, rng=5, simulation=True)
    b, _, _ = BLOCKS[block](agg, rng=5, simulation=True)
    assert a.noise == "secure"
    ea = a.levels[-1] if block == "hierarchical_laplace" else a.estimate
    eb = b.levels[-1] if block == "hierarchical_laplace" else b.estimate
    np.testing.assert_array_equal(ea, eb)


@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_float_is_an_opt_in_labelled_idealised(block):
    agg = _agg()
    rel, values, exact = BLOCKS[block](agg, noise="float", rng=1)
    assert rel.noise == "float"
    assert "idealised real-valued noise" in rel.guarantee().mechanism
    if values is not None:
        assert not _on_grid(values, exact)  # IEEE-double noise is not on the 2^-36 grid

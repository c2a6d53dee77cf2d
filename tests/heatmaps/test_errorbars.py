"""The EMD error bar of a pyramid release (dpcloak.heatmaps.errorbars)."""

from fractions import Fraction

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import bound_users, gaussian_mixture_points, heatmap_from_aggregate, private_heatmap
from dpcloak.heatmaps.errorbars import _rerelease, concentrated_world, emd_error_bar
from dpcloak.metrics import heatmap as hm


def _release(seed: int, *, resolution: int = 16, epsilon: float = 1.0, draws: int = 0):
    rng = np.random.default_rng(seed)
    pts = gaussian_mixture_points(n_users=300, n_components=4, points_per_user=3, spread=(0.002, 0.02), rng=rng)
    agg = bound_users(pts.users, pts.x, pts.y, resolution=resolution)
    res = heatmap_from_aggregate(agg, epsilon=epsilon, rng=rng, noise="float", error_bar_draws=draws)
    return agg, res


def test_the_rank_is_the_smallest_order_statistic_at_the_level_in_exact_fractions():
    # Oracle: Fraction arithmetic: rank/(B+1) >= level > (rank-1)/(B+1).
    _, res = _release(0, resolution=8)
    for draws in (9, 10, 19):
        rank = emd_error_bar(res, draws=draws, rng=1).rank
        assert Fraction(rank, draws + 1) >= Fraction(9, 10) > Fraction(rank - 1, draws + 1)
    with pytest.raises(InvalidParameterError, match="at least 9"):
        emd_error_bar(res, draws=8)
    with pytest.raises(InvalidParameterError, match="level"):
        emd_error_bar(res, draws=19, level=1.0)


def test_the_bound_is_that_order_statistic_of_the_replayed_bootstrap():
    # Oracle: the bootstrap replayed step by step from the same seed (world, re-release, EMD), sorted by numpy.
    _, res = _release(1)
    bar = emd_error_bar(res, draws=9, rng=5)
    gen = np.random.default_rng(5)
    eps = res.epsilon - res.parameters["count_epsilon"]
    values = []
    for _ in range(9):
        world = concentrated_world(res.layers, resolution=16, rng=gen)
        values.append(hm.emd(world, _rerelease(world, res.details["estimated_users"], res.parameters, eps, gen),
                             extent=(1.0, 1.0)))
    assert bar.bound == sorted(values)[8] and bar.median == float(np.median(values))
    assert bar.bound > sorted(values)[7]  # not a lower order statistic


def test_concentrated_world_keeps_each_block_mass_on_one_pixel_inside_it():
    # Oracle: per-block sums by reshaping; the pixel chosen is uniform over the block (every one seen).
    rng = np.random.default_rng(2)
    coarse = rng.random((4, 4))
    layer = np.kron(coarse, np.full((4, 4), 1 / 16))
    seen = np.zeros((4, 4), dtype=int)
    for _ in range(200):
        world = concentrated_world(((4, layer),), resolution=16, rng=rng)
        np.testing.assert_allclose(world.reshape(4, 4, 4, 4).sum(axis=(1, 3)), coarse, rtol=1e-12)
        blocks = world.reshape(4, 4, 4, 4).transpose(0, 2, 1, 3).reshape(16, 16)
        assert np.all(np.count_nonzero(blocks, axis=1) == 1)
        seen += (world.reshape(4, 4, 4, 4)[0, :, 0, :] > 0)
    assert np.all(seen > 0)


def test_the_bar_covers_about_ninety_percent_in_a_bounded_simulation():
    # 20 releases at Δ = 16, B = 9 (the largest of 9 is the 90 % value): under Binomial(20, 0.9),
    # P(hits <= 14) = 0.011, so >= 15 is what a 90 % bar gives. The weakened bar (the median of the same
    # re-releases, nominal 50 %: P(hits >= 15) = 0.021 under Binomial(20, 0.5)) must stay below 15.
    hit = hit_median = 0
    bars, errs = [], []
    for seed in range(20):
        agg, res = _release(100 + seed, draws=9)
        err = hm.emd(agg.normalized, res.aggregate, extent=(1.0, 1.0))
        hit += err <= res.error_bar.bound
        hit_median += err <= res.error_bar.median
        bars.append(res.error_bar.bound)
        errs.append(err)
    assert hit >= 15, hit
    assert hit_median < 15, hit_median
    assert np.mean(bars) < 3.0 * np.mean(errs), (np.mean(bars), np.mean(errs))  # not uselessly wide


def test_the_bar_spends_no_privacy_and_is_published_with_the_release():
    # The release itself is unchanged by asking for the bar (same seed, same aggregate and guarantee).
    pts = gaussian_mixture_points(n_users=100, n_components=2, points_per_user=2, rng=3)
    kwargs = dict(epsilon=1.0, resolution=8, rng=7, noise="float", population=100)
    plain = private_heatmap(pts.users, pts.x, pts.y, **kwargs)
    with_bar = private_heatmap(pts.users, pts.x, pts.y, error_bar_draws=9, **kwargs)
    np.testing.assert_array_equal(plain.aggregate, with_bar.aggregate)
    assert plain.guarantee() == with_bar.guarantee() and plain.error_bar is None
    summary = with_bar.public_summary()
    assert summary["emd_90_unit_square"] == with_bar.error_bar.bound and summary["emd_90_draws"] == 9
    assert "no privacy budget" in summary["emd_90_method"] and summary["emd_90_m"] is None
    assert with_bar.error_bar.users == 100.0  # the public population sizes the world
    with pytest.raises(InvalidParameterError, match="pyramid"):
        heatmap_from_aggregate(bound_users([0, 1], [0.1, 0.6], [0.1, 0.6], resolution=4), method="laplace",
                               epsilon=1.0, error_bar_draws=9)

"""Release paths (issue 12, defects 2 and 8): secure noise by default, no seed on a release, DP output + public
parameters only."""

import math

import numpy as np
import pytest

import dpcloak.heatmaps.aggregate as aggregate_module
import dpcloak.heatmaps.baselines as baselines_module
from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import (
    bound_users,
    gaussian_mixture_points,
    heatmap_from_aggregate,
    heatmap_from_frame,
    laplace_baseline,
    private_heatmap,
)
from dpcloak.heatmaps.data import FIXED_POINT_BITS


def _points(n_users=80, seed=0):
    ps = gaussian_mixture_points(n_users=n_users, n_components=6, points_per_user=4, rng=seed)
    return ps.users, ps.x, ps.y


def _spy(monkeypatch, module):
    """Record what every laplace_level call of ``module`` was asked to draw, and what it returned."""
    calls = []
    real = aggregate_module.laplace_level

    def spy(fixed, *, epsilon, noise, rng):
        out = real(fixed, epsilon=epsilon, noise=noise, rng=rng)
        calls.append((fixed.copy(), noise, rng, out.values))
        return out

    monkeypatch.setattr(module, "laplace_level", spy)
    return calls


@pytest.mark.parametrize(("front_end", "module"), [(private_heatmap, aggregate_module),
                                                   (laplace_baseline, baselines_module)])
def test_default_release_noise_lies_on_the_exact_grid_and_comes_from_the_os_csprng(monkeypatch, front_end, module):
    # Defect 2 (Mironov 2012): with float noise a released value can be impossible under the neighbour. Oracle
    # (independent of the sampler): if every released level value v is an exact multiple of the fixed-point unit
    # g = 2^-36, then v/g − S' is an integer for every neighbouring exact sum S' (also integer in units of g), and
    # the discrete Laplace law gives every integer positive probability: no output rules a neighbour out.
    calls = _spy(monkeypatch, module)
    users, x, y = _points()
    front_end(users, x, y, epsilon=1.0, resolution=32)
    assert calls
    unit = float(1 << FIXED_POINT_BITS)
    for fixed, noise, rng, values in calls:
        assert noise == "secure"
        assert not isinstance(rng, np.random.Generator)  # None: the OS CSPRNG, never a numpy PRNG
        scaled = values * unit
        assert np.all(np.abs(scaled) < 2.0**53)  # the product is exact, so the integrality check is exact
        np.testing.assert_array_equal(scaled, np.round(scaled))
        assert not np.array_equal(scaled, fixed)  # noise was added


def test_float_release_is_off_the_grid():
    # The weakened version fails the grid oracle above: float noise leaves values between grid points.
    users, x, y = _points()
    agg = bound_users(users, x, y, resolution=16)
    values = aggregate_module.laplace_level(agg.fixed, epsilon=1.0, noise="float", rng=0).values
    scaled = values * float(1 << FIXED_POINT_BITS)
    assert np.count_nonzero(scaled != np.round(scaled)) > 0.9 * scaled.size


def test_two_default_releases_draw_fresh_noise():
    users, x, y = _points()
    a = private_heatmap(users, x, y, epsilon=1.0, resolution=16)
    b = private_heatmap(users, x, y, epsilon=1.0, resolution=16)
    assert not np.array_equal(a.aggregate, b.aggregate)


@pytest.mark.parametrize("rng", [0, 12345, np.random.default_rng(0)])
def test_secure_release_refuses_a_seed_unless_simulation(rng):
    users, x, y = _points(n_users=20)
    agg = bound_users(users, x, y, resolution=8)
    calls = [
        lambda **k: private_heatmap(users, x, y, epsilon=1.0, resolution=8, **k),
        lambda **k: laplace_baseline(users, x, y, epsilon=1.0, resolution=8, **k),
        lambda **k: heatmap_from_aggregate(agg, epsilon=1.0, **k),
        lambda **k: heatmap_from_aggregate(agg, method="dense", epsilon=1.0, population=20, **k),
    ]
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"user": users, "x": x, "y": y})
    calls.append(lambda **k: heatmap_from_frame(frame, epsilon=1.0, resolution=8, **k))
    for call in calls:
        with pytest.raises(InvalidParameterError, match=r"rng must be None.*simulation=True"):
            call(rng=rng)
        assert call(rng=rng, simulation=True).aggregate.sum() == pytest.approx(1.0)
        assert call(rng=rng, noise="float").aggregate.sum() == pytest.approx(1.0)


def test_release_holds_dp_output_and_public_parameters_only():
    # Defect 8: nothing in the release may be a deterministic function of the exact data. Oracle: neighbouring data
    # sets (one user removed) released with the same simulated noise give identical public summaries and no field
    # of the result outside ``curator`` holds the exact counts.
    users, x, y = _points(n_users=127)
    keep = users != users[0]
    kw = {"epsilon": 1.0, "resolution": 32, "rng": 5, "simulation": True}
    a = private_heatmap(users, x, y, **kw)
    b = private_heatmap(users[keep], x[keep], y[keep], **kw)
    # The default's noisy user count (a DP output, sensitivity 1) is the only field that moves: by exactly 1
    # under the same noise; w and the levels chosen from it coincide here.
    sa, sb = a.public_summary(), b.public_summary()
    assert sa.pop("noisy_population") - sb.pop("noisy_population") == 1.0
    assert sa.pop("w_rule") != sb.pop("w_rule") and sa == sb
    assert (a.curator.n_users, b.curator.n_users) == (127, 126)
    for res in (a, b):
        public = {name for name in res.__dataclass_fields__ if name != "curator"}
        assert not {"n_users", "n_points", "timings"} & public
    assert "NOT private" in a.curator.label
    assert math.isclose(sum(a.parameters["level_epsilons"]) + a.parameters["count_epsilon"], 1.0)

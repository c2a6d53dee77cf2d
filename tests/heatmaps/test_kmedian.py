"""Private k-median via the private coreset (Ghazi et al., Appendix A)."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.kmedian import kmedian, kmedian_cost, private_coreset, private_kmedian


def _clusters(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.2, 0.2], [0.8, 0.3], [0.5, 0.8], [0.15, 0.7]])
    pts = centres[rng.integers(0, 4, n)] + rng.normal(0, 0.03, (n, 2))
    return np.clip(pts, 0, 0.999), centres


def test_nonprivate_kmedian_finds_planted_centres():
    pts, centres = _clusters()
    c = kmedian(pts, k=4, rng=1)
    # Oracle: the planted centres; each found centre is within 0.02 (ℓ1) of one of them.
    d = np.abs(c[:, None, :] - centres[None]).sum(-1).min(axis=1)
    assert d.max() < 0.02
    assert kmedian_cost(pts, c) <= kmedian_cost(pts, centres) * 1.01


def test_private_kmedian_close_to_nonprivate_and_coreset_property():
    pts, _ = _clusters()
    res = private_kmedian(pts, k=4, epsilon=1.0, resolution=256, rng=2, noise="float")
    opt = kmedian_cost(pts, kmedian(pts, k=4, rng=3))
    assert res.cost <= 1.15 * opt
    assert res.coreset.guarantee().epsilon <= 1.0
    # Coreset (Definition A.1): for random centre sets C, cost_C(ŝ) ≈ cost_C(X) (λ = 0.1 here, κ = 20).
    core = res.coreset
    assert core.points.shape[0] <= 20 * 4 * 8
    rng = np.random.default_rng(4)
    for _ in range(5):
        C = rng.random((4, 2))
        true, approx = kmedian_cost(pts, C), kmedian_cost(core.points, C, core.weights)
        assert abs(true - approx) <= 0.1 * true + 20.0


def test_bad_inputs():
    with pytest.raises(InvalidParameterError):
        private_coreset(np.ones((5, 3)), epsilon=1.0, resolution=16)
    with pytest.raises(InvalidParameterError):
        private_coreset(np.full((5, 2), 0.5), epsilon=0.0, resolution=16)
    with pytest.raises(InvalidParameterError):
        kmedian(np.full((5, 2), 0.5), k=6)


def test_private_coreset_releases_with_secure_noise_by_default():
    pts, _ = _clusters()
    core = private_coreset(pts, epsilon=1.0, resolution=64)
    assert "exact discrete" in core.guarantee().mechanism
    with pytest.raises(InvalidParameterError, match="rng must be None"):
        private_kmedian(pts, k=2, epsilon=1.0, resolution=64, rng=3)
    a = private_kmedian(pts, k=2, epsilon=1.0, resolution=64, rng=3, simulation=True)
    b = private_kmedian(pts, k=2, epsilon=1.0, resolution=64, rng=3, simulation=True)
    np.testing.assert_array_equal(a.centers, b.centers)

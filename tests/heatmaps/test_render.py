"""H^σ (seed 003 §2.3) by separable filtering vs the O(Δ⁴) double sum of the definition."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.render import plot_heatmaps, render


def _direct(p, sigma):
    """Oracle: H(x) = Σ_{x'} e^{-|x−x'|²/2σ²} p(x') / Z(x'), Z(x') = Σ_x e^{-|x−x'|²/2σ²}, points i/Δ."""
    d = p.shape[0]
    g = np.arange(d) / d
    yy, xx = np.meshgrid(g, g, indexing="ij")
    pts = np.stack([yy.ravel(), xx.ravel()], axis=1)
    k = np.exp(-((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1) / (2 * sigma**2))  # k[x, x']
    z = k.sum(axis=0)
    return (k @ (p.ravel() / z)).reshape(d, d)


@pytest.mark.parametrize(("delta", "sigma"), [(16, 0.05), (16, 0.2), (8, 0.01), (32, 0.03)])
def test_matches_definition(delta, sigma):
    rng = np.random.default_rng(delta)
    p = rng.random((delta, delta)) ** 4
    h = render(p, sigma=sigma)
    np.testing.assert_allclose(h, _direct(p, sigma), rtol=1e-7, atol=1e-12)
    assert h.sum() == pytest.approx(p.sum())


def test_zero_sigma_and_bad_input():
    p = np.eye(4)
    np.testing.assert_array_equal(render(p, sigma=0.0), p)
    with pytest.raises(InvalidParameterError):
        render(-p, sigma=0.1)
    with pytest.raises(InvalidParameterError):
        render(p, sigma=-1.0)


def test_plot_side_by_side(tmp_path):
    fig = plot_heatmaps({"true": np.eye(8), "private": np.ones((8, 8))}, sigma=0.05)
    assert len(fig.axes) == 2
    out = tmp_path / "h.png"
    fig.savefig(out)
    assert out.stat().st_size > 0
    with pytest.raises(InvalidParameterError):
        plot_heatmaps({})

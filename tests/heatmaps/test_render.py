"""H^σ (Ghazi et al. §2.3) by separable filtering vs the O(Δ⁴) double sum of the definition."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.render import plot_heatmaps, render, render_layers


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


def test_plot_shares_one_colour_scale_with_axes_and_colour_bar(tmp_path):
    from matplotlib.colors import PowerNorm

    from dpcloak.heatmaps.extent import Extent

    extent = Extent.metres_box(0.0, 0.0, 8000.0, 8000.0)
    hot, flat = np.zeros((8, 8)), np.full((8, 8), 1 / 64)
    hot[2, 3] = 1.0
    fig = plot_heatmaps({"true": hot, "private": flat}, extent=extent)
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 2 and len(fig.axes) == 3  # two maps and one colour bar
    norms = [ax.images[0].norm for ax in panels]
    assert all(isinstance(n, PowerNorm) for n in norms)
    # Oracle: one scale from 0 to the largest value over both panels, in share per km² (cells of 1 km²).
    assert {(n.vmin, n.vmax) for n in norms} == {(0.0, 1.0)}
    assert panels[0].get_xlabel() == "east (km)" and panels[0].images[0].get_extent() == [0.0, 8.0, 0.0, 8.0]
    out = tmp_path / "h.png"
    fig.savefig(out)
    assert out.stat().st_size > 0
    with pytest.raises(InvalidParameterError):
        plot_heatmaps({})
    with pytest.raises(InvalidParameterError, match="lon/lat extent"):
        plot_heatmaps({"a": flat}, extent=extent, units="lonlat")


def test_layered_rendering_hides_blocks_and_keeps_mass():
    # One 32 × 32 block of uniform mass at Δ = 256 (what RECONSTRUCT outputs for a left-out region). Oracle: the
    # plain H^σ keeps a sharp edge (the largest jump between neighbouring pixels sits on the block's border);
    # the layered rendering spreads the block at its own scale, so its largest jump is several times smaller.
    delta, block = 256, 32
    layer = np.zeros((delta, delta))
    layer[64:96, 128:160] = 1.0 / block**2
    sigma = 0.002
    plain = render(layer, sigma=sigma)
    smooth = render_layers([(block, layer)], sigma=sigma)
    assert smooth.sum() == pytest.approx(1.0) and plain.sum() == pytest.approx(1.0)
    jump = lambda a: max(np.abs(np.diff(a, axis=0)).max(), np.abs(np.diff(a, axis=1)).max())  # noqa: E731
    assert jump(smooth) < jump(plain) / 5
    # A layer of single cells (b = 1) is rendered exactly as H^σ of §2.3.
    np.testing.assert_array_equal(render_layers([(1, layer)], sigma=sigma), plain)

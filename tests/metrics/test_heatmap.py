"""Heatmap metrics (Ghazi et al., section 4) against independent implementations.

Oracles: SIM = 1 − total variation (Ghazi et al., Corollary B.5), ``numpy.corrcoef`` for CC,
``scipy.special.rel_entr`` for KL on strictly positive maps, POT's ``emd2`` with the L1 cost
between the points (i/Δ, j/Δ) of Ghazi et al.'s grid, and closed forms.
"""

import numpy as np
import ot
import pytest
from scipy.special import rel_entr

from dpcloak.errors import InvalidParameterError
from dpcloak.metrics import heatmap


def _maps(seed, shape=(8, 8)):
    rng = np.random.default_rng(seed)
    return rng.random(shape) ** 3, rng.random(shape) ** 3


def test_similarity_is_one_minus_total_variation():
    h, g = _maps(0)
    tv = 0.5 * np.abs(h / h.sum() - g / g.sum()).sum()
    assert heatmap.similarity(h, g) == pytest.approx(1.0 - tv, rel=1e-12)
    assert heatmap.similarity(h, 3 * h) == pytest.approx(1.0)
    a, b = np.zeros((2, 2)), np.zeros((2, 2))
    a[0, 0], b[1, 1] = 1.0, 1.0
    assert heatmap.similarity(a, b) == 0.0


def test_pearson_cc_matches_numpy():
    h, g = _maps(1)
    assert heatmap.pearson_cc(h, g) == pytest.approx(np.corrcoef(h.ravel(), g.ravel())[0, 1], rel=1e-12)
    assert heatmap.pearson_cc(h, 2 * h + 1) == pytest.approx(1.0)
    assert heatmap.pearson_cc(h, -h) == pytest.approx(-1.0)


def test_kl_matches_scipy_and_handles_empty_cells():
    h, g = _maps(2)
    ph, pg = h / h.sum(), g / g.sum()
    assert heatmap.kl_divergence(h, g) == pytest.approx(rel_entr(ph, pg).sum(), rel=1e-9)
    assert heatmap.kl_divergence(h, h) == pytest.approx(0.0, abs=1e-12)
    # an empty cell in the estimate is finite thanks to eps: log(eps + x/eps) per unit mass there
    a, b = np.array([[1.0, 1.0]]), np.array([[1.0, 0.0]])
    eps = heatmap.KL_EPS
    want = 0.5 * np.log(eps + 0.5 / (1.0 + eps)) + 0.5 * np.log(eps + 0.5 / eps)
    assert heatmap.kl_divergence(a, b) == pytest.approx(want, rel=1e-12)
    assert np.isfinite(heatmap.kl_divergence(a, b))


def test_emd_uses_seed003_unit_square_l1():
    """Oracle: POT with ‖x − y‖₁ between the points (i/Δ, j/Δ) of G_Δ (Ghazi et al., section 2.1)."""
    d = 8
    h, g = _maps(3, (d, d))
    i, j = np.meshgrid(np.arange(d), np.arange(d), indexing="ij")
    pts = np.stack([i.ravel(), j.ravel()], axis=1) / d
    cost = np.abs(pts[:, None, :] - pts[None, :, :]).sum(axis=2)
    want = ot.emd2(h.ravel() / h.sum(), g.ravel() / g.sum(), cost, numItermax=10**8)
    assert heatmap.emd(h, g) == pytest.approx(want, rel=1e-9)
    corner_a, corner_b = np.zeros((d, d)), np.zeros((d, d))
    corner_a[0, 0], corner_b[-1, -1] = 1.0, 1.0
    assert heatmap.emd(corner_a, corner_b) == pytest.approx(2 * (1 - 1 / d))


@pytest.mark.parametrize("fn", [heatmap.similarity, heatmap.pearson_cc, heatmap.kl_divergence, heatmap.emd])
def test_bad_input(fn):
    good = np.ones((3, 3))
    good[0, 0] = 2.0
    with pytest.raises(InvalidParameterError, match="2-D"):
        fn(np.ones(9), good)
    with pytest.raises(InvalidParameterError, match="same shape"):
        fn(good, np.ones((3, 4)))
    with pytest.raises(InvalidParameterError, match="finite"):
        fn(good, np.full((3, 3), np.nan))
    with pytest.raises(InvalidParameterError, match="empty"):
        fn(np.ones((0, 3)), np.ones((0, 3)))


@pytest.mark.parametrize("fn", [heatmap.similarity, heatmap.kl_divergence, heatmap.emd])
def test_mass_based_metrics_reject_negative_mass(fn):
    good = np.ones((2, 2))
    with pytest.raises(InvalidParameterError, match="non-negative"):
        fn(good, -good)


def test_an_empty_answer_scores_as_the_uniform_map_in_every_mass_based_metric():
    """The one rule for empty answers (metrics.distribution), so the heatmap and sensor flows agree.

    Oracles by hand on a 2 x 2 map: the uniform map vs itself has SIM 1, KL 0, EMD 0; vs a point mass in
    one corner SIM 1/4 and EMD = (1/4)(1/2) + (1/4)(1/2) + (1/4)(1) = 1/2 (cells 1/2 apart, L1)."""
    zero, uniform, corner = np.zeros((2, 2)), np.ones((2, 2)), np.array([[1.0, 0.0], [0.0, 0.0]])
    assert heatmap.similarity(uniform, zero) == pytest.approx(1.0)
    assert heatmap.kl_divergence(uniform, zero) == pytest.approx(0.0, abs=1e-12)
    assert heatmap.emd(uniform, zero) == pytest.approx(0.0, abs=1e-12)
    assert heatmap.similarity(corner, zero) == pytest.approx(0.25)
    assert heatmap.emd(corner, zero) == pytest.approx(0.5, rel=1e-12)
    with pytest.raises(InvalidParameterError, match="constant"):
        heatmap.pearson_cc(corner, zero)


def test_cc_rejects_constant_map():
    with pytest.raises(InvalidParameterError, match="constant"):
        heatmap.pearson_cc(np.ones((3, 3)), np.eye(3))
